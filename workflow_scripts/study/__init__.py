"""A study's size and spending: the plan before (`plan`), the progress during (`status`) and
the costs after a run (`costs`), all read from the run's documents (`documents`)."""
