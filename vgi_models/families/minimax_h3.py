"""MiniMax-H3 image-to-video through diffusers' modular `MiniMaxH3ModularPipeline` (`fl2va`: the
input image as the first keyframe).

MiniMax-H3 denoises one packed sequence of text, keyframe, audio and video rows with one
guidance-distilled forward pass a step (no guidance scale, no negative prompt), and steps the
video and the audio rows with two `MiniMaxH3Scheduler`s (shift 12 and 3). The audio is always
generated and dropped unless `keep_audio` asks for it; the audio scheduler is not recorded.
The pipeline is modular only: `minimax_h3_pipeline` drives it as the other families' pipelines.

The scheduler steps the generated video rows, [rows, C x patch]; the family's latent form is the
unpacked, normalised latent [1, C, F, H, W] the pipeline's decode block takes, which `decode` runs.

`num_inference_steps` counts denoising steps, as for every family; the pipeline's own counts the
points of its sigma grid, the terminal 0 included: one more (`call_kwargs`).
"""

from __future__ import annotations

from vgi_models.families.base import Family


class MiniMaxH3(Family):
    name = "minimax_h3"
    loop_tensors = ("latents", "audio_latents")  # the packed rows of either modality
    schedulers = ("scheduler", "audio_scheduler")

    def load(self, source: str, generation: dict, dtype):
        from diffusers import ModularPipeline

        from vgi_models.families.minimax_h3_pipeline import WORKFLOW, MiniMaxH3ImageToVideo

        modular = ModularPipeline.from_pretrained(source, workflow=WORKFLOW, local_files_only=True)
        modular.load_components(workflow=WORKFLOW, dtype=dtype, local_files_only=True)
        return self.finish(MiniMaxH3ImageToVideo(modular), generation)

    def finish(self, pipe, generation: dict):
        """MiniMax-H3 generates at its own fixed frame rate."""
        if generation["fps"] != pipe.fps:
            raise ValueError(f"fps {generation['fps']}: MiniMax-H3 generates at {pipe.fps} fps")
        return pipe

    def call_kwargs(self, generation: dict) -> dict:
        kwargs = {k: generation[k] for k in ("height", "width", "num_frames")}
        kwargs["num_inference_steps"] = generation["num_inference_steps"] + 1  # grid points
        return kwargs

    def checkpoint_latents(self, pipe, state, final):
        """Recorded video rows -> [1, C, F, H, W], unpacked as the pipeline's after-denoise
        block unpacks the final rows (frame-major, then row-major patches)."""
        _, channels, frames, height, width = final.shape
        pt, ph, pw = pipe.patch_size
        rows = state.reshape(-1, frames // pt, height // ph, width // pw, channels, pt, ph, pw)
        rows = rows.permute(0, 4, 1, 5, 2, 6, 3, 7)
        return rows.reshape(-1, channels, frames, height, width).contiguous()

    def decode(self, pipe, latents):
        """Latents -> uint8 frames [F, H, W, 3] by the pipeline's own video decode block."""
        import numpy as np
        from diffusers.modular_pipelines.minimax_h3.decoders import MiniMaxH3VideoDecodeStep

        videos = _run(pipe, MiniMaxH3VideoDecodeStep(), latents=latents, output_type="np")
        return (videos["videos"][0] * 255).astype(np.uint8)

    def final_audio(self, pipe, output):
        """The stereo waveform [2, samples] and its rate, by the pipeline's audio decode block."""
        from diffusers.modular_pipelines.minimax_h3.decoders import MiniMaxH3AudioDecodeStep

        audio = _run(pipe, MiniMaxH3AudioDecodeStep(), audio_latents=output.audio)
        return audio["audio"][0].cpu(), audio["sampling_rate"]


def _run(pipe, block, **inputs) -> dict:
    """One of the pipeline's blocks on `inputs` (tensors sent to its device): its outputs."""
    import torch
    from diffusers.modular_pipelines.modular_pipeline import PipelineState

    state = PipelineState()
    for name, value in inputs.items():
        if isinstance(value, torch.Tensor):
            value = value.to(pipe._execution_device)
        state.set(name, value)
    _, state = block(pipe.modular, state)
    return {param.name: state.get(param.name) for param in block.intermediate_outputs}
