"""Trusting the judge (paper Tables 3, 14, 15): human preference pairs against the judges'
final scores, and judge against judge without people (DESIGN, "Trusting the judge").

Pairs are `instance, model_a, model_b, preferred` (`a`, `b` or `tie`) with the
`annotator` who gave them: imported (`judge_reliability.preferences`) or made from the
preference page's rankings (`ranking_pairs`). `merge_pairs` orients every pair so that
model_a < model_b, then keeps one label per (instance, model_a, model_b): a pair the
annotators label differently (a against b, or a tie against a preference) is a
contradiction and dropped; within one instance, a strict pair lying on a cycle of the
merged preference graph (winner -> loser) is dropped too; ties are kept as ties (no edge).

A judge's prediction for a pair comes from d = final(model_a) - final(model_b): a tie
when |d| < TIE_BAND (d rounded to 9 decimals first, so that 0.25 - 0.2 is no tie), else
the higher score. Pairwise accuracy compares it with the human label, ties included.
ROC-AUC is over the strict pairs: d_i = final(preferred) - final(other), each pair adding
(d_i, 1) and (-d_i, 0) (sklearn's `roc_auc_score`; the bootstrap uses the equal
Mann-Whitney count, faster). CIs are percentile bootstraps resampling instances (the
pairs of a drawn instance come together), `RESAMPLES` draws from `default_rng(SEED)`.
Pairs whose video has no `ok` score under a judge are left out of that judge's rows.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.metrics import roc_auc_score

from workflow_scripts.aggregate import plots
from workflow_scripts.aggregate.collect import instance_table
from workflow_scripts.common import layout
from workflow_scripts.common.files import read_json, write_text
from workflow_scripts.common.logs import job_log
from workflow_scripts.judge.drift import per_judge

TIE_BAND = 0.05
SEED = 0
RESAMPLES = 1000
LABELS = ("a", "b", "tie")
PAIR_COLUMNS = ["instance", "model_a", "model_b", "preferred", "annotator"]
RANKING_COLUMNS = ["instance", "annotator", "model", "rank"]
METRICS = [
    *("auc", "auc_lo", "auc_hi"),
    *("pairwise_accuracy", "pairwise_accuracy_lo", "pairwise_accuracy_hi"),
    *("n_pairs", "n_strict_pairs"),
]
AGREEMENT = ["spearman", "kendall", "pairwise_agreement", "n"]


class PreferenceError(ValueError):
    """A preferences file that cannot be read as pairs."""


def read_preferences(path: str | Path) -> pd.DataFrame:
    """The pairs of an imported CSV (columns PAIR_COLUMNS; others ignored)."""
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [column for column in PAIR_COLUMNS if column not in table.columns]
    if missing:
        raise PreferenceError(f"{path}: no column(s) {', '.join(missing)} (need {PAIR_COLUMNS})")
    table = table[PAIR_COLUMNS].apply(lambda column: column.str.strip())
    table["preferred"] = table["preferred"].str.lower()
    bad = table[~table["preferred"].isin(LABELS) | (table["model_a"] == table["model_b"])]
    if len(bad):
        row = bad.iloc[0]
        raise PreferenceError(
            f"{path}: line {bad.index[0] + 2}: preferred must be a, b or tie and the models "
            f"differ (got {row['model_a']!r}, {row['model_b']!r}, {row['preferred']!r})"
        )
    return table.reset_index(drop=True)


def ranking_pairs(rankings: pd.DataFrame) -> pd.DataFrame:
    """Every pair of models one annotator ranked together (on one instance, in one
    `triplet` where the column is there; rank 1 the best, equal ranks a tie); a model
    without a rank (a skipped triplet) gives no pair."""
    rows = []
    ranked = rankings.dropna(subset=["rank"])
    keys = ["instance", "annotator", *(["triplet"] if "triplet" in rankings.columns else [])]
    for (instance, annotator, *_), group in ranked.groupby(keys, sort=False):
        ranks = dict(zip(group["model"], group["rank"].astype(float), strict=True))
        for a, b in itertools.combinations(sorted(ranks), 2):
            preferred = "tie" if ranks[a] == ranks[b] else "a" if ranks[a] < ranks[b] else "b"
            rows.append([instance, a, b, preferred, annotator])
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)


def oriented(pairs: pd.DataFrame) -> pd.DataFrame:
    """`pairs` with model_a < model_b (a swapped pair's label swapped with it)."""
    pairs = pairs.copy()
    swap = pairs["model_a"] > pairs["model_b"]
    pairs.loc[swap, ["model_a", "model_b"]] = pairs.loc[swap, ["model_b", "model_a"]].to_numpy()
    flip = {"a": "b", "b": "a", "tie": "tie"}
    pairs.loc[swap, "preferred"] = pairs.loc[swap, "preferred"].map(flip)
    return pairs


def _on_cycles(edges: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
    """The edges (winner, loser) lying on a cycle: those whose loser reaches its winner."""
    reach = {node: set() for edge in edges for node in edge}
    for winner, loser in edges:
        reach[winner].add(loser)
    changed = True
    while changed:  # transitive closure (a handful of models per instance)
        changed = False
        for reached in reach.values():
            more = set().union(*(reach[other] for other in reached)) - reached
            if more:
                reached |= more
                changed = True
    return {(winner, loser) for winner, loser in edges if winner in reach[loser]}


def merge_pairs(pairs: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, int]]:
    """One label per (instance, model_a, model_b) over the annotators, and how many pairs
    were dropped as contradictions and as cycles (see the module docstring). The merged
    pairs have columns instance, model_a, model_b, preferred, n_annotators."""
    pairs = oriented(pairs)
    keys = ["instance", "model_a", "model_b"]
    merged = pairs.groupby(keys, sort=True).agg(
        labels=("preferred", lambda labels: sorted(set(labels))),
        n_annotators=("annotator", "nunique"),
    )
    agreed = merged["labels"].map(len) == 1
    merged = merged[agreed].assign(preferred=lambda m: m["labels"].str[0]).reset_index()
    edges = [
        None if label == "tie" else (a, b) if label == "a" else (b, a)
        for a, b, label in merged[["model_a", "model_b", "preferred"]].itertuples(index=False)
    ]
    on_cycles = {
        instance: _on_cycles([edges[i] for i in rows if edges[i] is not None])
        for instance, rows in merged.groupby("instance").indices.items()
    }
    cyclic = np.array(
        [edge in on_cycles[i] for i, edge in zip(merged["instance"], edges, strict=True)], bool
    )
    counts = {"contradictions": int((~agreed).sum()), "cycles": int(cyclic.sum())}
    columns = [*keys, "preferred", "n_annotators"]
    return merged.loc[~cyclic, columns].reset_index(drop=True), counts


def judge_finals(
    instances: pd.DataFrame, models: Iterable[str], outdir: str | Path, judges: Iterable[str]
) -> pd.DataFrame:
    """judge, model, instance, final and judge_model_version of every selected video under
    every judge; final is NaN where the judge's score.json is not `ok` (or missing)."""
    rows = []
    for judge in judges:
        for model in models:
            for instance, info in instances.iterrows():
                path = layout.score_file(outdir, model, info["task"], str(instance), judge)
                score = read_json(path, layout.stage_fix(path), optional=True) or {}
                final = score.get("final") if score.get("status") == "ok" else None
                final = np.nan if final is None else final
                rows.append([judge, model, str(instance), final, score.get("model_version")])
    columns = ["judge", "model", "instance", "final", "judge_model_version"]
    return pd.DataFrame(rows, columns=columns)


def predicted(d) -> np.ndarray:
    """a, b or tie from score differences final(a) - final(b), with the tie band."""
    d = np.round(np.asarray(d, dtype=float), 9)
    return np.where(np.abs(d) < TIE_BAND, "tie", np.where(d > 0, "a", "b"))


def scored_pairs(pairs: pd.DataFrame, finals: pd.DataFrame) -> pd.DataFrame:
    """The merged pairs with each judge's final of both videos, d and the prediction; a
    pair is left out of a judge's rows where either video has no final under it."""
    frames = []
    for judge, scores in finals.groupby("judge", sort=False):
        final = scores.set_index(["model", "instance"])["final"]
        frame = pairs.assign(judge=judge)
        for side in ("a", "b"):
            where = list(zip(pairs[f"model_{side}"], pairs["instance"], strict=True))
            frame[f"final_{side}"] = final.reindex(where).to_numpy()
        frames.append(frame.dropna(subset=["final_a", "final_b"]))
    columns = [*pairs.columns, "judge", "final_a", "final_b"]
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
    frame["d"] = (frame["final_a"] - frame["final_b"]).astype(float)
    frame["predicted"] = predicted(frame["d"]) if len(frame) else []
    return frame


def auc(positive: np.ndarray) -> float:
    """ROC-AUC of (d_i, 1) and (-d_i, 0) for every strict pair's d_i, by Mann-Whitney."""
    n = len(positive)
    if not n:
        return np.nan
    ranks = stats.rankdata(np.concatenate([positive, -positive]))
    return float((ranks[:n].sum() - n * (n + 1) / 2) / (n * n))


def _strict_d(frame: pd.DataFrame) -> np.ndarray:
    strict = frame[frame["preferred"] != "tie"]
    return np.where(strict["preferred"] == "a", strict["d"], -strict["d"]).astype(float)


def reliability(
    frame: pd.DataFrame, seed: int = SEED, resamples: int = RESAMPLES
) -> dict[str, float]:
    """METRICS of one judge's scored pairs (AUC by `roc_auc_score`, CIs by resampling
    instances)."""
    positive = _strict_d(frame)
    if len(positive):
        scores = np.concatenate([positive, -positive])
        truth = np.concatenate([np.ones(len(positive)), np.zeros(len(positive))])
        point_auc = float(roc_auc_score(truth, scores))
    else:
        point_auc = np.nan
    correct = (frame["predicted"] == frame["preferred"]).to_numpy(float)
    strict = (frame["preferred"] != "tie").to_numpy()
    signed = np.where(frame["preferred"] == "a", frame["d"], -frame["d"]).astype(float)
    groups = [np.flatnonzero(frame["instance"].to_numpy() == i) for i in frame["instance"].unique()]
    aucs, accuracies = [], []
    if groups:
        draws = np.random.default_rng(seed).integers(0, len(groups), (resamples, len(groups)))
        for draw in draws:
            rows = np.concatenate([groups[g] for g in draw])
            accuracies.append(correct[rows].mean())
            aucs.append(auc(signed[rows][strict[rows]]))
    return {
        "auc": point_auc,
        **_interval("auc", aucs),
        "pairwise_accuracy": correct.mean() if len(correct) else np.nan,
        **_interval("pairwise_accuracy", accuracies),
        "n_pairs": len(frame),
        "n_strict_pairs": len(positive),
    }


def _interval(name: str, values: list[float]) -> dict[str, float]:
    values = np.asarray(values, float)
    if not len(values) or np.isnan(values).all():
        return {f"{name}_lo": np.nan, f"{name}_hi": np.nan}
    low, high = np.nanpercentile(values, [2.5, 97.5])
    return {f"{name}_lo": low, f"{name}_hi": high}


def slices(instances: pd.DataFrame) -> list[tuple[str, str, list[str]]]:
    """(slice_kind, slice, its instances): each domain, then each skill tag (a task with
    k tags counts in k pools), sorted by name."""
    out = []
    for domain in sorted(set(instances["domain"])):
        out.append(("domain", domain, list(instances.index[instances["domain"] == domain])))
    skills = sorted({skill for tags in instances["skills"] for skill in tags})
    for skill in skills:
        members = [i for i, tags in instances["skills"].items() if skill in tags]
        out.append(("skill", skill, members))
    return out


def reliability_tables(
    pairs: pd.DataFrame, finals: pd.DataFrame, instances: pd.DataFrame, judges: Sequence[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """tables/judge_reliability.csv (one row per judge) and judge_reliability_by_slice.csv
    (per judge, domain and skill) from the merged pairs and the judges' finals."""
    scored = scored_pairs(pairs, finals)
    overall, by_slice = [], []
    for judge in judges:
        mine = scored[scored["judge"] == judge]
        overall.append({"judge": judge, **reliability(mine)})
        for kind, name, members in slices(instances):
            subset = mine[mine["instance"].isin(members)]
            by_slice.append(
                {"judge": judge, "slice_kind": kind, "slice": name, **reliability(subset)}
            )
    return (
        pd.DataFrame(overall, columns=["judge", *METRICS]),
        pd.DataFrame(by_slice, columns=["judge", "slice_kind", "slice", *METRICS]),
    )


def agreement(finals: pd.DataFrame, a: str, b: str, members=None) -> dict[str, float]:
    """Judge `a` against judge `b` on the videos both scored (of `members`' instances):
    Spearman's and Kendall's (tau-b) correlation of the finals, and pairwise agreement, the
    share of the model pairs within an instance on which their predictions (a, b or tie,
    the same tie band) agree; n is the number of videos."""
    wide = finals.pivot_table(index=["instance", "model"], columns="judge", values="final")
    wide = wide.reindex(columns=[a, b]).dropna()
    if members is not None:
        wide = wide[wide.index.get_level_values("instance").isin(list(members))]
    with warnings.catch_warnings():  # a constant column: NaN, said by the NaN
        warnings.simplefilter("ignore")
        enough = len(wide) >= 2
        spearman = stats.spearmanr(wide[a], wide[b]).statistic if enough else np.nan
        kendall = stats.kendalltau(wide[a], wide[b]).statistic if enough else np.nan
    same = []
    for _, rows in wide.groupby(level="instance"):
        for (x_a, x_b), (y_a, y_b) in itertools.combinations(rows[[a, b]].to_numpy(), 2):
            same.append(predicted(x_a - y_a) == predicted(x_b - y_b))
    return {
        "spearman": float(spearman),
        "kendall": float(kendall),
        "pairwise_agreement": float(np.mean(same)) if same else np.nan,
        "n": len(wide),
    }


def agreement_tables(
    finals: pd.DataFrame, instances: pd.DataFrame, judges: Sequence[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """tables/judge_agreement.csv (every pair of judges, the main judge first) and
    judge_agreement_by_slice.csv (the same per domain and skill)."""
    overall, by_slice = [], []
    for a, b in itertools.combinations(judges, 2):
        overall.append({"judge_a": a, "judge_b": b, **agreement(finals, a, b)})
        for kind, name, members in slices(instances):
            row = {"judge_a": a, "judge_b": b, "slice_kind": kind, "slice": name}
            by_slice.append({**row, **agreement(finals, a, b, members)})
    return (
        pd.DataFrame(overall, columns=["judge_a", "judge_b", *AGREEMENT]),
        pd.DataFrame(by_slice, columns=["judge_a", "judge_b", "slice_kind", "slice", *AGREEMENT]),
    )


def preference_pairs(
    imported: Iterable[str | Path], rankings: Iterable[pd.DataFrame] = ()
) -> tuple[pd.DataFrame, dict[str, int]]:
    """Every annotator's pairs (imported CSVs and rankings) merged (`merge_pairs`)."""
    parts = [read_preferences(path) for path in imported]
    parts += [ranking_pairs(ranking) for ranking in rankings]
    pairs = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=PAIR_COLUMNS)
    return merge_pairs(pairs)


def known(pairs: pd.DataFrame, instances: Mapping | pd.Index, models: Iterable[str]):
    """The pairs whose instance and both models are in the run, and how many were not."""
    models = set(models)
    inside = (
        pairs["instance"].isin(list(instances))
        & pairs["model_a"].isin(models)
        & pairs["model_b"].isin(models)
    )
    return pairs[inside].reset_index(drop=True), int((~inside).sum())


def _finals(smk) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The run's instances (with domain and skills) and every judge's finals."""
    instances = instance_table(smk.input.selected, smk.input.taxonomy, smk.input.overlap)
    finals = judge_finals(instances, smk.params.models, smk.config["outdir"], smk.params.judges)
    return instances, finals


def judge_reliability_job(smk) -> None:
    """Rule `judge_reliability`: the human preference pairs (imported and from the
    preference page's rankings) merged, against every judge's finals (each row with its
    judge's model and versions, `judge.drift.per_judge`; `params.judge_models`)."""
    with job_log(smk):
        instances, finals = _finals(smk)
        rankings = [
            pd.read_csv(path, dtype={"instance": str, "model": str, "rank": float})
            for path in smk.input.rankings
        ]
        pairs, dropped = preference_pairs(smk.input.preferences, rankings)
        pairs, outside = known(pairs, instances.index, smk.params.models)
        print(
            f"{len(pairs)} preference pairs; dropped: {dropped['contradictions']} "
            f"contradicted, {dropped['cycles']} on cycles, {outside} outside this run"
        )
        write_text(smk.output.pairs, pairs.to_csv(index=False))
        overall, by_slice = reliability_tables(pairs, finals, instances, smk.params.judges)
        models = smk.params.judge_models
        overall, by_slice = (per_judge(t, models, finals) for t in (overall, by_slice))
        write_text(smk.output.table, overall.to_csv(index=False))
        write_text(smk.output.by_slice, by_slice.to_csv(index=False))
        plots.reliability_bars(overall, smk.output.plot)
        print(overall.to_string(index=False))


def judge_agreement_job(smk) -> None:
    """Rule `judge_agreement`: every pair of judges on the same videos, without people
    (each row with both judges' models and versions, `judge.drift.per_judge`)."""
    with job_log(smk):
        instances, finals = _finals(smk)
        overall, by_slice = agreement_tables(finals, instances, smk.params.judges)
        models, pair = smk.params.judge_models, ("judge_a", "judge_b")
        overall, by_slice = (per_judge(t, models, finals, pair) for t in (overall, by_slice))
        write_text(smk.output.table, overall.to_csv(index=False))
        write_text(smk.output.by_slice, by_slice.to_csv(index=False))
        print(overall.to_string(index=False))
