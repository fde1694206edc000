"""A stand-in for the official repository's eval/vlm_judge_utils.py, in this project's own
words: the names, signatures and message structure of the official prompt builders (the
system prompts, `_completeness_messages`, `_batch_user_message`, `_polish_messages` and
their image encoder), so that `workflow_scripts.judge.official` reads it as it reads a real
checkout (tests/judge/test_official_prompts.py). None of the official wording is here."""

from __future__ import annotations

import base64
import math
from pathlib import Path

import requests  # noqa: F401 (the official module imports its HTTP client at the top)

FRAME_VLM_MAX_SIDE = 512
REF_VLM_MAX_SIDE = 768


def image_to_data_url(path: Path, max_side: int | None = None) -> str:
    """A file as a data URL (the reader replaces this with its own encoding)."""
    return "data:image/png;base64," + base64.b64encode(Path(path).read_bytes()).decode("ascii")


def _zoom_max_per_batch(batch_size: int) -> int:
    return math.ceil(batch_size / 2)


AGENTIC_SYSTEM = (
    "STAND-IN WINDOW SYSTEM. Grade a clip from a few of its stills; name stills by their "
    "global frame number and answer in JSON."
)

COMPLETENESS_SYSTEM = (
    "STAND-IN COMPLETENESS SYSTEM. Say how far the clip reached its goal, as one tier."
)


def _batch_user_message(round_idx: int, fps: int, batch_idx: int, n_batches: int,
                        batch_metas: list[dict], round_n_frames: int, rubric_text: str,
                        task_name: str, level: str, iid: str,
                        input_image: Path | None, gt_image: Path | None,
                        rubric_overall: str = "", rubric_checklist: list[str] | None = None,
                        gt_desc_text: str = "") -> dict:  # fmt: skip
    lines = [f"Job: {task_name}", ""]
    if rubric_overall:
        lines += ["Aim:", rubric_overall.strip(), ""]
    if rubric_checklist:
        lines.append("Items:")
        lines += [f"  ({i}) {item}" for i, item in enumerate(rubric_checklist, 1)]
        lines.append("")
    elif not rubric_overall:
        lines += ["Behaviour asked for:", rubric_text, ""]
    if gt_desc_text:
        lines += ["Known answer:", gt_desc_text.strip(), ""]
    first, last = batch_metas[0], batch_metas[-1]
    lines.append(
        f"pass {round_idx} at {fps} fps, chunk {batch_idx + 1} of {n_batches} "
        f"(frames {first['global_frame']}..{last['global_frame']}, "
        f"{len(batch_metas)} of {round_n_frames})"
    )
    shown = [name for name, path in (("start", input_image), ("answer", gt_image))
             if path and Path(path).is_file()]  # fmt: skip
    content = [
        {"type": "text", "text": "\n".join(lines)},
        {"type": "text", "text": "Pictures: " + (", ".join(shown) or "stills only")},
    ]
    for path in (input_image, gt_image):
        if path and Path(path).is_file():
            url = image_to_data_url(Path(path), REF_VLM_MAX_SIDE)
            content.append({"type": "image_url", "image_url": {"url": url}})
    for meta in batch_metas:
        content.append({"type": "text", "text": f"@{meta['time_s']:.3f}s #{meta['global_frame']}"})
        url = image_to_data_url(Path(meta["path"]), FRAME_VLM_MAX_SIDE)
        content.append({"type": "image_url", "image_url": {"url": url}})
    cap = _zoom_max_per_batch(len(batch_metas))
    content.append({"type": "text", "text": f"JSON: evaluations, frames_to_inspect_closely "
                                            f"(at most {cap})"})  # fmt: skip
    return {"role": "user", "content": content}


def _polish_messages(rubric_text: str, task_name: str, level: str, iid: str,
                     duration_s: float, native_fps: float,
                     frame_evals: dict[str, list[str]], batch_summaries: list[dict],
                     rubric_checklist: list[str] | None = None, rubric_overall: str = "",
                     gt_desc_text: str = "") -> list[dict]:  # fmt: skip
    lines = [f"Count faults of {task_name} {level} {iid}.", ""]
    if rubric_checklist:
        lines += [f"  ({i}) {item}" for i, item in enumerate(rubric_checklist, 1)]
    for summary in batch_summaries:
        low, high = summary["global_frame_range"]
        start, stop = summary["time_s_range"]
        lines.append(
            f"- pass {summary['round']} @{summary['fps']} chunk "
            f"{summary['batch_idx'] + 1} ({low}-{high}, {start:.3f}-{stop:.3f}s)"
        )
        prefix = f"r{summary['round']}b{summary['batch_idx']} "
        for span, notes in frame_evals.items():
            lines += [f"    {span}: {note[len(prefix):]}" for note in notes
                      if note.startswith(prefix)]  # fmt: skip
    lines.append(f"JSON: by_range, checklist of {len(rubric_checklist or [])}, "
                 "overall_reasoning")  # fmt: skip
    return [
        {"role": "system", "content": "STAND-IN VERDICT SYSTEM."},
        {"role": "user", "content": "\n".join(lines)},
    ]


def _completeness_messages(task_name: str, level: str, iid: str, frame_metas: list[dict],
                           completeness_text: str, input_image: Path | None,
                           gt_image: Path | None,
                           gt_desc_text: str = "") -> list[dict]:  # fmt: skip
    head = f"Job: {task_name} / {level} / {iid}\nTiers:\n{completeness_text.strip()}" + (
        f"\nKnown answer: {gt_desc_text.strip()}" if gt_desc_text.strip() else ""
    )
    content = [{"type": "text", "text": head}]
    for path in (input_image, gt_image):
        if path and Path(path).is_file():
            url = image_to_data_url(Path(path), REF_VLM_MAX_SIDE)
            content.append({"type": "image_url", "image_url": {"url": url}})
    for meta in frame_metas:
        content.append({"type": "text", "text": f"@{meta['time_s']:.3f}s #{meta['global_frame']}"})
        url = image_to_data_url(Path(meta["path"]), FRAME_VLM_MAX_SIDE)
        content.append({"type": "image_url", "image_url": {"url": url}})
    content.append({"type": "text", "text": "JSON: tier, reasoning"})
    return [
        {"role": "system", "content": COMPLETENESS_SYSTEM},
        {"role": "user", "content": content},
    ]
