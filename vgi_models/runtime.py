"""How a pipeline runs on the machine: device placement, offload, VAE tiling, attention backend.

None of these change what a model generates beyond floating-point rounding, so they live in
the registry's `runtime` block and are not part of the settings that trigger reruns.
"""

from __future__ import annotations

DENOISERS = ("transformer", "transformer_2")


def place(pipe, runtime: dict, device: str):
    """Apply the runtime settings and put the pipeline on `device` (or offload it there).

    `offload: model` keeps each component on the CPU until the pipeline calls it (the text
    encoders go back to the CPU after encoding); `sequential` streams layer by layer.
    """
    backend = runtime.get("attention_backend", "native")
    if backend != "native":
        for name in DENOISERS:
            if getattr(pipe, name, None) is not None:
                getattr(pipe, name).set_attention_backend(backend)
    if runtime.get("vae_tiling", False):
        pipe.vae.enable_tiling()
    offload = runtime.get("offload", "none")
    if offload == "none" or device == "cpu":
        return pipe.to(device)
    if offload == "model":
        pipe.enable_model_cpu_offload(device=device)
    else:
        pipe.enable_sequential_cpu_offload(device=device)
    return pipe
