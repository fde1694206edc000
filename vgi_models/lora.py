"""Load the VBVR LoRAs into a built pipeline, in either published format, and prove they took.

The registry's `lora` setting of a model entry:

    lora:
      format: diffsynth        # diffusers | diffsynth
      path: Video-Reason/VBVR-Wan2.2-diffsynth   # a directory, a hub id in the local cache,
                               # one .safetensors file (single-transformer families) or `tiny`
      files: {transformer: high_noise_lora.safetensors}   # optional; default: the family's
      scale: 1.0               # LoRA strength (adapter weight, or the fusing scale)
      fuse: false              # merge into the base weights and drop the LoRA layers
      rank: 4                  # `tiny` only: rank of the random LoRA built in code
      seed: 0                  # `tiny` only

Which file goes where: Wan2.2-A14B's `high_noise_lora.safetensors` into `transformer` (the
high-noise expert, t >= boundary_ratio * 1000), `low_noise_lora.safetensors` into
`transformer_2` (diffusers' `load_into_transformer_2=True`); Wan2.1 and LTX-2.3 have one
`lora.safetensors` for `transformer`.

Formats
-------
`diffusers`: anything `pipe.load_lora_weights(path)` reads: keys
`transformer.blocks.{i}.attn1.to_q.lora_A.weight` ([r, in]) / `.lora_B.weight` ([out, r]) for
Wan (`attn1`/`attn2` `to_q,to_k,to_v,to_out.0`, `ffn.net.0.proj`, `ffn.net.2`), and
`transformer.transformer_blocks.{i}.attn1.to_q...` for LTX-2; diffusers' own LoRA metadata
(alpha, rank pattern) in the file is honoured because the file is handed to diffusers by path.

`diffsynth`: what DiffSynth-Studio's trainer writes. It injects peft LoRA layers into its own
DiT (`LoraConfig(r=32, lora_alpha=32, target_modules="q,k,v,o,ffn.0,ffn.2")` for Wan,
`"to_q,to_k,to_v,to_out.0"` for LTX-2) and saves the trainable parameters named as peft names
them, with `--remove_prefix_in_ckpt pipe.dit.` stripped
(`diffsynth/diffusion/training_module.py: export_trainable_state_dict`,
`diffsynth/diffusion/logger.py: ModelLogger.save_model`,
`examples/wanvideo/model_training/lora/Wan2.2-I2V-A14B.sh`). A published Wan key is therefore

    blocks.{i}.self_attn.q.lora_A.default.weight      [r, in]   (likewise k, v, o)
    blocks.{i}.cross_attn.q.lora_B.default.weight     [out, r]  (likewise k, v, o)
    blocks.{i}.ffn.0.lora_A.default.weight, blocks.{i}.ffn.2.lora_B.default.weight

(`cross_attn.k_img` / `v_img` of Wan2.1 do not match the target `k`/`v`, which peft matches on
whole name components), and an LTX-2 key `transformer_blocks.{i}.attn1.to_q.lora_A.default.weight`
(DiffSynth's LTX-2 DiT keeps the original LTX-2 module names). No `.alpha` keys: alpha = rank,
scale 1.0, which is also diffusers' default when a file carries no alpha.

diffusers 0.42.1 does not read these keys as they are: its Wan converter
(`_convert_non_diffusers_wan_lora_to_diffusers`) runs only for keys starting with
`diffusion_model.` and accepts `lora_A`/`lora_B` or `lora_down`/`lora_up`, but not peft's
`.default.` infix (the leftover keys make it raise); bare `blocks.*` keys are skipped by the
`transformer.` prefix filter with only a warning (its `.default.` handling exists only in the
MiniMax-H3 converter). The LTX-2 converter likewise runs only on `diffusion_model.` keys. So
this module normalises each key to the original-checkpoint form diffusers does convert:
strip a leading `pipe.dit.` / `pipe.dit2.` / `dit.` / `diffusion_model.`, drop `.default`, and
prefix `diffusion_model.`: `diffusion_model.blocks.0.self_attn.q.lora_A.weight`. diffusers then
maps module names (`self_attn.q` -> `attn1.to_q`, `cross_attn` -> `attn2`, `ffn.0` ->
`ffn.net.0.proj`, `ffn.2` -> `ffn.net.2`; LTX `q_norm` -> `norm_q`, ...). For Wan, every key
must name one of those modules, or loading stops with the file's name.

Proof of loading
----------------
diffusers only warns about keys it cannot place. After loading, every peft LoRA layer of the
component holding the adapter is compared with the tensors diffusers converted from the file;
the count of layers whose A and B equal the file's is the number reported. No such layer, or a
LoRA module of the file that did not land, is an error naming the file.

This module imports no torch at import time: the workflow resolves LoRA files while building
its DAG.
"""

from __future__ import annotations

import re
from pathlib import Path

from vgi_models.families import FAMILIES
from vgi_models.sources import resolve

ADAPTER = "vbvr"
FORMATS = ("diffusers", "diffsynth")
TINY = "tiny"

_DIFFSYNTH_KEY = re.compile(
    r"(?:pipe\.dit2?\.|dit2?\.|diffusion_model\.)?(?P<module>.+)\.lora_(?P<ab>[AB])(?:\.default)?\.weight"
)


class LoraError(ValueError):
    """A LoRA file that does not fit the pipeline it is applied to."""


def _default_files(family: str, fmt: str) -> dict[str, str]:
    """The family's published LoRA file for each component it goes into."""
    files = FAMILIES[family].lora_files
    if not files:
        raise ValueError(f"no LoRA support for family {family!r}")
    return files[fmt]


def lora_files(family: str, lora: dict) -> dict[str, Path]:
    """The weight file for each component the LoRA targets; `FileNotFoundError` names it."""
    fmt = lora["format"]
    if fmt not in FORMATS:
        raise ValueError(f"lora.format {fmt!r} is not one of {FORMATS}")
    names = lora.get("files") or _default_files(family, fmt)
    path = resolve(lora["path"], "LoRA weights")
    if path.is_file():
        if len(names) != 1:
            raise ValueError(
                f"lora.path {lora['path']} is one file, but {family} takes one per "
                f"component ({', '.join(names)}): give the directory"
            )
        return {next(iter(names)): path}
    files = {component: path / name for component, name in names.items()}
    for file in files.values():
        if not file.is_file():
            raise FileNotFoundError(f"LoRA file {file} not found")
    return files


def apply_lora(pipe, family: str, lora: dict) -> dict:
    """Load `lora` (the registry setting) into `pipe`; return a summary for generation.json.

    Raises `LoraError` naming the file when no layer, or not every LoRA module of the file,
    took the file's weights.
    """
    fmt, scale = lora["format"], float(lora.get("scale", 1.0))
    fuse = bool(lora.get("fuse", False))
    if lora["path"] == TINY:
        rank, seed = lora.get("rank", 4), lora.get("seed", 0)
        components = _default_files(family, fmt)
        sources = {
            c: (f"tiny:{c}", tiny_lora(pipe, family, c, fmt, rank, seed + i))
            for i, c in enumerate(components)
        }
    else:
        sources = {c: (str(f), f) for c, f in lora_files(family, lora).items()}

    loaded = {
        c: {"file": name, "layers": _load(pipe, family, c, fmt, source, name)}
        for c, (name, source) in sources.items()
    }
    if fuse:
        pipe.fuse_lora(components=list(sources), lora_scale=scale, adapter_names=[ADAPTER])
        pipe.unload_lora_weights()
    else:
        pipe.set_adapters([ADAPTER], adapter_weights=[scale])
    return {
        "format": fmt,
        "path": lora["path"],
        "adapter": ADAPTER,
        "scale": scale,
        "fuse": fuse,
        "components": loaded,
    }


def _load(pipe, family: str, component: str, fmt: str, source, name: str) -> int:
    """Load one file (or in-memory state dict) into one component; return the layers loaded."""
    into = {"load_into_transformer_2": True} if component == "transformer_2" else {}
    try:
        if fmt == "diffsynth":
            if not isinstance(source, dict):
                from safetensors.torch import load_file

                source = load_file(source)
            state = pipe.lora_state_dict(diffsynth_to_original(source, family, name))
            pipe.load_lora_weights(state, adapter_name=ADAPTER, **into)
        else:
            # by path, so that diffusers reads the file's own LoRA metadata (alpha, ranks)
            source = source if isinstance(source, dict) else str(source)
            state = pipe.lora_state_dict(source)
            pipe.load_lora_weights(source, adapter_name=ADAPTER, **into)
    except LoraError:
        raise
    except (ValueError, KeyError, IndexError, RuntimeError) as err:  # converters, peft, shapes
        raise LoraError(f"LoRA file {name} does not load into {family} {component}: {err}") from err
    loaded, missing = _landed(getattr(pipe, component), state)
    if not loaded:
        raise LoraError(
            f"LoRA file {name}: no layer of {component} took its weights "
            f"({len(state)} keys, e.g. {sorted(state)[:3]}); is it the {fmt} format for {family}?"
        )
    if missing:
        raise LoraError(
            f"LoRA file {name}: {len(missing)} of its modules did not load into {component}, "
            f"e.g. {missing[:3]}"
        )
    return len(loaded)


def diffsynth_to_original(state_dict: dict, family: str, name: str) -> dict:
    """DiffSynth keys -> the original-checkpoint form (`diffusion_model.<module>.lora_A.weight`)
    that diffusers' Wan and LTX-2 converters read."""
    out = {}
    for key, value in state_dict.items():
        match = _DIFFSYNTH_KEY.fullmatch(key)
        if match is None:
            raise LoraError(f"LoRA file {name}: {key!r} is not a DiffSynth LoRA key")
        module = match["module"]
        if problem := FAMILIES[family].diffsynth_module_problem(module):
            raise LoraError(f"LoRA file {name}: {key!r} {problem}")
        out[f"diffusion_model.{module}.lora_{match['ab']}.weight"] = value
    return out


def _landed(model, state: dict) -> tuple[set[str], list[str]]:
    """Modules of `model` whose LoRA A and B for the adapter equal the file's (as diffusers
    converted them: `transformer.<module>.lora_A.weight`), and the file's modules that did not
    land (keys for another component count as not landed)."""
    import torch
    from peft.tuners.lora import LoraLayer

    prefix, suffix = "transformer.", ".lora_A.weight"
    wanted = {
        k[len(prefix) : -len(suffix)] for k in state if k.startswith(prefix) and k.endswith(suffix)
    }
    foreign = [k for k in state if not k.startswith(prefix)]
    loaded = set()
    for module_name, module in model.named_modules():
        if module_name not in wanted or not isinstance(module, LoraLayer):
            continue
        if ADAPTER not in module.lora_A:
            continue
        same = True
        for ab in ("A", "B"):
            weight = getattr(module, f"lora_{ab}")[ADAPTER].weight.detach()
            expected = state[f"{prefix}{module_name}.lora_{ab}.weight"]
            same &= torch.equal(weight.cpu(), expected.to(weight.dtype))
        if same:
            loaded.add(module_name)
    return loaded, sorted((wanted - loaded) | set(foreign))


def tiny_lora(pipe, family: str, component: str, fmt: str, rank: int, seed: int) -> dict:
    """A random LoRA for a tiny pipeline's component, keyed exactly as the published files of
    `fmt` are (non-zero B, so that it changes the output)."""
    import torch

    model = getattr(pipe, component)
    names = FAMILIES[family].lora_modules(model)
    generator = torch.Generator().manual_seed(seed)
    state = {}
    for diffsynth_name, diffusers_name in names:
        linear = model.get_submodule(diffusers_name)
        a = torch.randn(rank, linear.in_features, generator=generator) / linear.in_features**0.5
        b = torch.randn(linear.out_features, rank, generator=generator) * 0.1
        if fmt == "diffsynth":
            state[f"{diffsynth_name}.lora_A.default.weight"] = a
            state[f"{diffsynth_name}.lora_B.default.weight"] = b
        else:
            state[f"transformer.{diffusers_name}.lora_A.weight"] = a
            state[f"transformer.{diffusers_name}.lora_B.weight"] = b
    return state
