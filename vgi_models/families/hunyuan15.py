"""HunyuanVideo-1.5 I2V through diffusers' `HunyuanVideo15ImageToVideoPipeline`.

The pipeline takes no height, width or guidance scale: it picks the output size from the
input image's aspect ratio and its `target_size` (the side of a square of the same area),
and classifier-free guidance lives on its `guider` component. Both are set here from the
generation settings, as is an attention processor that never builds diffusers' dense S x S
mask (`hunyuan15_attention`). Its `output_type="latent"` result is the latent times the VAE's
`scaling_factor`. No LoRA is published for it.
"""

from __future__ import annotations

import math

from vgi_models.families.base import Family


class HunyuanVideo15(Family):
    name = "hunyuan15"

    def load(self, source: str, generation: dict, dtype):
        from diffusers import HunyuanVideo15ImageToVideoPipeline

        pipe = HunyuanVideo15ImageToVideoPipeline.from_pretrained(
            source, dtype=dtype, local_files_only=True
        )
        return self.finish(pipe, generation)

    def finish(self, pipe, generation: dict):
        """Scheduler shift, guidance scale, output size, prompt length, and attention without
        the dense S x S mask (`hunyuan15_attention`)."""
        from diffusers import FlowMatchEulerDiscreteScheduler

        from vgi_models.families.hunyuan15_attention import use_prefix_attention

        use_prefix_attention(pipe.transformer)
        pipe.scheduler = FlowMatchEulerDiscreteScheduler.from_config(
            pipe.scheduler.config, shift=generation["flow_shift"]
        )
        pipe.guider = pipe.guider.new(guidance_scale=generation["guidance_scale"])
        height, width = generation["height"], generation["width"]
        pipe.target_size = round(math.sqrt(height * width))
        chosen = pipe.video_processor.calculate_default_height_width(9, 16, pipe.target_size)
        if chosen != (height, width):
            raise ValueError(
                f"HunyuanVideo-1.5 makes {chosen[1]}x{chosen[0]} (not {width}x{height}) from a "
                f"16:9 image: choose a size its buckets of {pipe.vae_scale_factor_spatial} px "
                "can give"
            )
        if "max_sequence_length" in generation:
            pipe.tokenizer_max_length = generation["max_sequence_length"]
        return pipe

    def call_kwargs(self, generation: dict) -> dict:
        """Frames, steps and negative prompt (size and guidance are set on the pipeline)."""
        return {
            "num_frames": generation["num_frames"],
            "num_inference_steps": generation["num_inference_steps"],
            "negative_prompt": generation.get("negative_prompt", ""),
        }
