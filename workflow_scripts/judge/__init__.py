"""The VLM judge: frame sampling, the cached VLM client, the scoring protocol."""
