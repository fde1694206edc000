"""Commercial video models through their own SDKs (Veo: google-genai, Sora: openai):
settings, the providers, the operation kept outside the outputs, the cost ledger."""
