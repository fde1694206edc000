"""Image models (`output: image`): tiny Qwen-Image-Edit, FLUX.2 and JoyAI-Image-Edit pipelines
built offline, one edited image per job, byte for byte reproducible, in process and through the
shell entry."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import numpy as np
import pytest
import torch
import yaml
from PIL import Image

from tests.support.workflow import REPO
from vgi_models.generate_image import generate_image
from vgi_models.image_families import IMAGE_FAMILIES
from vgi_models.registry import load_registry, weight_problems

PROMPT = "move the green dot to the red dot"
AWKWARD = 'say "it\'s done"\nthen stop: $HOME `x`'
QWEN_TEMPLATE = "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>hi<|im_end|>"
# a tiny key: its pipeline class, and a prompt template with five special tokens around the
# text "user\nhi"
TINY = {
    "tiny_qwen_image_edit": ("QwenImageEditPipeline", QWEN_TEMPLATE),
    "tiny_qwen_image_edit_plus": ("QwenImageEditPlusPipeline", QWEN_TEMPLATE),
    "tiny_flux2": ("Flux2Pipeline", "[SYSTEM_PROMPT]user\n[/SYSTEM_PROMPT][INST][IMG]hi[/INST]"),
    "tiny_joyai_image_edit": ("JoyImageEditPipeline", QWEN_TEMPLATE),
}
# where a saved pipeline records its processor as the checkpoints do
PROCESSOR = {
    "tiny_qwen_image_edit": ("processor", ["transformers", "Qwen2VLProcessor"]),
    "tiny_flux2": ("tokenizer", ["transformers", "PixtralProcessor"]),
    "tiny_joyai_image_edit": ("processor", ["transformers", "Qwen3VLProcessor"]),
}
# pixel levels a reload may differ by: safetensors hands some weights back at addresses not
# 64-byte aligned, and a one-row matmul (JoyAI's timestep embedding) then rounds differently
SLACK = {"tiny_joyai_image_edit": 1}


def _weights(pipe) -> dict[str, torch.Tensor]:
    return {
        f"{name}.{key}": value
        for name, component in pipe.components.items()
        if isinstance(component, torch.nn.Module)
        for key, value in component.state_dict().items()
    }


@pytest.fixture(scope="module", params=list(PROCESSOR))
def edited(request, specs, example_image, tmp_path_factory):
    """(spec, meta, out_dir) of a tiny model's image of the example instance."""
    torch.set_num_threads(1)
    out_dir = tmp_path_factory.mktemp("edited")
    spec = specs[request.param]
    return spec, generate_image(spec, str(example_image), PROMPT, out_dir), out_dir


@pytest.mark.parametrize("key", list(TINY))
def test_tiny_pipeline_builds_offline_to_the_same_weights(specs, key):
    spec = specs[key]
    first, second = spec.build(), spec.build()
    pipeline, template = TINY[key]
    assert type(first).__name__ == pipeline
    mine, theirs = _weights(first), _weights(second)
    assert mine.keys() == theirs.keys() and all(torch.equal(mine[k], theirs[k]) for k in mine)
    # each special token of the prompt template is one token; the rest, one token a byte
    tokenizer = getattr(first.tokenizer, "tokenizer", first.tokenizer)  # FLUX.2's: a processor's
    assert len(tokenizer(template).input_ids) == 5 + len("user\nhi")


def test_generate_image_writes_the_configured_size_and_metadata(edited, example_image):
    spec, meta, out_dir = edited
    with Image.open(out_dir / "image.png") as image:
        assert image.format == "PNG"
        assert image.size == (spec.generation["width"], spec.generation["height"])
    assert json.loads((out_dir / "generation.json").read_text()) == meta
    assert meta["model"] == spec.key and meta["status"] == "ok"
    assert meta["settings"] == spec.settings() and meta["seed"] == 0
    assert (meta["image"], meta["prompt"]) == (str(example_image), PROMPT)
    assert {"torch", "diffusers", "transformers"} <= meta["versions"].keys()
    assert meta["seconds"].keys() == {"load", "generate"}
    assert meta["peak_memory_mb"]["cpu_rss"] > 0


def test_same_settings_same_bytes_another_seed_other_bytes(edited, example_image, tmp_path):
    spec, _, out_dir = edited
    generate_image(spec, str(example_image), PROMPT, tmp_path / "again")
    assert (tmp_path / "again/image.png").read_bytes() == (out_dir / "image.png").read_bytes()
    generate_image(spec.with_generation(seed=1), str(example_image), PROMPT, tmp_path / "seed1")
    assert (tmp_path / "seed1/image.png").read_bytes() != (out_dir / "image.png").read_bytes()


def test_shell_entry_writes_the_in_process_image(specs, example_image, tmp_path):
    spec = specs["tiny_qwen_image_edit"]
    generate_image(spec, str(example_image), AWKWARD, tmp_path / "in_process")
    output = tmp_path / "shell" / "image.png"
    settings = json.dumps(copy.deepcopy(spec.settings()))
    argv = ["--registry", str(REPO / "config/models.yaml"), "--model", spec.key]
    argv += ["--settings", settings, "--threads", "1", "--image", str(example_image)]
    argv += ["--prompt", AWKWARD, "--output", str(output)]
    entry = REPO / "workflow_scripts/entry/generate_image.py"
    run = subprocess.run([sys.executable, str(entry), *argv], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert output.read_bytes() == (tmp_path / "in_process/image.png").read_bytes()
    meta = json.loads((output.parent / "generation.json").read_text())
    assert meta["prompt"] == AWKWARD and meta["threads"] == 1


def test_real_load_from_a_saved_folder_gives_the_same_image(
    edited, registry, example_image, tmp_path
):
    """The real-weight path (`from_pretrained`, offline) on the tiny weights saved to disk."""
    tiny_spec, _, out_dir = edited
    tiny = registry[tiny_spec.key]
    pipe = IMAGE_FAMILIES[tiny["family"]].build_tiny(tiny["generation"])
    pipe.save_pretrained(tmp_path / "weights")
    model_index = json.loads((tmp_path / "weights/model_index.json").read_text())
    component, recorded = PROCESSOR[tiny_spec.key]
    assert model_index[component] == recorded
    entry = tiny | {"source": str(tmp_path / "weights")}
    spec = load_registry({"saved": yaml.safe_load(yaml.safe_dump(entry))})["saved"]
    assert not spec.tiny
    loaded = spec.build()
    mine, theirs = _weights(pipe), _weights(loaded)
    assert mine.keys() == theirs.keys() and all(torch.equal(mine[k], theirs[k]) for k in mine)
    generate_image(spec, str(example_image), PROMPT, tmp_path / "out")
    made, again = (
        np.asarray(Image.open(d / "image.png"), int) for d in (out_dir, tmp_path / "out")
    )
    assert np.abs(made - again).max() <= SLACK.get(tiny_spec.key, 0)


def test_joyai_refuses_a_size_that_is_not_one_of_its_buckets(specs):
    """JoyImageEditPipeline snaps any size to its nearest bucket: a size that is not one is
    named when the run starts, not found on a differently sized image."""
    spec = specs["tiny_joyai_image_edit"]
    real = specs["joyai_image_edit"]
    assert weight_problems(spec) == [] and real.pipeline_family.problems("", real.generation) == []
    (problem,) = weight_problems(spec.with_generation(height=64, width=112))
    assert problem.startswith("model 'tiny_joyai_image_edit': ") and "not 112x64" in problem
