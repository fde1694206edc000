"""How the judge's replies are taken and scored, as the official judge takes them
(`judge.protocol.verdict`: `official` or `strict`): window comments and nominations
checked against the frames shown, verdict entries read into violation counts x_i, and the
scores: rubric = mean_i 1 / (x_i + 1), final = completeness x rubric."""

from __future__ import annotations

from collections.abc import Sequence

from workflow_scripts.judge import prompts

SCORE_KEYS = ("tier", "completeness", "violations", "rubric", "final", "strict_success")


def scores(tier: int | None, violations: Sequence[int]) -> dict:
    """Completeness, rubric, final and strict success of a tier and violation counts.

    No checklist: rubric 0, as the official judge. No tier (a failed completeness call):
    completeness and final empty, strict success decided by the rubric alone (as the
    official judge decides it then)."""
    rubric = sum(1 / (x + 1) for x in violations) / len(violations) if violations else 0.0
    perfect = bool(violations) and not any(violations)
    completeness = None if tier is None else tier / 2
    return {
        "tier": tier,
        "completeness": completeness,
        "violations": list(violations),
        "rubric": rubric,
        "final": None if tier is None else completeness * rubric,
        "strict_success": perfect if tier is None else tier == 2 and perfect,
    }


def take_window(data: dict, shown: Sequence[int]) -> dict:
    """A window reply taken as the official judge takes it, with what was adjusted.

    Cited indices not shown are dropped (`dropped_citations`); a comment that is blank, or
    cites no shown frame, is left out of the verdict's input (`dropped_comments`); frames
    no evaluation covers are accepted (`uncovered`); of the nominations, shown frames are
    kept in reply order, distinct, up to ceil(n / 2) for n frames shown (`nominated`),
    those not shown are dropped citations and those over the cap `dropped_nominations`.
    """
    visible, dropped = set(shown), []
    evaluations, silent = [], []
    for evaluation in data["evaluations"]:
        cited = evaluation["frame_indices"]
        dropped += [i for i in cited if i not in visible]
        kept = sorted({i for i in cited if i in visible})
        taken = {**evaluation, "frame_indices": kept, "comment": evaluation["comment"].strip()}
        (evaluations if kept and taken["comment"] else silent).append(taken)
    covered = {i for evaluation in evaluations for i in evaluation["frame_indices"]}
    nominations = list(dict.fromkeys(data["frames_to_inspect_closely"]))
    dropped += [i for i in nominations if i not in visible]
    valid = [i for i in nominations if i in visible]
    cap = prompts.nomination_cap(len(shown))
    return {
        **data,
        "evaluations": evaluations,
        "dropped_comments": silent,
        "nominated": sorted(valid[:cap]),
        "dropped_citations": dropped,
        "dropped_nominations": valid[cap:],
        "uncovered": [i for i in shown if i not in covered],
    }


def take_verdict(data: dict, k: int, rule: str = "official") -> dict:
    """The verdict's counts x_1..x_k and what was adjusted to get them.

    `official`: entries with an index outside 1..k are ignored (`ignored_items`), of
    repeated indices the last entry counts (`repeated_items`), a negative count is 0
    (`clamped_items`), an item without an entry counts 1 (`imputed_items`). `strict`: the
    first of repeated entries counts (the schema has kept indices and counts in bounds).
    """
    entries: dict[int, dict] = {}
    ignored, repeated, clamped = [], [], []
    for item in data.get("checklist") or []:
        index = item.get("index")
        if not isinstance(index, int) or not 1 <= index <= k:
            ignored.append(index)
            continue
        if index in entries:
            repeated.append(index)
            if rule == "strict":
                continue
        entries[index] = item
    checklist = []
    for n in range(1, k + 1):
        entry = entries.get(n)
        if entry is None:
            checklist.append({"index": n, "n_violations": 1, "evidence": "imputed"})
            continue
        count = entry.get("n_violations")
        count = count if isinstance(count, int) else 1
        if count < 0:
            clamped.append(n)
        checklist.append({"evidence": "", **entry, "n_violations": max(0, count)})
    return {
        "checklist": checklist,
        "violations": [entry["n_violations"] for entry in checklist],
        "imputed_items": [n for n in range(1, k + 1) if n not in entries],
        "repeated_items": sorted(set(repeated)),
        "ignored_items": ignored,
        "clamped_items": clamped,
    }


ADJUSTMENTS = ("imputed_items", "repeated_items", "ignored_items", "clamped_items")
