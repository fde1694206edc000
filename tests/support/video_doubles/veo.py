"""Veo 3.1 on Vertex AI as google-genai sends it: `POST /v1beta1/publishers/google/models/
{model}:predictLongRunning` answers an operation name; `POST .../{model}:
fetchPredictOperation` answers it running, then done with the video inline
(`bytesBase64Encoded`), or refused (`raiMediaFilteredReasons`), or failed (`error`); an
operation it does not know is HTTP 404. The key: `x-goog-api-key`."""

from __future__ import annotations

import base64
import json
import re

from tests.support.video_doubles.base import Double as Base

REFUSAL = "The input image contains content that was blocked by the safety filter (code 58061214)"
STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
}


class Double(Base):
    provider = "veo"
    refusal = REFUSAL
    price = 0.20
    route = re.compile(
        r"/v1beta1/(?P<model>.+/models/[^/:]+):(?P<verb>predictLongRunning|fetchPredictOperation)"
    )

    def short(self, generation: dict) -> dict:
        return generation | {"duration_seconds": 4}

    def key(self, headers) -> str | None:
        return headers.get("x-goog-api-key")

    def error(self, status: int, message: str, code: str | None = None) -> dict:
        kind = STATUS.get(status, "UNKNOWN")
        return {"error": {"code": status, "message": message, "status": kind}}

    def operation_id(self, number: int, model: str) -> str:
        return f"{model}/operations/op-{number:04d}"

    def handle(self, fake, method, match, body, headers):
        request = json.loads(body or b"{}")
        if match["verb"] == "predictLongRunning":
            (instance,) = request["instances"]
            image = base64.b64decode(instance["image"]["bytesBase64Encoded"])
            parameters = request["parameters"]
            seconds = parameters["durationSeconds"]
            op = fake.submit(self, match["model"], instance["prompt"], image, seconds, parameters)
            return 200, {"name": op.id}
        op = fake.poll(request["operationName"])
        if op is None:
            return 404, self.error(404, f"Operation {request['operationName']} not found")
        if op.polls_left > 0:
            return 200, {"name": op.id, "done": False}
        if op.outcome == "failed":
            error = {"code": 13, "message": "Video generation failed: internal error"}
            return 200, {"name": op.id, "done": True, "error": error}
        response = {
            "@type": "type.googleapis.com/cloud.ai.large_models.vision.GenerateVideoResponse"
        }
        if op.outcome == "refused":
            response |= {"raiMediaFilteredCount": 1, "raiMediaFilteredReasons": [REFUSAL]}
        else:
            encoded = base64.b64encode(fake.video(op)).decode()
            response |= {
                "raiMediaFilteredCount": 0,
                "videos": [{"bytesBase64Encoded": encoded, "mimeType": "video/mp4"}],
            }
        return 200, {"name": op.id, "done": True, "response": response}
