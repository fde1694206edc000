"""JSON schemas of the judge's replies (DESIGN, "Interface contract").

They stay within the subset Gemini's `response_json_schema` accepts. Only a reply that
does not match its schema is retried, so each schema accepts every shape the official
judge takes and leaves the rest to `protocol`: citations of frames not shown (any index)
are dropped, a comment citing none is dropped, uncovered frames accepted; a verdict may
leave items out, repeat them, cite indices outside 1..K or give negative counts (the
`official` verdict rule takes them as the official judge does). The `strict` verdict rule
bounds index and count, so that such a reply is asked again.
"""

from __future__ import annotations


def object_schema(**properties: dict) -> dict:
    """An object schema requiring exactly `properties`."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


TEXT = {"type": "string"}
_INDICES = {"type": "array", "items": {"type": "integer"}}

COMPLETENESS = object_schema(tier={"type": "integer", "minimum": 0, "maximum": 2}, reasoning=TEXT)

WINDOW = object_schema(
    evaluations={
        "type": "array",
        "items": object_schema(frame_indices=_INDICES, comment=TEXT),
    },
    frames_to_inspect_closely=_INDICES,
)


def polish(k: int, strict: bool = False) -> dict:
    """The verdict (polish) reply for a checklist of `k` items. Official: only `checklist`
    and each entry's `index` and `n_violations` are required (a bare array of entries is
    the checklist, `client.loads_reply`). `strict`: every field, index in 1..k, count >= 0.
    """
    bounded = {"minimum": 1, "maximum": k} if strict else {}
    item = object_schema(
        index={"type": "integer", **bounded},
        n_violations={"type": "integer", **({"minimum": 0} if strict else {})},
        evidence=TEXT,
    )
    reply = object_schema(
        by_range={"type": "array", "items": object_schema(global_frames=TEXT, summary=TEXT)},
        checklist={"type": "array", "items": item},
        overall_reasoning=TEXT,
    )
    if not strict:
        item["required"], reply["required"] = ["index", "n_violations"], ["checklist"]
    return reply
