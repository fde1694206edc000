"""Wan 2.7 on Model Studio as dashscope's 2.0 client sends it. The first frame is uploaded
first: `GET /api/v1/uploads?action=getPolicy&model=...` (the key) answers an upload
certificate whose `upload_host` is this server's `/dashscope-file` (the storage bucket: a
form upload checked against the certificate's policy and signature, not the key), and the
file is then `oss://<upload_dir>/<name>`. `POST /api/v1/services/aigc/video-generation/
video-synthesis` (JSON, `X-DashScope-Async: enable` required, the `first_frame` item of
`input.media` an `oss://` URL of an uploaded file with `X-DashScope-OssResourceResolve:
enable`; anything else, a data URI included, is a URL it cannot read) answers the task PENDING;
`GET /api/v1/tasks/{id}` answers it PENDING, RUNNING, then SUCCEEDED with a signed link to
the video in `output.video_url` (served here without the key, as the storage bucket serves
it), FAILED with `code` and `message` in `output` (`DataInspectionFailed` for a refused
input), or CANCELED (an operation whose outcome is `cancelled`); a task it does not know is
HTTP 200 with status UNKNOWN, not 404. A prompt in `inspected` is refused at submission
(HTTP 400 `DataInspectionFailed`, no task). Errors are `{"request_id", "code", "message"}`;
the key: a bearer token. Model Studio documents no answer for a retired model: one in
`fake.retired` is answered as a model it does not know.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import time
import uuid
from email import message_from_bytes, policy

from tests.support.video_doubles.base import Double as Base

REFUSAL = (
    "Input data may contain inappropriate content. For details, see: "
    "https://www.alibabacloud.com/help/en/model-studio/error-code#inappropriate-content"
)
CODES = {400: "InvalidParameter", 401: "InvalidApiKey", 403: "AccessDenied", 404: "NotFound",
         429: "Throttling.RateQuota", 500: "InternalError"}  # fmt: skip
RESOLUTIONS = ("720P", "1080P")
DURATIONS = range(2, 16)
VIDEOS = "/dashscope-result/"
STORAGE = "/dashscope-file"
BAD_URL = "url error, please check url!"


def stamp(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S.000", time.localtime(seconds))


class Double(Base):
    provider = "wan27"
    refusal = REFUSAL
    price = 0.10
    route = re.compile(
        r"/api/v1/(?:services/aigc/video-generation/(?P<submit>video-synthesis)"
        r"|tasks/(?P<task>[^/]+)|(?P<uploads>uploads))|/dashscope-result/(?P<video>[^/]+)\.mp4"
        r"|(?P<storage>/dashscope-file)"
    )

    def __init__(self) -> None:
        self.inspected: set[str] = set()  # prompts refused at submission
        self.policies: dict[str, str] = {}  # an upload certificate's policy -> its upload_dir
        self.stored: dict[str, bytes] = {}  # the bucket: object key -> the uploaded file

    def base_url(self, url: str) -> str:
        return f"{url}/api/v1"

    def short(self, generation: dict) -> dict:
        return generation | {"duration": 2}

    def signed(self, path: str) -> bool:
        return path.startswith((VIDEOS, STORAGE))

    def error(self, status: int, message: str, code: str | None = None) -> dict:
        return {"request_id": str(uuid.uuid4()), "code": code or CODES.get(status, "Error"),
                "message": message}  # fmt: skip

    def operation_id(self, number: int, model: str) -> str:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"wan27/{number}"))

    def handle(self, fake, method, match, body, headers):
        if match["video"]:
            op = fake.operations.get(match["video"])
            if op is None or op.outcome != "ok" or op.polls_left > 0:
                return 404, self.error(404, "The specified key does not exist.", "NoSuchKey")
            return 200, fake.video(op)
        if match["uploads"]:
            return 200, {"request_id": str(uuid.uuid4()), "data": self._certificate(fake)}
        if match["storage"]:
            return self._store(body, headers)
        if match["submit"]:
            return self._create(fake, json.loads(body), headers)
        op = fake.poll(match["task"])
        return 200, {"request_id": str(uuid.uuid4()), **self._task(fake, match["task"], op)}

    def _create(self, fake, request: dict, headers):
        if headers.get("x-dashscope-async") != "enable":
            message = "current user api does not support synchronous calls"
            return 403, self.error(403, message)
        model, given = request["model"], request["input"]
        if model in fake.retired or not model.startswith("wan2.7-i2v"):
            return 400, self.error(400, "Model not exist.")
        frames = [m["url"] for m in given.get("media", []) if m["type"] == "first_frame"]
        resolved = headers.get("x-dashscope-ossresourceresolve") == "enable"
        key = frames[0].removeprefix("oss://") if len(frames) == 1 and resolved else None
        if key not in self.stored:
            return 400, self.error(400, BAD_URL)
        parameters = request.get("parameters", {})
        seconds = parameters.get("duration", 5)
        if parameters.get("resolution", "1080P") not in RESOLUTIONS or seconds not in DURATIONS:
            return 400, self.error(400, f"The parameters are not valid: {parameters}")
        if given.get("prompt") in self.inspected:
            return 400, self.error(400, REFUSAL, "DataInspectionFailed")
        image = self.stored[key]
        op = fake.submit(self, model, given.get("prompt", ""), image, seconds, parameters)
        return 200, {"request_id": str(uuid.uuid4()),
                     "output": {"task_id": op.id, "task_status": "PENDING"}}  # fmt: skip

    def _certificate(self, fake) -> dict:
        """An upload certificate: a signed policy for one new folder of the bucket."""
        upload_dir = f"dashscope-instant/{uuid.uuid4().hex}/{time.strftime('%Y-%m-%d')}"
        document = {"expiration": stamp(time.time() + 300), "conditions": [
            ["starts-with", "$key", upload_dir]]}  # fmt: skip
        signed = base64.b64encode(json.dumps(document).encode()).decode()
        self.policies[signed] = upload_dir
        return {"policy": signed, "signature": self._signature(signed), "upload_dir": upload_dir,
                "upload_host": f"{fake.url}{STORAGE}", "expire_in_seconds": 300,
                "max_file_size_mb": 100, "capacity_limit_mb": 999999999,
                "oss_access_key_id": "LTAI5tDoubleKeyId", "x_oss_object_acl": "private",
                "x_oss_forbid_overwrite": "true"}  # fmt: skip

    def _signature(self, signed_policy: str) -> str:
        digest = hmac.new(self.api_key.encode(), signed_policy.encode(), hashlib.sha1).digest()
        return base64.b64encode(digest).decode()

    def _store(self, body: bytes, headers):
        """A form upload to the bucket, as OSS takes it: 403 for a policy it did not sign or a
        key outside its folder, 409 for a key that exists (`x-oss-forbid-overwrite`)."""
        head = f"Content-Type: {headers.get('content-type')}\r\n\r\n".encode()
        form = message_from_bytes(head + body, policy=policy.HTTP)
        fields = {part.get_param("name", header="content-disposition"):
                  part.get_payload(decode=True) for part in form.iter_parts()}  # fmt: skip
        signed, key = fields["policy"].decode(), fields["key"].decode()
        upload_dir = self.policies.get(signed)
        valid = upload_dir and fields["Signature"].decode() == self._signature(signed)
        if not valid or not key.startswith(f"{upload_dir}/"):
            return 403, self.error(403, "Invalid according to Policy", "AccessDenied")
        if key in self.stored:
            return 409, self.error(
                409, "The object you specified already exists", "FileAlreadyExists"
            )
        self.stored[key] = fields["file"]
        return 200, b""

    def _task(self, fake, task_id: str, op) -> dict:
        if op is None:  # expired after 24 h, or never made: no 404
            return {"output": {"task_id": task_id, "task_status": "UNKNOWN"}}
        output = {"task_id": op.id, "submit_time": stamp(op.created)}
        if op.polls_left > 0:
            status = "PENDING" if op.polls_left == fake.polls - 1 else "RUNNING"
            return {"output": output | {"task_status": status}}
        output |= {"scheduled_time": stamp(op.created), "end_time": stamp(time.time())}
        if op.outcome == "ok":
            link = f"{fake.url}{VIDEOS}{op.id}.mp4?Expires={int(time.time()) + 86400}&Signature=s"
            usage = {"duration": op.seconds, "video_count": 1}
            output |= {"task_status": "SUCCEEDED", "orig_prompt": op.prompt, "video_url": link}
            return {"output": output, "usage": usage}
        if op.outcome == "cancelled":
            return {"output": output | {"task_status": "CANCELED"}}
        refused = op.outcome == "refused"
        code = "DataInspectionFailed" if refused else "InternalError.Algo"
        message = REFUSAL if refused else "An internal error occurred while generating the video."
        return {"output": output | {"task_status": "FAILED", "code": code, "message": message}}
