"""The API keys a run's jobs read (the VLM judge's, a video or image API's), checked once the
DAG is known and before any job runs."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence

VIDEO_API_RULE = "generate_api"  # the one rule whose key is a video API's
IMAGE_API_RULE = "generate_image_api"  # the one rule whose key is an image API's
# Where the docs say how a model's videos (images) made elsewhere come in (`source: videos`).
IMPORT_VIDEOS = "docs/commercial-models.md, 'Videos made elsewhere instead'"
IMPORT_IMAGES = "docs/images.md, 'Image models'"


def missing_key_error(
    jobs: Iterable[tuple[str, str]], targets: Sequence[str], environ: Mapping[str, str]
) -> str | None:
    """The error for the jobs whose key variable is unset, or None when every one is set.

    `jobs`: (rule name, key variable) for each API-calling job about to run; `targets`: what was
    asked for (the message names them, since the rules needing a key come in through them).
    """
    missing: dict[str, Counter] = defaultdict(Counter)
    for rule, variable in jobs:
        if not environ.get(variable, "").strip():
            missing[variable][rule] += 1
    if not missing:
        return None
    asked = ", ".join(targets) or "all"
    lines = [
        f"${variable} is not set: target {asked} needs it for "
        + ", ".join(f"{n} {rule} job{'s' * (n > 1)}" for rule, n in sorted(jobs_of.items()))
        + " (API calls)."
        for variable, jobs_of in sorted(missing.items())
    ]
    rules = {rule for jobs_of in missing.values() for rule in jobs_of}
    ways = []
    if rules - {VIDEO_API_RULE, IMAGE_API_RULE}:
        ways.append(
            "ask for targets without the judge (generate_all, gallery, export_official_all)"
        )
    if VIDEO_API_RULE in rules:
        ways.append(
            "leave the video API models out of `models:` (videos made elsewhere come in as "
            f"`source: videos`: {IMPORT_VIDEOS})"
        )
    if IMAGE_API_RULE in rules:
        ways.append(
            "leave the image API models out of `image_models:` (images made elsewhere come in "
            f"as `source: images`: {IMPORT_IMAGES})"
        )
    return "\n".join(
        [
            *lines,
            "Nothing was run. Export the key (its variable is named by judge.api_key_env, "
            "a variant's api_key_env, or a video or image API model's api_key_env in the "
            "registry), "
            f"or {', or '.join(ways)}.",
        ]
    )
