"""The official judge's own prompts, read at run time from a checkout of its repository.

`judge.official_prompts: <checkout>` (a clone of hexuan21/VGI-Bench) makes the video
judge's calls (completeness, the rubric windows, the verdict) the official judge's
requests word for word: the system prompts and user messages built by the functions of
the checkout's `eval/vlm_judge_utils.py` (NEEDED). The project ships none of that text:
the module is loaded from the checkout and its builders are called with the instance's
texts and the frames this protocol chose, as the official driver calls them (level
`lv<N>`, the instance's own id, the goal as the rubric's main goal, round fps as whole
numbers, batches numbered across the round; frames by their true index and time). Their
messages (OpenAI chat form) become the request's system prompt and parts, a text item a
text part and an image item the image the builder named (the input or ground-truth image
by its path, a frame by its key), encoded as every other request's: the builders' own
`image_to_data_url` is replaced.

What stays ours: which frames are sent (`judge.protocol`), the reply schema sent with each
request, how replies are read and scored, the strict verdict's re-ask line, and the
transition and image judges' templates. The requests are cached as any other (the key
holds their text: an edited module asks again), and the module's SHA-256 is part of the
judge rules' params (an edit reruns them; `settings.judge_params`).
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

SETTING = "judge.official_prompts"
MODULE = Path("eval") / "vlm_judge_utils.py"
NEEDED = {  # name in the module: what it must be
    "COMPLETENESS_SYSTEM": str,
    "AGENTIC_SYSTEM": str,
    "_completeness_messages": callable,
    "_batch_user_message": callable,
    "_polish_messages": callable,
    "image_to_data_url": callable,
}
IMAGE = "vgi-image:"  # the "data URL" the builders get for an image: its key after this
_LOADED: dict[tuple[str, str], ModuleType] = {}


def module_file(checkout: str | Path) -> Path:
    return Path(checkout) / MODULE


def digest(checkout: str | Path) -> str:
    """The SHA-256 of the checkout's module, once it is checked to hold what is NEEDED
    (a ValueError naming the setting if not)."""
    return load(checkout).__vgi_digest__


def load(checkout: str | Path) -> ModuleType:
    """The checkout's module (loaded once per content), its image encoder replaced; a
    ValueError naming the setting where the file is missing, does not import, or lacks a
    name of NEEDED."""
    path = module_file(checkout)
    try:
        source = path.read_bytes()
    except OSError as error:
        raise ValueError(
            f"{SETTING}: cannot read {path} ({error.strerror or error}); the setting names "
            "a checkout of the official repository (hexuan21/VGI-Bench), which holds it"
        ) from None
    sha = hashlib.sha256(source).hexdigest()
    if (str(path), sha) in _LOADED:
        return _LOADED[str(path), sha]
    spec = importlib.util.spec_from_file_location(f"vgi_official_prompts_{sha[:16]}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # the user's file: any failure is named, with the setting
        raise ValueError(
            f"{SETTING}: {path} does not import ({type(error).__name__}: {error})"
        ) from None
    wrong = [
        name
        for name, kind in NEEDED.items()
        if not (callable(getattr(module, name, None)) if kind is callable
                else isinstance(getattr(module, name, None), kind))
    ]  # fmt: skip
    if wrong:
        raise ValueError(
            f"{SETTING}: {path} lacks {', '.join(wrong)} (the official judge's prompt "
            f"builders: {', '.join(NEEDED)}); is it a checkout of hexuan21/VGI-Bench?"
        )
    module.image_to_data_url = lambda path, max_side=None: IMAGE + str(path)
    module.__vgi_digest__ = sha
    _LOADED[str(path), sha] = module
    return module


@dataclass(frozen=True)
class References:
    """What a call is shown besides its frames: the input image's and the ground-truth
    image's paths (None: not shown), the ground-truth text ('' none), the images by key."""

    input_image: str | None
    gt_image: str | None
    gt_text: str
    images: dict = field(default_factory=dict)


def _key(path) -> str:
    return str(Path(path))


def _metas(frames: Sequence) -> tuple[list[dict], dict]:
    """The builders' frame records and the images by key: each frame by its true index
    and time, as every request labels it (docs/judge.md)."""
    metas, images = [], {}
    for local, frame in enumerate(frames):
        key = f"frame:{frame.index}"
        meta = {"round_local_idx": local, "global_frame": frame.index, "time_s": frame.time}
        metas.append({**meta, "path": key})
        images[key] = frame.jpeg
    return metas, images


def _whole(fps: float):
    return int(fps) if float(fps).is_integer() else fps


class OfficialPrompts:
    """The requests of the official judge's builders (module docstring), by call."""

    def __init__(self, checkout: str | Path):
        self.module = load(checkout)

    def references(self, instance: Mapping, image: bytes, gt_image, gt_text) -> References:
        images = {_key(instance["image"]): image}
        gt_path = None
        if gt_image is not None:
            gt_path = instance["gt_image"]
            images[_key(gt_path)] = gt_image
        return References(instance["image"], gt_path, gt_text or "", images)

    def _ids(self, instance: Mapping) -> dict:
        level = f"lv{instance['level']}"
        prefix = f"{instance['task']}_{level}_"
        iid = instance["instance"].removeprefix(prefix)
        return {"task_name": instance["task"], "level": level, "iid": iid}

    def _rubric(self, instance: Mapping) -> dict:
        return {"rubric_overall": instance["goal"], "rubric_checklist": list(instance["checklist"])}

    def _rubric_text(self, instance: Mapping) -> str:  # shown only without goal and checklist
        return "\n".join([instance["goal"], *instance["checklist"]]).strip()

    def completeness(self, instance: Mapping, refs: References, frames, fps: float):
        metas, images = _metas(frames)
        messages = self.module._completeness_messages(
            **self._ids(instance),
            frame_metas=metas,
            completeness_text=instance["tier_standard"],
            input_image=refs.input_image,
            gt_image=refs.gt_image,
            gt_desc_text=refs.gt_text,
        )
        return _request(messages, {**refs.images, **images})

    def window(self, instance, refs: References, frames, place, sampling, round_frames, fps):
        """`place`: (round, window k from 1, of n windows in the round); `round_frames`:
        the frames of the whole round; `sampling`: the templates' (not shown here)."""
        round_, k, n = place
        metas, images = _metas(frames)
        message = self.module._batch_user_message(
            round_idx=round_,
            fps=_whole(fps),
            batch_idx=k - 1,
            n_batches=n,
            batch_metas=metas,
            round_n_frames=round_frames,
            rubric_text=self._rubric_text(instance),
            **self._ids(instance),
            input_image=refs.input_image,
            gt_image=refs.gt_image,
            **self._rubric(instance),
            gt_desc_text=refs.gt_text,
        )
        system = {"role": "system", "content": self.module.AGENTIC_SYSTEM}
        return _request([system, message], {**refs.images, **images})

    def verdict(self, instance, windows: Sequence[dict], shown, fps, clip, refs, rounds=None):
        """The verdict over the window documents (round, window, evaluations) and the frames
        each was `shown`, as the official driver lists them; `fps` by round; `clip`: frame
        count and rate; `refs`: the windows' references; `rounds`: the templates'."""
        frame_evals: dict[str, list[str]] = {}
        summaries = []
        for doc, frames in zip(windows, shown, strict=True):
            metas = {meta["global_frame"]: meta for meta in _metas(frames)[0]}
            for evaluation in doc.get("evaluations", []):
                cited = sorted(i for i in set(evaluation["frame_indices"]) if i in metas)
                if not cited:
                    continue
                times = [metas[i]["time_s"] for i in cited]
                span = f"t={times[0]:.2f}s"
                if times[0] != times[-1]:
                    span = f"t={times[0]:.2f}-{times[-1]:.2f}s"
                line = f"r{doc['round']}b{doc['window']} {span}: {evaluation['comment']}"
                frame_evals.setdefault(f"{cited[0]}-{cited[-1]}", []).append(line)
            first, last = _metas(frames[:1])[0][0], _metas(frames[-1:])[0][0]
            summaries.append(
                {
                    "round": doc["round"],
                    "fps": _whole(fps[doc["round"]]),
                    "batch_idx": doc["window"],
                    "global_frame_range": [first["global_frame"], last["global_frame"]],
                    "time_s_range": [first["time_s"], last["time_s"]],
                }
            )
        ordered = sorted(frame_evals, key=lambda key: tuple(map(int, key.split("-"))))
        count, rate = clip
        messages = self.module._polish_messages(
            self._rubric_text(instance),
            *self._ids(instance).values(),
            count / rate,
            rate,
            {key: frame_evals[key] for key in ordered},
            summaries,
            **self._rubric(instance),
            gt_desc_text=refs.gt_text,
        )
        return _request(messages, {})


def _request(messages: Sequence[Mapping], images: Mapping[str, bytes]):
    """(system prompt, parts) of a builder's chat messages: system messages joined, each
    user text item a text part, each image item the image its key names."""
    from workflow_scripts.judge.client import Part  # the SDK-free part of the client

    system, parts = [], []
    for message in messages:
        content = message["content"]
        if message["role"] == "system":
            system.append(content)
            continue
        for item in [{"type": "text", "text": content}] if isinstance(content, str) else content:
            if item["type"] == "text":
                parts.append(Part.of_text(item["text"]))
                continue
            url = str((item.get("image_url") or {}).get("url", ""))
            known = url.startswith(IMAGE) and url.removeprefix(IMAGE) in images
            if item["type"] != "image_url" or not known:
                raise ValueError(f"{SETTING}: a message item not understood: {item!r:.200}")
            parts.append(Part.of_image(images[url.removeprefix(IMAGE)]))
    return "\n\n".join(system) or None, tuple(parts)
