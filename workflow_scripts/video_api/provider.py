"""`VideoProvider`: what a commercial video model's service must say and do, subclassed
once per provider in its own module of this package (registered in `providers.PROVIDERS`).

The class side is read when the workflow starts, with no SDK imported (a provider's
module imports its SDK inside its methods: seconds at every command otherwise): the
settings it takes (`SETTINGS`, named as its SDK names them, with their allowed values),
the seconds, resolution and frame size a generation asks for, its nominal frame rate, and
the checks of a registry entry's settings and of the input images' aspect.

The instance is one job's client: `submit(image, prompt) -> operation id` and
`poll(id) -> Outcome | None` (None: still running; else the video downloaded, or the
provider's reason for none), `close()`; a submission the service refuses outright raises
`Refused` with its reason. Its SDK's HTTP client counts each submission in
the run's shared pacing window right before it is sent (`submits` picks them); polls are
not counted. A service's error answer becomes one of the exceptions below
(`error_for`), so that the shared operation (`operation.py`) knows what was taken.
"""

from __future__ import annotations

import base64
import mimetypes
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from vgi_models.input_image import model_image_bytes
from workflow_scripts.common.http import Answer, ServiceError, answer_of, request_hooks, retry_after
from workflow_scripts.common.keys import IMPORT_VIDEOS

if TYPE_CHECKING:  # pandas only for the hints: the jobs never load it
    import pandas as pd

ASPECT_TOLERANCE = 0.02  # relative: 1280x720 and 1920x1088 both fit 16:9


def image_mime(image: Path) -> str:
    """The media type of an input image file, by its extension (PNG where unknown)."""
    return mimetypes.guess_type(str(image))[0] or "image/png"


def image_payload(image: Path) -> tuple[bytes, str]:
    """The bytes and media type an API is sent for an input image: the file itself, or a
    PNG of what it shows where the file is 16-bit or transparent (`vgi_models.input_image`)."""
    return model_image_bytes(image, image_mime(image))


def data_uri(image: Path) -> str:
    """An input image inline: `data:<type>;base64,<bytes>`."""
    data, mime = image_payload(image)
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


@dataclass(frozen=True)
class Outcome:
    """A finished operation: the video's bytes, or the provider's reason for none."""

    video: bytes | None = None
    reason: str | None = None  # `refused: ...` (a safety filter, a policy) or `failed: ...`

    @property
    def ok(self) -> bool:
        return self.video is not None


class Retry(Exception):
    """Worth another attempt later (HTTP 429, 5xx, a dropped connection): `after` seconds,
    the server's hint when it gave one. `unsure`: no answer came to a request that may have
    reached the server (a timeout, a connection dropped mid-request)."""

    def __init__(self, reason: str, after: float | None = None, unsure: bool = False) -> None:
        super().__init__(reason)
        self.after, self.unsure = after, unsure

    @classmethod
    def unanswered(cls, error: BaseException) -> Retry:
        """A request left unanswered (an httpx or httpx2 transport error, the SDKs' own
        clients): not taken where its connection never opened (a connect error or connect
        timeout), else unsure: it may have reached the server."""
        import httpx
        import httpx2

        never = (
            httpx.ConnectError,
            httpx.ConnectTimeout,
            httpx2.ConnectError,
            httpx2.ConnectTimeout,
        )
        if isinstance(error, never):
            return cls(f"connection failed: {type(error).__name__}: {error}")
        return cls(f"no answer: {type(error).__name__}", unsure=True)


class Refused(Exception):
    """The service refused the submission itself (a safety filter on the input, a policy):
    no operation was made and none is billed; `reason` is the instance's recorded error."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason if reason.startswith("refused: ") else f"refused: {reason}"


class UnknownOperation(Exception):
    """The provider no longer knows the operation (expired, or never known: HTTP 404)."""


class RetiredModel(ServiceError):
    """The service answers that the model is retired: no video of it can be made now."""

    def __init__(self, model_id: str, answer: str) -> None:
        super().__init__(
            f"model {model_id!r} is retired: the service no longer makes its videos ({answer}). "
            f"Videos made before can still be judged: register their folder as a model with "
            f"`source: videos` ({IMPORT_VIDEOS})"
        )


@dataclass(frozen=True)
class Setting:
    """One setting: its allowed values (None: any of `kind`), and whether it is required."""

    kind: type | tuple[type, ...]
    allowed: tuple | None = None
    required: bool = False


class SettingChecks:
    """A provider's settings (`SETTINGS`, by SDK name) and the checks of a registry entry's
    `generation` against them, with no SDK imported (the image API providers share them)."""

    SETTINGS: dict[str, Setting] = {}  # the registry entry's `generation`, by SDK name

    @classmethod
    def rule_problems(cls, model_id: str, generation: dict) -> list[str]:
        """Problems of allowed values that the service refuses together, each
        '<setting>: <why>' (none by default)."""
        return []

    @classmethod
    def setting_problems(cls, key: str, name: str, model_id: str, generation: dict) -> list[str]:
        """Every setting of model `key` (provider `name`) the provider does not allow, each
        naming the key and the allowed values."""
        allowed, found = cls.SETTINGS, []
        where = f"model {key!r} (provider {name}): generation"
        for unknown in generation.keys() - allowed.keys():
            found.append(f"{where}.{unknown} is not a {name} setting ({', '.join(allowed)})")
        for setting_name, setting in allowed.items():
            if setting_name not in generation:
                if setting.required:
                    found.append(f"{where}.{setting_name} is required")
                continue
            value, kinds = generation[setting_name], setting.kind
            if not isinstance(value, kinds) or (kinds is int and isinstance(value, bool)):
                kinds = kinds if isinstance(kinds, tuple) else (kinds,)
                names = " or ".join(kind.__name__ for kind in kinds)
                found.append(f"{where}.{setting_name}: {value!r} is not a {names}")
            elif setting.allowed and value not in setting.allowed:
                values = ", ".join(map(repr, setting.allowed))
                found.append(f"{where}.{setting_name}: {value!r} is not allowed ({values})")
        if found:
            return found
        return [f"{where}.{problem}" for problem in cls.rule_problems(model_id, generation)]


class VideoProvider(SettingChecks, ABC):
    """A video model's service (the module docstring); a subclass fills in the class
    attributes and every abstract method."""

    SIZE_SETTING: str  # the setting that fixes the aspect (named where an image misfits)
    DURATION_SETTING: str = "duration"  # the setting in seconds of video (what is billed)
    FPS: int  # the frame rate its videos come at (the plan's estimate before any exists)

    # -- the class side: a registry entry's settings, no SDK ------------------------------

    @classmethod
    def seconds(cls, generation: dict) -> int:
        """The seconds of video one submission asks for (what it is billed by)."""
        return int(generation[cls.DURATION_SETTING])

    @classmethod
    @abstractmethod
    def resolution(cls, generation: dict) -> str:
        """The resolution or size one submission asks for (a price table's sub-key)."""

    @classmethod
    @abstractmethod
    def frame_size(cls, generation: dict) -> tuple[int, int]:
        """(width, height) of the video asked for."""

    @classmethod
    def nominal_clip(cls, generation: dict) -> dict:
        """frames, fps, width and height of a video asked for (the plan's estimate)."""
        width, height = cls.frame_size(generation)
        frames = cls.seconds(generation) * cls.FPS
        return {"frames": frames, "fps": cls.FPS, "width": width, "height": height}

    @classmethod
    def image_problems(cls, key: str, generation: dict, sizes: pd.Series) -> list[str]:
        """Each instance (index of `sizes`: (width, height) of its input image) whose image
        does not fit the aspect the settings ask for."""
        width, height = cls.frame_size(generation)
        wanted, name = width / height, cls.SIZE_SETTING
        found = []
        for instance, (width, height) in sizes.items():
            if abs(width / height / wanted - 1) > ASPECT_TOLERANCE:
                found.append(
                    f"{instance}: input image is {width}x{height}, which does not fit "
                    f"generation.{name} {generation[name]!r} of model {key!r}"
                )
        return found

    # -- the instance: one job's client ----------------------------------------------------

    def __init__(self, spec, key: str, pace=None, timeout_s: float = 120.0) -> None:
        self.model_id, self.generation = spec.model_id, spec.generation
        hooks = request_hooks(pace and pace.acquire_blocking, self.submits)
        self.connect(key, spec.base_url, hooks, timeout_s)

    @abstractmethod
    def connect(self, key: str, base_url: str | None, hooks: dict, timeout_s: float) -> None:
        """Make the SDK's client (importing the SDK), its httpx client given `hooks`."""

    @abstractmethod
    def submits(self, request) -> bool:
        """Whether an httpx request is a submission (counted in the pacing window)."""

    @abstractmethod
    def submit(self, image: Path, prompt: str) -> str:
        """Ask for the video of `image` and `prompt`; the operation id."""

    @abstractmethod
    def poll(self, operation_id: str) -> Outcome | None:
        """None while the operation runs; else its outcome (the video downloaded)."""

    @abstractmethod
    def close(self) -> None:
        """Close the SDK's client and its connections."""

    def retired(self, status: int, code: str | None) -> bool:
        """Whether an error answer (HTTP `status`, the service's error `code`) says the
        model is retired: 410 Gone by default; a subclass adds its service's own answer."""
        return status == 410

    def error_for(self, status: int, message: str, headers=None, code: str | None = None,
                  known_id: bool = False) -> Exception:  # fmt: skip
        """The exception for an HTTP error answer; `known_id`: the request was about an
        operation this job submitted, so a 404 says the provider no longer knows it."""
        reason = f"HTTP {status}{f' {code}' if code else ''}: {message}"[:300]
        answer = answer_of(status, message)
        if self.retired(status, code):
            return RetiredModel(self.model_id, reason)
        if answer is Answer.RETRY:
            return Retry(reason, retry_after(headers, message))
        if answer is Answer.NOT_FOUND and known_id:
            return UnknownOperation(reason)
        return ServiceError(reason)
