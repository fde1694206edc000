"""Runway Gen-4.5 through runwayml (`image_to_video.create`, `tasks.retrieve`).

The first frame goes inline as a data URI (`promptImage`, at most 5 MB). A task is
PENDING, THROTTLED (over the organisation's concurrency: queued by Runway) or RUNNING,
then SUCCEEDED with the video's link in `output` (signed, it expires within 24-48 h: each
poll retrieves the task again, so the link downloaded is a fresh one), FAILED with
`failure` and `failureCode` (`SAFETY.INPUT.*` / `SAFETY.OUTPUT.*`: content moderation, a
refusal, charged like a video), or CANCELLED (cancelled or deleted in the console: never
a video, so it is handled as an operation Runway no longer knows). Runway refuses nothing
at submission: moderation comes as a FAILED task. The SDK's own `wait_for_task_output`
never stops on CANCELLED; the shared operation polls instead. Runway documents no answer
for a retired model, so only HTTP 410 counts as one.
"""

from __future__ import annotations

from pathlib import Path

from workflow_scripts.common.http import ServiceError
from workflow_scripts.paid.download import LinkGone, fetch
from workflow_scripts.video_api.provider import (
    Outcome,
    Retry,
    Setting,
    UnknownOperation,
    VideoProvider,
    data_uri,
)

SUBMIT = "/v1/image_to_video"
RATIOS = ("1280:720", "720:1280", "1104:832", "960:960", "832:1104", "1584:672")  # gen4.5's
RUNNING = ("PENDING", "THROTTLED", "RUNNING")
REFUSAL = "SAFETY."  # the failure codes of content moderation (inputs and outputs)


class Provider(VideoProvider):
    """Runway's Gen-4.5 (image to video): image_to_video.create's parameters."""

    CONSOLE = "https://dev.runwayml.com (Usage)"

    SETTINGS = {
        "ratio": Setting(str, RATIOS, required=True),  # the video's width:height in pixels
        "duration": Setting(int, tuple(range(2, 11)), required=True),
        "seed": Setting(int),
    }
    SIZE_SETTING = "ratio"
    FPS = 24  # not in Runway's API: assumed

    @classmethod
    def resolution(cls, generation: dict) -> str:
        return generation["ratio"]

    @classmethod
    def frame_size(cls, generation: dict) -> tuple[int, int]:
        width, height = generation["ratio"].split(":")
        return int(width), int(height)

    def connect(self, key: str, base_url: str | None, hooks: dict, timeout_s: float) -> None:
        import runwayml  # the SDK: a job's import only (see provider.py)

        self.http = runwayml.DefaultHttpxClient(event_hooks=hooks, timeout=timeout_s)
        self.client = runwayml.RunwayML(
            api_key=key, base_url=base_url, max_retries=0, timeout=timeout_s, http_client=self.http
        )

    def submits(self, request) -> bool:
        return request.method == "POST" and request.url.path.endswith(SUBMIT)

    def submit(self, image: Path, prompt: str) -> str:
        task = self._call(
            self.client.image_to_video.create,
            model=self.model_id,
            prompt_image=data_uri(image),
            prompt_text=prompt,
            **self.generation,
        )
        return task.id

    def poll(self, task_id: str) -> Outcome | None:
        task = self._call(self.client.tasks.retrieve, task_id, known_id=True)
        if task.status in RUNNING:
            return None
        if task.status == "CANCELLED":
            raise UnknownOperation(
                f"task {task_id} is CANCELLED: cancelled or deleted, it makes no video "
                f"({task.cost.credits} credits charged)"
            )
        if task.status == "FAILED":
            code = task.failure_code or ""
            kind = "refused" if code.startswith(REFUSAL) else "failed"
            return Outcome(reason=f"{kind}: {task.failure}{f' ({code})' if code else ''}")
        if not task.output:
            raise ServiceError(f"task {task_id} is {task.status} without an output link")
        return Outcome(video=self.download(task.output[0]))

    def download(self, url: str) -> bytes:
        """The video behind a signed output link (no key: the link carries its signature)."""
        try:
            return fetch(self.http, url, "the video's link")
        except LinkGone as error:
            raise UnknownOperation(f"{error}; output links expire") from None

    def _call(self, method, *args, known_id: bool = False, **kwargs):
        import runwayml

        try:
            return method(*args, **kwargs)
        except runwayml.APIStatusError as error:
            body = error.body
            message = body.get("error") if isinstance(body, dict) else body
            raise self.error_for(
                error.status_code, str(message or error.message), error.response.headers,
                known_id=known_id,
            ) from None  # fmt: skip
        except runwayml.APIConnectionError as error:
            cause = error.__cause__ or error
            raise Retry.unanswered(cause) from None

    def close(self) -> None:
        self.client.close()  # and its httpx client, `self.http`
