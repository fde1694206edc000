"""Kling 3.0 through Kling's REST API (`POST /v1/videos/image2video`, `GET .../{task_id}`),
with our own httpx client: Kling ships no Python SDK.

The key: Kling gives an access key and a secret key; the registry's variable holds both as
`ACCESS_KEY:SECRET_KEY`. Each request carries a fresh token (a JWT signed with the secret,
`iss` the access key, valid 30 minutes); the download of the video (a CDN link) carries none.
The first frame goes as bare base64 (no `data:` prefix); the video keeps its aspect, `mode`
fixes the resolution (std 720p, pro 1080p). A task ends `succeed` with the video's link (kept
30 days: a link gone is an operation the provider no longer knows) or `failed` with
`task_status_msg`, a refusal where it names the risk control. A submission the content
security policy refuses outright is HTTP 400 with code 1301 (`Refused`). The client's
transport makes no retries (httpx's default), and the operation retries what is worth it.
"""

from __future__ import annotations

import base64
import time
from pathlib import Path
from typing import TYPE_CHECKING

from workflow_scripts.common.http import ServiceError
from workflow_scripts.paid.download import LinkGone, fetch
from workflow_scripts.video_api.provider import (
    TIMEOUT_S,
    Outcome,
    Refused,
    Retry,
    Setting,
    UnknownOperation,
    VideoProvider,
    image_payload,
)

if TYPE_CHECKING:  # pandas only for the hints: the jobs never load it
    import pandas as pd

BASE_URL = "https://api-singapore.klingai.com"
TASKS = "/v1/videos/image2video"
HEIGHTS = {"std": 720, "pro": 1080}
TOKEN_S = 1800  # a token's validity, as Kling's docs sign it
CONTENT_POLICY = 1301  # a submission refused by the content security policy
ACCOUNT = (1100, 1101, 1102, 1304)  # HTTP 429, yet no retry helps: the account, the IP
REFUSALS = ("risk control", "content security", "sensitive")  # in a failed task's message
SMALLEST_SIDE, WIDEST = 300, 2.5  # the images Kling takes: px, and aspect either way


class Provider(VideoProvider):
    """Kling's image-to-video task: its request body's fields."""

    CONSOLE = "https://app.klingai.com/global/dev (API usage)"

    SETTINGS = {
        "mode": Setting(str, tuple(HEIGHTS), required=True),
        "duration": Setting(str, tuple(str(seconds) for seconds in range(3, 16)), required=True),
        "sound": Setting(str, ("on", "off")),
        "negative_prompt": Setting(str),
    }
    SIZE_SETTING = "mode"  # the video keeps the image's aspect; mode fixes its resolution
    FPS = 24  # not in Kling's API: the paper's Table 10

    @classmethod
    def resolution(cls, generation: dict) -> str:
        return f"{HEIGHTS[generation['mode']]}p"

    @classmethod
    def frame_size(cls, generation: dict) -> tuple[int, int]:
        """(width, height) of the video of a 16:9 image, as the benchmark's are."""
        height = HEIGHTS[generation["mode"]]
        return height * 16 // 9, height

    @classmethod
    def image_problems(cls, key: str, generation: dict, sizes: pd.Series) -> list[str]:
        """Each instance whose image Kling does not take (any aspect it takes is the video's)."""
        found = []
        for instance, (width, height) in sizes.items():
            if min(width, height) < SMALLEST_SIDE or max(width / height, height / width) > WIDEST:
                found.append(
                    f"{instance}: input image is {width}x{height}, which model {key!r} (Kling) "
                    f"does not take: at least {SMALLEST_SIDE} px a side, aspect at most "
                    f"{WIDEST}:1 either way"
                )
        return found

    def __init__(self, spec, key: str, pace=None, timeout_s: float = TIMEOUT_S) -> None:
        self.key_env = spec.api_key_env  # named where the key is not ACCESS_KEY:SECRET_KEY
        super().__init__(spec, key, pace, timeout_s)

    def connect(self, key: str, base_url: str | None, hooks: dict, timeout_s: float) -> None:
        import httpx

        self.access_key, _, self.secret_key = key.partition(":")
        self.http = httpx.Client(base_url=base_url or BASE_URL, event_hooks=hooks,
                                 timeout=timeout_s)  # fmt: skip

    def submits(self, request) -> bool:
        return request.method == "POST" and request.url.path.endswith(TASKS)

    def submit(self, image: Path, prompt: str) -> str:
        body = {
            "model_name": self.model_id,
            "image": base64.b64encode(image_payload(image)[0]).decode(),
            "prompt": prompt,
            **self.generation,
        }
        return self._api("POST", TASKS, json=body)["task_id"]

    def poll(self, task_id: str) -> Outcome | None:
        task = self._api("GET", f"{TASKS}/{task_id}", known_id=True)
        status = task["task_status"]
        if status in ("submitted", "processing"):
            return None
        if status == "failed":
            message = task.get("task_status_msg") or "no reason given"
            refused = any(word in message.lower() for word in REFUSALS)
            return Outcome(reason=f"{'refused' if refused else 'failed'}: {message}")
        if status != "succeed":
            raise ServiceError(f"task {task_id}: a status Kling does not document: {status!r}")
        videos = (task.get("task_result") or {}).get("videos")
        if not videos:
            return Outcome(reason="failed: the task succeeded without a video")
        return Outcome(video=self.download(videos[0]["url"]))

    def download(self, url: str) -> bytes:
        """The video's bytes from its link (no token: the link is the CDN's)."""
        try:
            return fetch(self.http, url, "the video's link")
        except LinkGone as error:
            raise UnknownOperation(f"{error}; videos are kept 30 days") from None

    def _token(self) -> str:
        """A fresh token: HS256, signed with the secret key, `iss` the access key."""
        import jwt

        if not (self.access_key and self.secret_key):
            raise ServiceError(
                f"${self.key_env} must hold Kling's access key and secret key joined by a "
                "colon, ACCESS_KEY:SECRET_KEY (its value has no colon, or nothing on one side)"
            )
        now = int(time.time())
        claims = {"iss": self.access_key, "exp": now + TOKEN_S, "nbf": now - 5}
        return jwt.encode(claims, self.secret_key, algorithm="HS256",
                          headers={"alg": "HS256", "typ": "JWT"})  # fmt: skip

    def _api(self, method: str, path: str, known_id: bool = False, **kwargs) -> dict:
        """The `data` of Kling's answer; its error answers as the provider's exceptions."""
        headers = {"Authorization": f"Bearer {self._token()}"}
        response = self._send(method, path, headers=headers, **kwargs)
        try:
            body = response.json()
        except ValueError:
            body = None
        body = body if isinstance(body, dict) else {}
        code = body.get("code")
        if response.is_success and code == 0:
            return body["data"]
        message = body.get("message") or response.reason_phrase
        if code == CONTENT_POLICY and method == "POST":
            raise Refused(f"{message} (code {code})", billed=False)
        if code in ACCOUNT:
            raise ServiceError(f"HTTP {response.status_code} {code}: {message}")
        code = None if code is None else str(code)
        raise self.error_for(response.status_code, message, response.headers, code, known_id)

    def _send(self, method: str, url: str, **kwargs):
        import httpx

        try:
            return self.http.request(method, url, **kwargs)
        except httpx.TransportError as error:
            raise Retry.unanswered(error) from None

    def close(self) -> None:
        self.http.close()
