"""One module per pipeline family: real-weight loaders and latent decoders; beside each, a
`<family>_tiny` module with its tiny randomly initialised builder (`source: tiny`).

Each family module (`wan`, `hunyuan15`, `ltx23`) provides:
- `load(source, generation, dtype)` -> pipeline;
- `call_kwargs(generation)` -> the pipeline's keyword arguments;
- `final_latents(pipe, output)` -> the latent of a `output_type="latent"` call, on any device;
- `refine(pipe, output, generation, **call)` -> the output after what follows the recorded
  denoising (LTX-2.3's second stage; the output itself for one-stage families);
- `checkpoint_latents(pipe, state, final)` -> a recorded scheduler state in the form of
  `final`, the latent of the recorded (first) stage;
- `decode(pipe, latents)` -> uint8 frames [F, H, W, 3], exactly as the pipeline decodes;
- `LOOP_TENSORS`: what its denoising loop steps (`vgi_models.resume` saves them).

Each tiny module (`wan_tiny`, `hunyuan15_tiny`, `ltx23_tiny`) provides
`build_tiny(family, generation)` -> a pipeline of the family's architecture from config alone,
finished by the family module's own checks and settings, as `load` finishes real weights. A tiny
module imports its family module, never the reverse; `common` and `hunyuan15_attention` import
no family module.
"""
