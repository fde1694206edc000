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
from workflow_scripts.common.layout import failed_generation, frame_store
from workflow_scripts.common.logs import job_log
from workflow_scripts.judge.frames import VideoFrames, store_path
from workflow_scripts.judge.protocol import reachable_frames
from workflow_scripts.judge.settings import Protocol


def store_frames(jpegs: dict[int, bytes], store: Path) -> int:
    """Writes each frame's JPEG into `store`; returns how many."""
    store.mkdir(parents=True, exist_ok=True)
    for index, jpeg in jpegs.items():
        store_path(store, index).write_bytes(jpeg)
    return len(jpegs)


def prepare_frames_job(smk) -> None:
    """Rule `prepare_frames`: `params.protocol` the main judge's protocol, `params.labels`
    the checkpoint steps and frames per checkpoint the labels show (null: no labels)."""
    protocol = Protocol(**json.loads(smk.params.protocol))
    labels, side, folder = json.loads(smk.params.labels), protocol.frame_long_side, smk.output[0]
    with job_log(smk):
        Path(folder).mkdir(parents=True, exist_ok=True)
        written = 0
        for video in map(Path, smk.input.videos):
            if failed_generation(video):  # no video made: the judge records the reason
                continue
            frames = VideoFrames(video, side)
            jpegs = frames.jpegs(reachable_frames(*frames.clip(), protocol))
            written += store_frames(jpegs, frame_store(folder, video))
            for step in labels["steps"] if labels else []:
                checkpoint = video.parent / "denoise" / checkpoint_name(step, "x0")
                shown = VideoFrames(checkpoint, side).uniform(labels["frames"])
                jpegs = {frame.index: frame.jpeg for frame in shown}
                written += store_frames(jpegs, frame_store(folder, checkpoint))
        print(json.dumps({"videos": len(smk.input.videos), "frames": written}))
