"""Runway Gen-4.5 as runwayml sends it: `POST /v1/image_to_video` (JSON, the first frame as a
data URI in `promptImage`, at most 5 MB) answers the task's id and `estimatedCost`; `GET
/v1/tasks/{id}` answers it THROTTLED (Runway's own queue past the concurrency limit), then
PENDING, RUNNING, then SUCCEEDED with a signed link to the video in `output` (served here
without the key, as a CDN serves it), or FAILED with `failure` and `failureCode`
(`SAFETY.INPUT.IMAGE` for a refused input, charged; `INTERNAL.BAD_OUTPUT.CODE01` refunded),
or CANCELLED where its image was marked so (`fake.refuse(image, "cancelled")`); a task it
does not know is HTTP 404. The key: a bearer token, with the `X-Runway-Version`
header the API requires. Errors are `{"error": <text>}`. Runway documents no answer for a
retired model: one in `fake.retired` is refused as a model the API does not take (400)."""

from __future__ import annotations

import base64
import json
import re
import uuid
from datetime import datetime, timezone

from tests.support.video_doubles.base import Double as Base

RATIOS = ("1280:720", "720:1280", "1104:832", "960:960", "832:1104", "1584:672")
CREDITS = 12  # gen4.5's credits per second of video (0.01 USD a credit)
DATA_URI = 5 * 1024 * 1024  # bytes of a `promptImage` data URI
PROMPT = 1000  # characters of `promptText`
REFUSAL = "The input image did not pass content moderation."  # Runway documents no wording
QUEUE = ("THROTTLED", "PENDING", "RUNNING")  # by poll, until the task ends


class Double(Base):
    provider = "runway"
    refusal = REFUSAL
    price = 0.12
    route = re.compile(r"/v1/(?:image_to_video|tasks/(?P<id>[^/]+))|/runway/(?P<video>[^/]+)\.mp4")

    def short(self, generation: dict) -> dict:
        return generation | {"duration": 2}

    def signed(self, path: str) -> bool:
        return path.startswith("/runway/")

    def error(self, status: int, message: str, code: str | None = None) -> dict:
        return {"error": message}

    def operation_id(self, number: int, model: str) -> str:
        return str(uuid.UUID(int=number))

    def handle(self, fake, method, match, body, headers):
        if match["video"]:
            op = fake.operations.get(match["video"])
            return (200, fake.video(op)) if op else (404, self.error(404, "Not Found"))
        if headers.get("x-runway-version") is None:
            return 400, self.error(400, "The X-Runway-Version header is required.")
        if match["id"] is None:
            return self._create(fake, json.loads(body))
        op = fake.poll(match["id"])
        if op is None:
            return 404, self.error(404, "Task not found.")
        return 200, self._task(fake, op)

    def _create(self, fake, request: dict):
        model, image = request["model"], request["promptImage"]
        problems = [
            (model in fake.retired, f"Model {model} is not available."),
            (request["ratio"] not in RATIOS, f"Invalid ratio: {request['ratio']}."),
            (request["duration"] not in range(2, 11), "Duration must be an integer from 2 to 10."),
            (len(image) > DATA_URI, "The promptImage data URI is larger than 5MB."),
            (len(request["promptText"]) > PROMPT, "The promptText is over 1000 characters."),
        ]
        problem = next((message for wrong, message in problems if wrong), None)
        if problem:
            return 400, self.error(400, problem)
        data = base64.b64decode(image.split(",", 1)[1])
        settings = {key: request[key] for key in ("ratio", "duration", "seed") if key in request}
        op = fake.submit(self, model, request["promptText"], data, request["duration"], settings)
        return 200, {"id": op.id, "estimatedCost": {"credits": CREDITS * op.seconds}}

    def _task(self, fake, op) -> dict:
        created = datetime.fromtimestamp(op.created, timezone.utc).isoformat()
        task = {"id": op.id, "createdAt": created.replace("+00:00", "Z")}
        credits = CREDITS * op.seconds
        if op.polls_left > 0:
            status = QUEUE[min(max(fake.polls - 1 - op.polls_left, 0), len(QUEUE) - 1)]
            running = {"progress": 0.5} if status == "RUNNING" else {}
            return task | {"status": status, "estimatedCost": {"credits": credits}, **running}
        if op.outcome == "cancelled":  # cancelled or deleted in Runway's console
            return task | {"status": "CANCELLED", "cost": {"credits": 0}}
        if op.outcome == "ok":
            link = f"{fake.url}/runway/{op.id}.mp4"
            return task | {"status": "SUCCEEDED", "cost": {"credits": credits}, "output": [link]}
        refused = op.outcome == "refused"
        return task | {
            "status": "FAILED",
            "cost": {"credits": credits if refused else 0},
            "failure": REFUSAL if refused else "An unexpected error occurred.",
            "failureCode": "SAFETY.INPUT.IMAGE" if refused else "INTERNAL.BAD_OUTPUT.CODE01",
        }
