"""How a pipeline runs on the machine: device placement, offload, VAE tiling, attention backend.

None of these change what a model generates beyond floating-point rounding, so they live in
the registry's `runtime` block and are not part of the settings that trigger reruns.
"""

from __future__ import annotations


def place(pipe, runtime: dict, device: str, denoisers: tuple[str, ...]):
    """Apply the runtime settings (the registry's, its defaults filled in) and put the
    pipeline on `device` (or offload it there); the attention backend is set on `denoisers`
    (the family's).

    `offload: model` keeps each component on the CPU until the pipeline calls it (the text
    encoders go back to the CPU after encoding); `sequential` streams layer by layer.
    """
    backend = runtime["attention_backend"]
    if backend != "native":
        for name in denoisers:
            getattr(pipe, name).set_attention_backend(backend)
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
