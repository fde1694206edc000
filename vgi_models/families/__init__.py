"""One module per pipeline family: tiny builders, real-weight loaders and latent decoders.

Each family module provides:
- `build_tiny(family, generation)` and `load(source, generation, dtype)` -> pipeline;
- `call_kwargs(generation)` -> the pipeline's keyword arguments;
- `final_latents(pipe, output)` -> the latent of a `output_type="latent"` call, on any device;
- `checkpoint_latents(pipe, state, final)` -> a recorded scheduler state in that same form;
- `decode(pipe, latents)` -> uint8 frames [F, H, W, 3], exactly as the pipeline decodes.
"""
