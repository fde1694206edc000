"""Wan 2.7 through dashscope's 2.0 client (`videos.jobs.create`, `videos.jobs.fetch`) on
Alibaba Cloud Model Studio.

The first frame goes to the service's temporary storage first, through the SDK's own
uploader (an upload certificate from `GET /uploads?action=getPolicy`, then a form upload to
the storage host it names; the file is kept 48 h), and the `first_frame` item of `media`
(the media protocol wan2.7-i2v answers on) names it by its `oss://` URL: the media
protocol documents public HTTP(S) and temporary `oss://` URLs, not inline data. Nothing is
submitted before the upload, so an upload that fails is a request not taken. The client
is the SDK's own httpx client, its retries off and our pacing hook attached; the 1.x
`VideoSynthesis` is not used (it takes its endpoint from a module global). A task
answers PENDING, RUNNING, then SUCCEEDED with a signed link to the video (fetched without
the key), FAILED with a code and message (`DataInspectionFailed`: a refusal), CANCELED
(cancelled while still PENDING: never a video), or UNKNOWN for a task id the service no
longer knows (kept 24 h); these two are handled as an operation the provider no longer
knows. A submission refused
by the content inspection is HTTP 400 `DataInspectionFailed`. The video takes its aspect
from the input image: `resolution` names the tier, which is 1280x720 (720P) or 1920x1080
(1080P) for the 16:9 images the checks require.
"""

from __future__ import annotations

from pathlib import Path

from workflow_scripts.paid.clients import dashscope_client, dashscope_refusal
from workflow_scripts.paid.download import LinkGone, fetch
from workflow_scripts.video_api.provider import (
    Outcome,
    Refused,
    Retry,
    Setting,
    UnknownOperation,
    VideoProvider,
)

SUBMIT = "/services/aigc/video-generation/video-synthesis"
FRAMES = {"720P": (1280, 720), "1080P": (1920, 1080)}  # a 16:9 first frame
RUNNING = ("PENDING", "RUNNING")
GONE = {  # statuses of a task that will never have a video: handled as an expired one
    "UNKNOWN": "expired after 24 h, or never made",
    "CANCELED": "cancelled while still pending, it makes no video",
}


def reason(code: str | None, message: str | None) -> str:
    """`refused: ...` or `failed: ...`, with the service's message and code."""
    kind = "refused" if dashscope_refusal(code) else "failed"
    return f"{kind}: {message or 'no reason given'} ({code or 'no code'})"


class Provider(VideoProvider):
    """Alibaba's Wan 2.7 image to video: the media protocol's parameters (and its
    `negative_prompt`, an input field)."""

    CONSOLE = "https://modelstudio.console.alibabacloud.com (Billing, Usage)"

    SETTINGS = {
        "resolution": Setting(str, tuple(FRAMES), required=True),
        "duration": Setting(int, tuple(range(2, 16)), required=True),
        "prompt_extend": Setting(bool),
        "watermark": Setting(bool),
        "seed": Setting(int),
        "negative_prompt": Setting(str),
    }
    SIZE_SETTING = "resolution"
    FPS = 30  # the paper's Table 10

    @classmethod
    def resolution(cls, generation: dict) -> str:
        return generation["resolution"]

    @classmethod
    def frame_size(cls, generation: dict) -> tuple[int, int]:
        return FRAMES[generation["resolution"]]

    def connect(self, key: str, base_url: str | None, hooks: dict, timeout_s: float) -> None:
        import httpx  # the SDK's (dashscope 2.0 sends through httpx): a job's import only

        self.client = dashscope_client(key, base_url, hooks, timeout_s)
        self.timeout_s = timeout_s
        self.downloads = httpx.Client(timeout=timeout_s, follow_redirects=True)  # no key

    def submits(self, request) -> bool:
        return request.method == "POST" and request.url.path.endswith(SUBMIT)

    def submit(self, image: Path, prompt: str) -> str:
        settings = dict(self.generation)
        negative = settings.pop("negative_prompt", None)
        job = self._call(
            self.client.videos.jobs.create,
            model=self.model_id,
            prompt=prompt,
            media=[{"type": "first_frame", "url": self.upload(image)}],
            extra_input={"negative_prompt": negative} if negative else None,
            **settings,
        )
        return job.task_id

    def upload(self, image: Path) -> str:
        """The `oss://` URL of `image` in Model Studio's temporary storage, by the SDK's
        uploader (it sends through `requests`, outside the pacing window: no submission)."""
        import requests
        from dashscope.common.error import UploadFileException
        from dashscope.utils.oss_utils import OssUtils

        config = self.client.config
        try:
            answer = OssUtils.get_upload_certificate(
                self.model_id, config.api_key, base_address=config.base_url,
                request_timeout=self.timeout_s,
            )  # fmt: skip
            if answer.status_code != 200:
                raise self.error_for(
                    answer.status_code, answer.message, answer.headers, answer.code
                )
            url, _ = OssUtils.upload(self.model_id, str(image), config.api_key, answer.output)
        except (requests.RequestException, UploadFileException) as error:
            raise Retry(f"upload not done: {type(error).__name__}: {error}"[:300]) from None
        return url

    def poll(self, task_id: str) -> Outcome | None:
        from dashscope.v2.errors import DashScopeError

        try:
            job = self._call(self.client.videos.jobs.fetch, task_id, known_id=True)
        except DashScopeError as error:  # the SDK raises a FAILED task (its HTTP 200 answer)
            if error.status_code != 200:
                raise
            return Outcome(reason=reason(error.code, error.message))
        if job.status in RUNNING:
            return None
        if job.status in GONE:
            raise UnknownOperation(f"task {task_id} is {job.status}: {GONE[job.status]}")
        if job.status != "SUCCEEDED" or not job.video_url:
            return Outcome(reason=reason(job.code, job.message or f"task {job.status}, no video"))
        return Outcome(video=self.download(job.video_url))

    def download(self, url: str) -> bytes:
        """The video behind the task's signed link (valid 24 h), fetched without the key."""
        try:
            return fetch(self.downloads, url, "the video's link")
        except LinkGone as error:
            raise UnknownOperation(f"{error}; links are kept 24 hours") from None

    def _call(self, method, *args, known_id: bool = False, **kwargs):
        """`method`'s answer; its HTTP errors as ours (a refused submission: `Refused`). A
        business failure answered with HTTP 200 (a FAILED task) stays the SDK's error."""
        from dashscope.v2 import errors

        try:
            return method(*args, **kwargs)
        except errors.APIConnectionError as error:  # the SDK's, from httpx's (its cause)
            raise Retry.unanswered(error.__cause__ or error) from None
        except errors.APIStatusError as error:
            status, code, message = error.status_code, error.code, error.message
            if status == 200:
                raise
            if status == 400 and reason(code, message).startswith("refused"):
                raise Refused(reason(code, message), billed=False) from None
            raise self.error_for(status, message, error.headers, code, known_id) from None

    def close(self) -> None:
        self.client.close()
        self.downloads.close()
