"""JSON schemas of the judge's replies (DESIGN, "Interface contract").

They stay within the subset Gemini's `response_json_schema` accepts. Only a reply that
does not match its schema is retried; what a schema leaves open is taken as the official
judge takes it (`protocol`): citations of frames not shown are dropped, uncovered frames
accepted, a checklist item left out of a verdict asked once more, then counted as 1.
"""

from __future__ import annotations

LABELS = ("unrecognizable", "stable", "correct_to_wrong", "wrong_to_correct", "wrong_to_wrong")


def _object(**properties: dict) -> dict:
    """An object schema requiring exactly `properties`."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


_TEXT = {"type": "string"}
_INDICES = {"type": "array", "items": {"type": "integer", "minimum": 0}}

COMPLETENESS = _object(tier={"type": "integer", "minimum": 0, "maximum": 2}, reasoning=_TEXT)

WINDOW = _object(
    evaluations={
        "type": "array",
        "items": _object(frame_indices={**_INDICES, "minItems": 1}, comment=_TEXT),
    },
    frames_to_inspect_closely=_INDICES,
)

TRANSITION = _object(
    label={"type": "string", "enum": list(LABELS)},
    earlier_state=_TEXT,
    later_state=_TEXT,
    evidence=_TEXT,
)


def polish(k: int) -> dict:
    """The verdict (polish) reply for a checklist of `k` items: entries with indices 1..k."""
    item = _object(
        index={"type": "integer", "minimum": 1, "maximum": k},
        n_violations={"type": "integer", "minimum": 0},
        evidence=_TEXT,
    )
    return _object(
        by_range={"type": "array", "items": _object(global_frames=_TEXT, summary=_TEXT)},
        checklist={"type": "array", "items": item},
        overall_reasoning=_TEXT,
    )
