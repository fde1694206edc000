"""The judge's prompt templates: one text file per system prompt and per request text.

Templates use `string.Template` placeholders (`$name` or `${name}`; `$$` is a literal
`$`), so braces and JSON examples need no escaping. The placeholders each file may use:

    completeness.txt   $task $level $instance $standard $fps $references $frames
    window.txt         $task $goal $checklist $batch $cap $round $references $frames
    verdict.txt        $task $goal $checklist $k $rounds $windows
    verdict_retry.txt  $missing $k   (verdict: strict; appended when a verdict left out items)
    transition.txt     $task $goal $checklist $earlier $later $references $frames
    image.txt          $task $spec $reference_text $answer
                       $input_image $reference_image $generated_image
    *_system.txt       none

`$references` (the input image and the instance's ground truth) and `$frames` (the
sampled frames, each after its index/time line) mark where the images go, and are
required where listed. The image judge's markers put each image after its caption:
`$input_image` and `$generated_image` are required, `$reference_image` is left out
(caption and all) where the instance has no reference image. `judge.prompts: <folder>`
replaces any of these files by name. Light enough to import while Snakemake parses.
"""

from __future__ import annotations

import string
from collections.abc import Iterable
from pathlib import Path

HERE = Path(__file__).parent
PLACEHOLDERS = {
    "completeness_system.txt": (),
    "completeness.txt": ("task", "level", "instance", "standard", "fps", "references", "frames"),
    "window_system.txt": (),
    "window.txt": ("task", "goal", "checklist", "batch", "cap", "round", "references", "frames"),
    "verdict_system.txt": (),
    "verdict.txt": ("task", "goal", "checklist", "k", "rounds", "windows"),
    "verdict_retry.txt": ("missing", "k"),
    "transition_system.txt": (),
    "transition.txt": ("task", "goal", "checklist", "earlier", "later", "references", "frames"),
    "image_system.txt": (),
    "image.txt": ("task", "spec", "reference_text", "answer")
    + ("input_image", "reference_image", "generated_image"),
}
REQUIRED = ("references", "frames", "input_image", "generated_image")
# The templates each call kind reads: what the judge params of its rule hold.
CALLS = {
    "completeness": ("completeness_system.txt", "completeness.txt"),
    "window": ("window_system.txt", "window.txt"),
    "verdict": ("verdict_system.txt", "verdict.txt", "verdict_retry.txt"),
    "transition": ("transition_system.txt", "transition.txt"),
    "image": ("image_system.txt", "image.txt"),
}


def load_templates(folder: str | Path | None, calls: Iterable[str]) -> dict[str, str]:
    """The templates of `calls` by file name, those in `folder` replacing the defaults.

    Raises ValueError naming `judge.prompts` and the file for a file that is no template,
    a placeholder the file may not use, or a required marker it lacks.
    """
    overrides = {}
    if folder is not None:
        folder = Path(folder)
        if not folder.is_dir():
            raise ValueError(f"judge.prompts: {folder} is not a folder")
        for path in sorted(folder.iterdir()):
            if path.name not in PLACEHOLDERS:
                known = ", ".join(PLACEHOLDERS)
                raise ValueError(f"judge.prompts: {path} is not a template (known: {known})")
            overrides[path.name] = path
    templates = {}
    for name in (name for call in calls for name in CALLS[call]):
        path = overrides.get(name, HERE / name)
        text = path.read_text(encoding="utf-8")
        _check(path, text, PLACEHOLDERS[name])
        templates[name] = text
    return templates


def _check(path: Path, text: str, allowed: tuple[str, ...]) -> None:
    template = string.Template(text)
    if not template.is_valid():
        raise ValueError(f"judge.prompts: {path}: a '$' that starts no placeholder (use $$)")
    used = template.get_identifiers()
    if unknown := sorted(set(used) - set(allowed)):
        raise ValueError(
            f"judge.prompts: {path}: unknown placeholder(s) {', '.join(unknown)} "
            f"(this file may use: {', '.join(allowed) or 'none'})"
        )
    if missing := [m for m in REQUIRED if m in allowed and m not in used]:
        raise ValueError(f"judge.prompts: {path}: required placeholder(s) missing: {missing}")
