"""Rule `prepare_frames`: the JPEGs the VLM jobs of one (model, task) send, made ahead.

Decoding and shrinking frames are most of a VLM job's CPU, and the VLM jobs run on the
submit host (they call the API); this job runs where the cluster puts CPU jobs. For each
instance it writes every frame the main judge can ask of its video (`protocol.
reachable_frames`) and the frames the transition labels show of each checkpoint, one
JPEG each at the protocol's `frame_long_side` (`layout.frame_store`). They are the bytes
the VLM jobs would make themselves (`frames.VideoFrames`), so no cached call changes.
"""

from __future__ import annotations

import json
from pathlib import Path

from vgi_models.video import checkpoint_name
from workflow_scripts.common.layout import frame_store
from workflow_scripts.common.logs import job_log
from workflow_scripts.judge.frames import VideoFrames, samples, store_path, uniform_fps
from workflow_scripts.judge.protocol import reachable_frames
from workflow_scripts.judge.settings import Protocol


def store_frames(video: Path, indices, long_side: int, folder: Path) -> int:
    """Writes frames `indices` of `video` into its store under `folder`; returns how many."""
    store = frame_store(folder, video)
    store.mkdir(parents=True, exist_ok=True)
    for index, jpeg in VideoFrames(video, long_side).jpegs(indices).items():
        store_path(store, index).write_bytes(jpeg)
    return len(indices)


def prepare_frames_job(smk) -> None:
    """Rule `prepare_frames`: `params.protocol` the main judge's protocol, `params.labels`
    the checkpoint steps and frames per checkpoint the labels show (null: no labels)."""
    protocol = Protocol(**json.loads(smk.params.protocol))
    labels, side, folder = json.loads(smk.params.labels), protocol.frame_long_side, smk.output[0]
    with job_log(smk):
        Path(folder).mkdir(parents=True, exist_ok=True)
        written = 0
        for video in map(Path, smk.input.videos):
            frames = reachable_frames(*VideoFrames(video).clip(), protocol)
            written += store_frames(video, frames, side, Path(folder))
            for step in labels["steps"] if labels else []:
                checkpoint = video.parent / "denoise" / checkpoint_name(step, "x0")
                count, rate = VideoFrames(checkpoint).clip()
                shown = samples(count, rate, uniform_fps(labels["frames"], count, rate))
                written += store_frames(checkpoint, [i for i, _ in shown], side, Path(folder))
        print(json.dumps({"videos": len(smk.input.videos), "frames": written}))
