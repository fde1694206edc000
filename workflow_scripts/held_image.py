"""The body of rule `hold_image`: a shortcut baseline's video (`source: static`) made from an
input image, and its `generation.json`. The clip is `generation.num_frames` frames at
`generation.fps` (at the image's size, scaled up to a multiple of 16 as every video is
written: `vgi_models.video`), by `generation.motion`:

- `hold`: the image held still;
- `noise`: the image under Gaussian noise whose standard deviation grows linearly from 0 at
  the first frame to `noise_std` (8-bit levels) at the last, drawn with `noise_seed`;
- `pan`: a crop of `1 - pan` of the image's width sliding from its left edge to its right,
  scaled back to the image's size;
- `swap`: another instance of the same task held still (the rule hands in its image).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import numpy as np
from PIL import Image

from vgi_models.input_image import load_rgb
from vgi_models.video import write_video
from workflow_scripts.common.files import write_json
from workflow_scripts.common.logs import job_log


def shortcut_frames(image: np.ndarray, generation: dict) -> Iterator[np.ndarray]:
    """The baseline's frames, one at a time (uint8 [H, W, 3]), from the image it starts from."""
    count, motion = generation["num_frames"], generation.get("motion", "hold")
    share = np.linspace(0.0, 1.0, count) if count > 1 else np.zeros(1)  # 0 first, 1 last
    if motion in ("hold", "swap"):
        yield from (image for _ in range(count))
    elif motion == "noise":
        rng = np.random.default_rng(generation["noise_seed"])
        for std in share * generation["noise_std"]:
            noisy = image + rng.normal(0.0, std, image.shape) if std else image
            yield np.clip(np.rint(noisy), 0, 255).astype(np.uint8)
    elif motion == "pan":
        height, width = image.shape[:2]
        view = max(1, round(width * (1 - generation["pan"])))
        picture = Image.fromarray(image)
        for left in np.rint(share * (width - view)).astype(int):
            crop = picture.crop((left, 0, left + view, height))
            yield np.asarray(crop.resize((width, height), Image.BICUBIC))
    else:
        raise ValueError(f"unknown motion {motion!r} (hold, noise, pan, swap)")


def hold_image_job(smk) -> None:
    """Rule `hold_image`: see the module."""
    settings = json.loads(smk.params.settings)
    generation = settings["generation"]
    with job_log(smk):
        started = time.perf_counter()
        frame = np.asarray(load_rgb(smk.input.image))
        write_video(shortcut_frames(frame, generation), smk.output.video, fps=generation["fps"])
        meta = {
            "model": smk.wildcards.model,
            "status": "ok",
            "settings": settings,
            "image": str(smk.input.image),
            "prompt": smk.params.prompt,
            "seconds": {"write": round(time.perf_counter() - started, 3)},
        }
        write_json(smk.output.meta, meta)
        print(json.dumps({"frames": generation["num_frames"], "size": list(frame.shape[1::-1])}))
