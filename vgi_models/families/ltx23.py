"""LTX-2.3 image-to-video through diffusers' `LTX2ImageToVideoPipeline`.

LTX-2.3 is the LTX-2 architecture with gated attention, cross-attention modulation, perturbed
attention (for STG), per-modality text-connector projections and a vocoder with bandwidth
extension. It always generates audio with the video; the audio stream runs on a deep copy of the
scheduler (which the checkpoint recorder does not record). The audio is dropped unless the
generation setting `keep_audio` asks for it in `video.mp4` (`final_audio`).

The video scheduler steps only latent frames 1..N, unpacked ([B, C, N, H, W], normalised); frame
0 is the clean image latent. The family's latent form is the full de-normalised video latent
[B, C, 1 + N, H, W] that `output_type="latent"` returns.

With `generation.stage_2` the model runs LTX-2.3's two-stage recipe: the recorded first stage at
`height` x `width`, then (`refine`) diffusers' `LTX2LatentUpsamplePipeline` doubles the latent's
height and width with the latent upsampler stored beside the weights (`stage_2.upsampler`, a
subfolder of the source), and the same pipeline re-noises it to `stage_2.sigmas[0]` and denoises
it along those sigmas, as given (no dynamic shift), with the stage's guidance for video and
audio alike. The video and audio come from the second stage.

LoRA: one file for `transformer`; DiffSynth's LTX-2 DiT keeps the original module names.
"""

from __future__ import annotations

from vgi_models.families.base import Family, to_frames

LORA_TARGETS = ("to_q", "to_k", "to_v", "to_out.0")  # what DiffSynth's LTX-2 scripts train


class LTX23(Family):
    name = "ltx23"
    loop_tensors = ("latents", "audio_latents")  # the audio stream is denoised alongside
    lora_files = {
        "diffsynth": {"transformer": "lora.safetensors"},
        "diffusers": {"transformer": "pytorch_lora_weights.safetensors"},
    }

    def load(self, source: str, generation: dict, dtype):
        from diffusers import LTX2ImageToVideoPipeline
        from diffusers.pipelines.ltx2.latent_upsampler import LTX2LatentUpsamplerModel

        pipe = LTX2ImageToVideoPipeline.from_pretrained(source, dtype=dtype, local_files_only=True)
        if "stage_2" in generation:
            pipe.latent_upsampler = LTX2LatentUpsamplerModel.from_pretrained(
                source,
                subfolder=generation["stage_2"]["upsampler"],
                dtype=dtype,
                local_files_only=True,
            ).eval()
        return self.finish(pipe, generation)

    def finish(self, pipe, generation: dict):
        """STG perturbs the listed blocks; an index past the last block would silently do
        nothing."""
        layers = pipe.transformer.config.num_layers
        if not all(0 <= block < layers for block in generation["stg_blocks"]):
            raise ValueError(
                f"stg_blocks {generation['stg_blocks']} outside blocks 0..{layers - 1}"
            )
        return pipe

    def call_kwargs(self, generation: dict) -> dict:
        """Audio guidance keeps the pipeline's LTX-2.3 defaults (CFG 7, STG 1, modality 3,
        rescale 0.7)."""
        keys = ("height", "width", "num_frames", "num_inference_steps", "guidance_scale")
        keys += ("stg_scale", "modality_scale", "guidance_rescale")
        kwargs = {k: generation[k] for k in keys}
        kwargs["spatio_temporal_guidance_blocks"] = generation["stg_blocks"]
        kwargs["frame_rate"] = float(generation["fps"])
        kwargs["negative_prompt"] = generation.get("negative_prompt", "")
        if "max_sequence_length" in generation:
            kwargs["max_sequence_length"] = generation["max_sequence_length"]
        return kwargs

    def refine(self, pipe, output, generation: dict, **call):
        """The second stage of the two-stage recipe on a first stage's latent output (`call`: its
        image, prompt and generator); the output itself for a one-stage model."""
        stage = generation.get("stage_2")
        if stage is None:
            return output
        from diffusers import FlowMatchEulerDiscreteScheduler, LTX2LatentUpsamplePipeline

        device = pipe._execution_device
        upsampler = pipe.latent_upsampler.to(device)
        scale = upsampler.config.rational_spatial_scale
        upsampled = LTX2LatentUpsamplePipeline(vae=pipe.vae, latent_upsampler=upsampler)(
            latents=output.frames.to(device),
            height=generation["height"],
            width=generation["width"],
            num_frames=generation["num_frames"],
            output_type="latent",
        ).frames
        keys = ("guidance_scale", "stg_scale", "modality_scale", "guidance_rescale")
        guidance = {k: stage[k] for k in keys}
        kwargs = (
            self.call_kwargs(generation) | guidance | {f"audio_{k}": v for k, v in guidance.items()}
        )
        kwargs |= {"height": round(generation["height"] * scale)}
        kwargs |= {"width": round(generation["width"] * scale)}
        del kwargs["num_inference_steps"]
        first = pipe.scheduler
        pipe.scheduler = FlowMatchEulerDiscreteScheduler.from_config(
            first.config, use_dynamic_shifting=False, shift_terminal=None
        )
        try:
            return pipe(
                **call,
                **kwargs,
                latents=upsampled,
                audio_latents=output.audio,
                sigmas=stage["sigmas"],
                noise_scale=stage["sigmas"][0],
                output_type="latent",
            )
        finally:
            pipe.scheduler = first

    def final_audio(self, pipe, output):
        """The waveform [channels, samples] and its sampling rate, decoded as the pipeline does."""
        import torch

        latents = output.audio.to(device=pipe._execution_device, dtype=pipe.audio_vae.dtype)
        with torch.no_grad():
            waveform = pipe.vocoder(pipe.audio_vae.decode(latents, return_dict=False)[0])
        return waveform[0].float().cpu(), pipe.vocoder.config.output_sampling_rate

    def checkpoint_latents(self, pipe, state, final):
        """A recorded state (normalised frames 1..N) with the clean image latent put back as
        frame 0."""
        import torch

        vae = pipe.vae
        state = pipe._denormalize_latents(
            state, vae.latents_mean, vae.latents_std, vae.config.scaling_factor
        )
        return torch.cat([final[:, :, :1].to(state.device), state], dim=2)

    def decode(self, pipe, latents):
        """De-normalised latents -> uint8 frames [F, H, W, 3], as the pipeline decodes them.

        The pipeline itself casts the normalised latents to the text encoder's dtype before
        de-normalising; in float32 both orders give the same bits, in bfloat16 they can differ by
        one rounding step of the VAE input."""
        import torch

        vae = pipe.vae
        latents = latents.to(device=pipe._execution_device, dtype=vae.dtype)
        timestep = None
        if vae.config.timestep_conditioning:
            timestep = torch.zeros(latents.shape[0], device=latents.device, dtype=latents.dtype)
        with torch.no_grad():
            video = vae.decode(latents, timestep, return_dict=False)[0]
        return to_frames(pipe, video)

    def lora_modules(self, model) -> list[tuple[str, str]]:
        import torch

        return [
            (name, name)
            for name, module in model.named_modules()
            if isinstance(module, torch.nn.Linear)
            and name.startswith("transformer_blocks.")
            and name.endswith(tuple(f".{target}" for target in LORA_TARGETS))
        ]
