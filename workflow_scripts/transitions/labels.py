"""The transition labels' vocabulary (DESIGN, "Transition labels") and their reply schema."""

from __future__ import annotations

from workflow_scripts.judge.schemas import TEXT, object_schema

LABELS = ("unrecognizable", "stable", "correct_to_wrong", "wrong_to_correct", "wrong_to_wrong")

TRANSITION = object_schema(
    label={"type": "string", "enum": list(LABELS)},
    earlier_state=TEXT,
    later_state=TEXT,
    evidence=TEXT,
)
