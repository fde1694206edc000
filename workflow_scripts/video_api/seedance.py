"""Seedance 2.0 through BytePlus ModelArk's Ark runtime (`content_generation.tasks.create`,
`content_generation.tasks.get`), package byteplus-python-sdk-v2.

The first frame goes inline as a base64 data URI (`image_url`, role `first_frame`). A task
is queued, running, then succeeded (its video at `content.video_url`, a signed storage link
kept 24 hours, fetched without the key), failed (`error` with the service's code), expired
(it timed out before running) or cancelled; the task itself is listed for 7 days. An input
the safety filter refuses is answered at submission, HTTP 400 with a
`...SensitiveContentDetected` code (`Refused`: no task, nothing billed); a finished video it
refuses is a failed task with such a code. Expired or cancelled tasks, and a video link past
its 24 hours, are an `UnknownOperation`: the service holds no video of it any more.
"""

from __future__ import annotations

from pathlib import Path

from workflow_scripts.common.http import ServiceError
from workflow_scripts.paid.clients import ark_client
from workflow_scripts.paid.download import LinkGone, fetch
from workflow_scripts.video_api.provider import (
    Outcome,
    Refused,
    Retry,
    Setting,
    UnknownOperation,
    VideoProvider,
    data_uri,
)

SUBMIT = "/contents/generations/tasks"
REFUSAL = "SensitiveContentDetected"  # in an error code: the safety filter (input or output)
RATIOS = ("16:9", "4:3", "1:1", "3:4", "9:16", "21:9")
SIZES = {  # width x height by resolution, in the order of RATIOS, as ModelArk documents them
    "480p": "864x496 752x560 640x640 560x752 496x864 992x432",
    "720p": "1280x720 1112x834 960x960 834x1112 720x1280 1470x630",
    "1080p": "1920x1080 1664x1248 1440x1440 1248x1664 1080x1920 2206x946",
}


class Provider(VideoProvider):
    """BytePlus ModelArk's Seedance 2.0 (image to video): tasks.create's parameters."""

    CONSOLE = "https://console.byteplus.com/ark (Billing, Bills)"

    SETTINGS = {
        "ratio": Setting(str, RATIOS, required=True),
        "resolution": Setting(str, tuple(SIZES)),
        "duration": Setting(int, tuple(range(4, 16)), required=True),
        "generate_audio": Setting(bool),
        "watermark": Setting(bool),
        "seed": Setting(int),
    }
    SIZE_SETTING = "ratio"
    FPS = 24  # Seedance's documented rate

    @classmethod
    def resolution(cls, generation: dict) -> str:
        return generation.get("resolution", "720p")

    @classmethod
    def frame_size(cls, generation: dict) -> tuple[int, int]:
        sizes = SIZES[cls.resolution(generation)].split()
        width, height = sizes[RATIOS.index(generation["ratio"])].split("x")
        return int(width), int(height)

    @classmethod
    def rule_problems(cls, model_id: str, generation: dict) -> list[str]:
        if cls.resolution(generation) == "1080p" and "fast" in model_id:
            return [f"resolution: '1080p' is refused by {model_id!r} (480p, 720p)"]
        return []

    @classmethod
    def image_problems(cls, key: str, generation: dict, sizes) -> list[str]:
        # the aspect asked for is `ratio`: 720p's sizes have it exactly (480p's are rounded
        # to multiples of 16: 864x496 for 16:9)
        return super().image_problems(key, generation | {"resolution": "720p"}, sizes)

    def connect(self, key: str, base_url: str | None, hooks: dict, timeout_s: float) -> None:
        self.client, self.http = ark_client(key, base_url, hooks, timeout_s)

    def submits(self, request) -> bool:
        return request.method == "POST" and request.url.path.endswith(SUBMIT)

    def submit(self, image: Path, prompt: str) -> str:
        frame = {"url": data_uri(image)}
        content = [
            {"type": "text", "text": prompt},
            {"type": "image_url", "image_url": frame, "role": "first_frame"},
        ]
        tasks = self.client.content_generation.tasks
        task = self._call(tasks.create, model=self.model_id, content=content, **self.generation)
        return task.id

    def poll(self, task_id: str) -> Outcome | None:
        tasks = self.client.content_generation.tasks
        task = self._call(tasks.get, task_id=task_id, known_id=True)
        if task.status in ("queued", "running"):
            return None
        if task.status == "succeeded":
            return Outcome(video=self.download(task.content.video_url))
        if task.status == "failed":
            code, message = (task.error.code, task.error.message) if task.error else ("", "")
            kind = "refused" if REFUSAL in (code or "") else "failed"
            return Outcome(reason=f"{kind}: {message or 'no reason given'} ({code or 'no code'})")
        if task.status in ("expired", "cancelled"):
            raise UnknownOperation(f"the task ended {task.status}, without a video")
        raise ServiceError(f"task {task_id}: unknown status {task.status!r}")

    def download(self, url: str) -> bytes:
        """The video at its signed link (no key: the link carries its own signature)."""
        try:
            return fetch(self.http, url, "the video's link")
        except LinkGone as error:
            raise UnknownOperation(f"{error}; links are kept 24 hours") from None

    def _call(self, method, *args, known_id: bool = False, **kwargs):
        from byteplussdkarkruntime._exceptions import ArkAPIConnectionError, ArkAPIStatusError

        try:
            return method(*args, **kwargs)
        except ArkAPIStatusError as error:
            body = error.body if isinstance(error.body, dict) else {}
            message, code = body.get("message") or error.message, error.code
            if error.status_code == 400 and REFUSAL in (code or "") and not known_id:
                raise Refused(f"{message} ({code})", billed=False) from None  # a submission refused
            raise self.error_for(
                error.status_code, message, error.response.headers, code, known_id
            ) from None
        except ArkAPIConnectionError as error:
            raise Retry.unanswered(error.__cause__ or error) from None

    def close(self) -> None:
        self.client.close()  # and its httpx client, self.http
