"""JSON schemas of the judge's replies (DESIGN, "Interface contract").

They stay within the subset Gemini's `response_json_schema` accepts. Only a reply that
does not match its schema is retried; what a schema leaves open is taken as the official
judge takes it (`protocol`): citations of frames not shown are dropped, uncovered frames
accepted, a checklist item left out of a verdict asked once more, then counted as 1.
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
_INDICES = {"type": "array", "items": {"type": "integer", "minimum": 0}}

COMPLETENESS = object_schema(tier={"type": "integer", "minimum": 0, "maximum": 2}, reasoning=TEXT)

WINDOW = object_schema(
    evaluations={
        "type": "array",
        "items": object_schema(frame_indices={**_INDICES, "minItems": 1}, comment=TEXT),
    },
    frames_to_inspect_closely=_INDICES,
)


def polish(k: int) -> dict:
    """The verdict (polish) reply for a checklist of `k` items: entries with indices 1..k."""
    item = object_schema(
        index={"type": "integer", "minimum": 1, "maximum": k},
        n_violations={"type": "integer", "minimum": 0},
        evidence=TEXT,
    )
    return object_schema(
        by_range={"type": "array", "items": object_schema(global_frames=TEXT, summary=TEXT)},
        checklist={"type": "array", "items": item},
        overall_reasoning=TEXT,
    )
