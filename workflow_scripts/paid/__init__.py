"""What every paid request shares (the video and image API branches): the word of the user
that sends an unsure request once more, and how a job says so."""
