"""A video API model's settings: what each provider allows, checked before any submission.

The settings are the registry entry's `generation`, named as the provider's SDK names them
(google-genai's `GenerateVideosConfig` for Veo, openai's `videos.create` for Sora). Each
problem names the model, the key and the allowed values; an input image whose aspect does
not fit the requested one is named by instance. The image goes in as the open models get
it, converted where the provider needs it (Sora: resized to `size`, as it requires).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

ASPECT_TOLERANCE = 0.02  # relative: 1280x720 and 1920x1088 both fit 16:9


@dataclass(frozen=True)
class Setting:
    """One setting: its allowed values (None: any of `kind`), and whether it is required."""

    kind: type | tuple[type, ...]
    allowed: tuple | None = None
    required: bool = False


PROVIDERS: dict[str, dict[str, Setting]] = {
    # Vertex AI's Veo 3.1 (image to video): GenerateVideosConfig's fields
    "veo": {
        "aspect_ratio": Setting(str, ("16:9", "9:16"), required=True),
        "resolution": Setting(str, ("720p", "1080p")),
        "duration_seconds": Setting(int, (4, 6, 8), required=True),
        "negative_prompt": Setting(str),
        "seed": Setting(int),
        "generate_audio": Setting(bool),
        "enhance_prompt": Setting(bool),
        "person_generation": Setting(str, ("allow_adult", "dont_allow")),
        "resize_mode": Setting(str, ("pad", "crop")),
    },
    # OpenAI's Sora 2: videos.create's parameters
    "sora": {
        "size": Setting(str, ("1280x720", "720x1280", "1792x1024", "1024x1792"), required=True),
        "seconds": Setting(str, ("4", "8", "12"), required=True),
    },
}
SORA_LARGE = ("1792x1024", "1024x1792")  # sora-2-pro only


def seconds_of(provider: str, generation: dict) -> int:
    """The seconds of video one submission asks for (what it is billed by)."""
    return int(generation["duration_seconds" if provider == "veo" else "seconds"])


def resolution_of(provider: str, generation: dict) -> str:
    """The resolution or size one submission asks for (a price table's sub-key)."""
    return generation.get("resolution", "720p") if provider == "veo" else generation["size"]


# The frame rate a provider's videos come at, for the plan's estimate of the judge's calls
# before any video exists (a made video is read instead): Veo's documented 24 fps; Sora's
# rate is not in its API, 30 is assumed.
NOMINAL_FPS = {"veo": 24, "sora": 30}
VEO_HEIGHTS = {"720p": 720, "1080p": 1080}


def frame_size(provider: str, generation: dict) -> tuple[int, int]:
    """(width, height) of the video asked for."""
    if provider == "sora":
        width, height = generation["size"].split("x")
        return int(width), int(height)
    short = VEO_HEIGHTS[generation.get("resolution", "720p")]
    long = short * 16 // 9
    return (long, short) if generation["aspect_ratio"] == "16:9" else (short, long)


def nominal_clip(provider: str, generation: dict) -> dict:
    """frames, fps, width and height of a video asked for (the plan's estimate)."""
    fps = NOMINAL_FPS[provider]
    width, height = frame_size(provider, generation)
    frames = seconds_of(provider, generation) * fps
    return {"frames": frames, "fps": fps, "width": width, "height": height}


def aspect_of(provider: str, generation: dict) -> float:
    """Width over height of the video asked for."""
    width, height = frame_size(provider, generation)
    return width / height


def setting_problems(key: str, provider: str, model_id: str, generation: dict) -> list[str]:
    """Every setting of model `key` its provider does not allow, each naming the key."""
    allowed, found = PROVIDERS[provider], []
    where = f"model {key!r} (provider {provider}): generation"
    for name in generation.keys() - allowed.keys():
        found.append(f"{where}.{name} is not a {provider} setting ({', '.join(allowed)})")
    for name, setting in allowed.items():
        if name not in generation:
            if setting.required:
                found.append(f"{where}.{name} is required")
            continue
        value = generation[name]
        if not isinstance(value, setting.kind) or (setting.kind is int and isinstance(value, bool)):
            kinds = setting.kind if isinstance(setting.kind, tuple) else (setting.kind,)
            names = " or ".join(kind.__name__ for kind in kinds)
            found.append(f"{where}.{name}: {value!r} is not a {names}")
        elif setting.allowed and value not in setting.allowed:
            values = ", ".join(map(repr, setting.allowed))
            found.append(f"{where}.{name}: {value!r} is not allowed ({values})")
    if found:
        return found
    high = provider == "veo" and generation.get("resolution", "720p") != "720p"
    if high and generation["duration_seconds"] != 8:
        found.append(
            f"{where}.duration_seconds: {generation['duration_seconds']} is refused at "
            f"resolution {generation['resolution']} (8 only)"
        )
    if provider == "sora" and generation["size"] in SORA_LARGE and "pro" not in model_id:
        found.append(
            f"{where}.size: {generation['size']!r} needs sora-2-pro, not {model_id!r} "
            "(1280x720, 720x1280)"
        )
    return found


def image_problems(key: str, provider: str, generation: dict, sizes: pd.Series) -> list[str]:
    """Each instance (index of `sizes`: (width, height) of its input image) whose image
    does not fit the aspect the settings ask for."""
    wanted = aspect_of(provider, generation)
    name = "aspect_ratio" if provider == "veo" else "size"
    found = []
    for instance, (width, height) in sizes.items():
        if abs(width / height / wanted - 1) > ASPECT_TOLERANCE:
            found.append(
                f"{instance}: input image is {width}x{height}, which does not fit "
                f"generation.{name} {generation[name]!r} of model {key!r}"
            )
    return found
