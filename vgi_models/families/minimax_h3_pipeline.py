"""MiniMax-H3's modular pipeline (`MiniMaxH3ModularPipeline`, image-to-video: its `fl2va` workflow
with a first keyframe) behind the surface `vgi_models` drives a `DiffusionPipeline` through.

The pipeline's own blocks run unchanged, up to and including the one that unpacks the denoised
rows into latents; its decode blocks are left to the family (`minimax_h3`), which runs them on
the final latents and on every checkpoint alike. Its denoise loop is the pipeline's (the forward
pass and the two schedulers' steps are its blocks) with what a `DiffusionPipeline` loop has and a
modular one lacks: its tensors taken through `prepare_<name>` as the loop starts, a step skipped
while `interrupt` is set, and the step-end callback (`vgi_models.resume` needs all three).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from diffusers.modular_pipelines.minimax_h3.denoise import MiniMaxH3DenoiseStep
from diffusers.utils import BaseOutput

WORKFLOW = "fl2va"  # an image-to-video request: the keyframe workflow of the `transformer` half
# The components, in the order a request calls them (model offload hands the device on in it).
OFFLOAD_ORDER = ("text_encoder", "transformer", "vae", "audio_vae")


@dataclass
class MiniMaxH3Output(BaseOutput):
    """The denoised latents: video [1, C, F, H, W] and audio [2, C, N], normalised, as the
    pipeline's decode blocks take them."""

    frames: torch.Tensor
    audio: torch.Tensor


class SteppedDenoise(MiniMaxH3DenoiseStep):
    """The pipeline's denoise loop over its own blocks, with `driver`'s hooks around each step."""

    def __init__(self, driver: MiniMaxH3ImageToVideo):
        self.driver = driver
        super().__init__()

    @torch.no_grad()
    def __call__(self, components, state):
        block, driver = self.get_block_state(state), self.driver
        block.latents = driver.prepare_latents(block.latents)
        block.audio_latents = driver.prepare_audio_latents(block.audio_latents)
        driver.num_timesteps = len(block.timesteps)
        for i, t in enumerate(block.timesteps):
            if driver.interrupt:
                continue
            components, block = self.loop_step(components, block, i=i, t=t)
            if driver.callback is not None:
                tensors = {name: getattr(block, name) for name in driver.callback_tensors}
                for name, value in driver.callback(driver, i, t, tensors).items():
                    setattr(block, name, value)
        self.set_block_state(state, block)
        return components, state


class MiniMaxH3ImageToVideo:
    """A `MiniMaxH3ModularPipeline` called as a `DiffusionPipeline` with `output_type="latent"`;
    its components and properties are read through (`pipe.scheduler`, `pipe.vae`, ...)."""

    _callback_tensor_inputs = ["latents", "audio_latents"]

    def __init__(self, modular):
        self.modular = modular
        self._interrupt = False
        self.callback, self.callback_tensors, self.num_timesteps = None, (), 0
        blocks = modular._blocks  # the instance it runs (`blocks` is a copy)
        core = blocks.sub_blocks["denoise"].sub_blocks[WORKFLOW]
        core.sub_blocks["denoise"] = SteppedDenoise(self)
        blocks.sub_blocks.pop("decode")

    def __getattr__(self, name):
        if name == "modular":  # not yet set
            raise AttributeError(name)
        return getattr(self.modular, name)

    @property
    def interrupt(self) -> bool:
        return self._interrupt

    def prepare_latents(self, latents):
        """The packed video rows (keyframe rows first) the loop starts from."""
        return latents

    def prepare_audio_latents(self, audio_latents):
        """The packed audio rows the loop starts from."""
        return audio_latents

    def to(self, device):
        self.modular.to(device)
        return self

    def enable_model_cpu_offload(self, device):
        """Each component on the CPU until called; calling one sends the one before it back
        (the conditioner leaves the device before the transformer comes)."""
        from accelerate import cpu_offload_with_hook

        hook = None
        for name in OFFLOAD_ORDER:
            _, hook = cpu_offload_with_hook(getattr(self, name), device, prev_module_hook=hook)

    def __call__(self, image, prompt, generator, height, width, num_frames, num_inference_steps,
                 output_type="latent", callback_on_step_end=None,
                 callback_on_step_end_tensor_inputs=("latents",)):  # fmt: skip
        if output_type != "latent":
            raise ValueError("output_type='latent' only: the family (minimax_h3) decodes")
        self.callback = callback_on_step_end
        self.callback_tensors = tuple(callback_on_step_end_tensor_inputs)
        state = self.modular(
            image=image,
            prompt=prompt,
            generator=generator,
            height=height,
            width=width,
            num_frames=num_frames,
            num_inference_steps=num_inference_steps,
        )
        return MiniMaxH3Output(frames=state.get("latents"), audio=state.get("audio_latents"))
