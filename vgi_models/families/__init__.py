"""One module per pipeline family: tiny builders, real-weight loaders and latent decoders."""
