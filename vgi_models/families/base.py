"""The family protocol: what `vgi_models` asks of a diffusers pipeline family."""

from __future__ import annotations

import importlib


class PipelineFamily:
    """What every diffusers pipeline family has, a video family (`Family`) or an image one
    (`vgi_models.image_families`): how its pipeline is loaded, built tiny and called.

    A family is one module of its package with an instance in the package's map; its tiny
    randomly initialised builder lives beside it in `<module>_tiny`
    (`build_tiny(family, generation)`), imported only for `source: tiny`, so that real weights
    load without test-only code. A family module imports torch and diffusers inside its
    methods: the workflow reads a family's data (its LoRA files) while building the DAG.
    """

    name: str
    # Components that denoise: the attention backend is set on them; LoRA files go into them.
    denoisers: tuple[str, ...] = ("transformer",)

    def load(self, source: str, generation: dict, dtype):
        """The pipeline with real weights from a local directory (or the local hub cache)."""
        raise NotImplementedError

    def build_tiny(self, generation: dict):
        """A randomly initialised pipeline of the family's architecture, from config alone."""
        tiny = importlib.import_module(f"{type(self).__module__}_tiny")
        return tiny.build_tiny(self, generation)

    def call_kwargs(self, generation: dict) -> dict:
        """The pipeline's keyword arguments from the model's generation settings."""
        raise NotImplementedError

    def problems(self, source: str, generation: dict) -> list[str]:
        """Why an entry of the family cannot run, found before any job (`source`: `tiny` or
        the weights' folder); none by default: `finish` checks the built pipeline."""
        return []


class Family(PipelineFamily):
    """A video pipeline family: how its pipeline is built and called, and how its denoising
    trajectory becomes frames. The defaults fit a one-stage family whose latent output is
    what its `decode` takes and whose scheduler steps that whole latent. One module of
    `vgi_models.families` with an instance in `FAMILIES` (`PipelineFamily`).
    """

    # What its denoising loop steps, by the names of its step callback and `prepare_<name>`
    # (`vgi_models.resume` saves them).
    loop_tensors: tuple[str, ...] = ("latents",)
    # The pipeline's schedulers, by attribute: the first is recorded; `vgi_models.resume` saves all.
    schedulers: tuple[str, ...] = ("scheduler",)
    # The published LoRA files: format -> component -> default file name ({}: no LoRA).
    lora_files: dict[str, dict[str, str]] = {}

    def finish(self, pipe, generation: dict):
        """The family's checks and settings on a built pipeline, real or tiny (raises
        `ValueError` naming the setting it cannot honour)."""
        return pipe

    def final_latents(self, pipe, output):
        """The latent of an `output_type="latent"` call, in the form `decode` takes."""
        return output.frames

    def refine(self, pipe, output, generation: dict, **call):
        """The output after what follows the recorded denoising (nothing: one stage)."""
        return output

    def checkpoint_latents(self, pipe, state, final):
        """A recorded scheduler state in the form of `final`, the recorded stage's latent."""
        return state

    def decode(self, pipe, latents):
        """Latents -> uint8 frames [F, H, W, 3], exactly as the pipeline decodes them: by the
        first of the three decode paths of diffusers' video pipelines that the pipeline and its
        VAE have:
        - the pipeline's `decode_latents` (CogVideoX: frames-first latents, divided by the
          VAE's scaling_factor);
        - a VAE with per-channel `latents_mean` and `latents_std` (Wan's, also in SkyReels-V2):
          divided by 1/std, then the mean added, as those pipelines compute it;
        - otherwise division by the VAE's `scaling_factor` (HunyuanVideo's and HunyuanVideo-1.5's,
          also in SkyReels-V1);
        then the pipeline's video processor. A family whose pipeline decodes otherwise
        overrides it."""
        import torch

        vae = pipe.vae
        latents = latents.to(device=pipe._execution_device, dtype=vae.dtype)
        with torch.no_grad():
            if hasattr(pipe, "decode_latents"):
                return to_frames(pipe, pipe.decode_latents(latents))
            config = vae.config
            if getattr(config, "latents_mean", None) is not None:
                shape = (1, latents.shape[1], 1, 1, 1)
                mean = torch.tensor(config.latents_mean).view(shape).to(latents)
                inv_std = 1.0 / torch.tensor(config.latents_std).view(shape).to(latents)
                latents = latents / inv_std + mean
            else:
                latents = latents / config.scaling_factor
            return to_frames(pipe, vae.decode(latents, return_dict=False)[0])

    def final_audio(self, pipe, output):
        """The waveform [channels, samples] and its sampling rate (`keep_audio`)."""
        raise ValueError(f"family {self.name} makes no audio (generation.keep_audio)")

    def lora_modules(self, model) -> list[tuple[str, str]]:
        """(DiffSynth name, diffusers name) of every module of a denoiser that the published
        LoRAs train (a tiny LoRA is built on them)."""
        raise NotImplementedError

    def diffsynth_module_problem(self, module: str) -> str | None:
        """Why a DiffSynth LoRA key's module cannot be converted for this family (None: it can)."""
        return None


def to_frames(pipe, video):
    """A decoded video tensor -> uint8 frames [F, H, W, 3], via the pipeline's postprocessing."""
    import numpy as np

    frames = pipe.video_processor.postprocess_video(video, output_type="np")[0]
    return (frames * 255).astype(np.uint8)
