"""One module per pipeline family: tiny builders, real-weight loaders and latent decoders.

Each family module provides:
- `build_tiny(family, generation)` and `load(source, generation, dtype)` -> pipeline;
- `call_kwargs(generation)` -> the pipeline's keyword arguments;
- `final_latents(pipe, output)` -> the latent of a `output_type="latent"` call, on any device;
- `refine(pipe, output, generation, **call)` -> the output after what follows the recorded
  denoising (LTX-2.3's second stage; the output itself for one-stage families);
- `checkpoint_latents(pipe, state, final)` -> a recorded scheduler state in the form of
  `final`, the latent of the recorded (first) stage;
- `decode(pipe, latents)` -> uint8 frames [F, H, W, 3], exactly as the pipeline decodes.
"""
