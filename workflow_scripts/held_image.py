"""The body of rule `hold_image`: a `source: static` model's video, the input image held
still for `generation.num_frames` frames at `generation.fps` (at the image's size, scaled up
to a multiple of 16 as every video is written: `vgi_models.video`), and its
`generation.json`."""

from __future__ import annotations

import json
import time

import numpy as np

from vgi_models.input_image import load_rgb
from vgi_models.video import write_video
from workflow_scripts.common.files import write_json
from workflow_scripts.common.logs import job_log


def hold_image_job(smk) -> None:
    """Rule `hold_image`: see the module."""
    settings = json.loads(smk.params.settings)
    generation = settings["generation"]
    with job_log(smk):
        started = time.perf_counter()
        frame = np.asarray(load_rgb(smk.input.image))
        frames = np.broadcast_to(frame, (generation["num_frames"], *frame.shape))
        write_video(frames, smk.output.video, fps=generation["fps"])
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
