"""Publishing a study: its videos, checkpoints, verdicts and labels as a Hugging Face dataset."""
