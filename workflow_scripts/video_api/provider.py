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

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from workflow_scripts.common.http import Answer, ServiceError, answer_of, request_hooks
from workflow_scripts.common.keys import IMPORT_VIDEOS
from workflow_scripts.paid.errors import Refused, Retry, error_answer, reason_of
from workflow_scripts.paid.inputs import data_uri, image_mime, image_payload
from workflow_scripts.paid.settings import Setting, SettingChecks

__all__ = [
    "TIMEOUT_S", "Outcome", "Refused", "RetiredModel", "Retry", "Setting", "SettingChecks",
    "UnknownOperation", "VideoProvider", "data_uri", "image_mime", "image_payload",
]  # fmt: skip

if TYPE_CHECKING:  # pandas only for the hints: the jobs never load it
    import pandas as pd

ASPECT_TOLERANCE = 0.02  # relative: 1280x720 and 1920x1088 both fit 16:9
TIMEOUT_S = 120.0  # video_api.timeout_s's default: seconds one request's answer may take


@dataclass(frozen=True)
class Outcome:
    """A finished operation: the video's bytes, or the provider's reason for none."""

    video: bytes | None = None
    reason: str | None = None  # `refused: ...` (a safety filter, a policy) or `failed: ...`

    @property
    def ok(self) -> bool:
        return self.video is not None


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


class VideoProvider(SettingChecks, ABC):
    """A video model's service (the module docstring); a subclass fills in the class
    attributes and every abstract method."""

    CONSOLE = "the provider's console"  # where the user sees the submissions billed
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

    def __init__(self, spec, key: str, pace=None, timeout_s: float = TIMEOUT_S) -> None:
        self.model_id, self.generation = spec.model_id, spec.generation
        self.pace, self.submissions_sent = pace, 0
        self.connect(key, spec.base_url, request_hooks(self._submitting, self.submits), timeout_s)

    def _submitting(self) -> None:
        """Right before a submission leaves: paced, and counted (`submissions_sent`)."""
        if self.pace:
            self.pace.acquire_blocking()
        self.submissions_sent += 1

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
        operation this job submitted, so a 404 says the provider no longer knows it. A 5xx
        is `Retry` unsure (`paid.errors.error_answer`): a submission answered so is never sent
        again on its own; a poll so answered is polled again."""
        if self.retired(status, code):
            return RetiredModel(self.model_id, reason_of(status, message, code))
        if known_id and answer_of(status, message) is Answer.NOT_FOUND:
            return UnknownOperation(reason_of(status, message, code))
        return error_answer(status, message, headers, code)
