"""How a pipeline runs on the machine (device placement, offload, VAE tiling, attention backend,
regional compilation), and which of these settings change what it generates.

Each setting's value is **exact** or **approximate** (`CLASSES`), by a measured check
(`vgi_models.exactness`: a probe instance generated both ways, its latents, x0 checkpoints
and video compared; docs/models.md gives the figures). An exact value keeps the trajectory
within floating-point rounding (`exactness.TOLERANCE`), so it is how the model runs: read
from the registry when a job starts, never a reason to rerun. An approximate value changes
the video, so it is part of what decides it (`trajectory_runtime`, in `ModelSpec.settings()`):
a job's params, its `generation.json` and its saved trajectory's key.
"""

from __future__ import annotations

EXACT, APPROXIMATE = "exact", "approximate"
# setting -> (whether a value changes the trajectory beyond rounding, why)
CLASSES = {
    "offload": (
        lambda value: False,
        "moves weights between CPU and GPU; the same kernels compute on the same device",
    ),
    "vae_tiling": (
        bool,
        "encodes the input image and decodes every video in overlapping tiles blended at "
        "their seams: other latents and other pixels",
    ),
    "attention_backend": (
        lambda value: "sage" in value,
        "SageAttention (`sage*`) quantises Q and K to INT8 (and P to FP8 on Hopper); the "
        "others compute exact attention, differing in summation order only",
    ),
    "compile": (
        lambda value: False,
        "regional torch.compile fuses the repeated blocks' kernels: the same operations, "
        "rounded in another order",
    ),
}
# Minutes a job with `compile` spends compiling before its first full-speed step (regional
# compilation compiles one block of each repeated kind): counted in its time limit and in
# the plan until videos are measured. An allowance: bench/gpu_generate.py measures it.
COMPILE_WARMUP_MIN = 10


def option_class(setting: str, value) -> str:
    """EXACT or APPROXIMATE: the class of `value` of runtime `setting`."""
    changes, _ = CLASSES[setting]
    return APPROXIMATE if changes(value) else EXACT


def trajectory_runtime(runtime: dict) -> dict:
    """The settings of `runtime` whose values are approximate, with their values: what of how
    a model runs decides its videos ({} when every value is exact)."""
    return {
        setting: value
        for setting, value in sorted(runtime.items())
        if option_class(setting, value) == APPROXIMATE
    }


def warmup_minutes(runtime: dict) -> int:
    """Minutes a job spends before its denoising runs at full speed (compilation)."""
    return COMPILE_WARMUP_MIN if runtime.get("compile") else 0


def place(pipe, runtime: dict, device: str, denoisers: tuple[str, ...]):
    """Apply the runtime settings (the registry's, its defaults filled in) and put the
    pipeline on `device` (or offload it there); the attention backend and regional compilation
    apply to `denoisers` (the family's).

    `offload: model` keeps each component on the CPU until the pipeline calls it (the text
    encoders go back to the CPU after encoding); `sequential` streams layer by layer.
    `compile` compiles each denoiser's repeated blocks (diffusers' `compile_repeated_blocks`)
    on their first call.
    """
    for name in denoisers:
        denoiser = getattr(pipe, name)
        # `native` too: diffusers keeps the last backend set as the process's default
        denoiser.set_attention_backend(runtime["attention_backend"])
        if runtime["compile"]:
            denoiser.compile_repeated_blocks()
    if runtime["vae_tiling"]:
        pipe.vae.enable_tiling()
    offload = runtime["offload"]
    if offload == "none" or device == "cpu":
        return pipe.to(device)
    if offload == "model":
        pipe.enable_model_cpu_offload(device=device)
    else:
        pipe.enable_sequential_cpu_offload(device=device)
    return pipe
