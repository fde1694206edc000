"""What every paid request shares (the video and image API branches, neither imported
here): its errors and the reading of an HTTP error answer, the retry policy, the SDK
clients, the signed-link download, the settings checks, an input image as sent, the one
ledger, and the words and command of an unsure attempt."""
