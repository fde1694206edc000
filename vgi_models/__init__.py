"""Image-to-video models for the VGI-Bench denoising study: registry, loaders, hooks, decoding."""
