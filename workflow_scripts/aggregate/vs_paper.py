"""tables/vs_paper.csv: each model that names a row of the paper's Table 2 (`paper_row`),
its final x 100 overall and by domain beside the paper's published number, with the
difference and its bootstrap 95% CI (the paper's number taken as fixed).

`n` counts the instances judged; `selected` the run's selected instances of the domain and
`missing` those the model's folder holds no video of (a model made elsewhere, e.g. the
published generations: judged on what it holds; tables/coverage.csv by level)."""

from __future__ import annotations

import pandas as pd

from workflow_scripts.aggregate.tables import RESAMPLES, SEED, final_by_domain_level
from workflow_scripts.benchmark.paper import COLUMNS as COLUMNS_READ

COLUMNS = [
    "model", "paper_row", "paper_name", "domain", "final", "final_ci_low", "final_ci_high",
    "paper", "difference", "difference_ci_low", "difference_ci_high", "n", "selected",
    "missing",
]  # fmt: skip


def vs_paper(
    results: pd.DataFrame,
    rows: dict[str, str],
    paper: pd.DataFrame,
    seed: int = SEED,
    resamples: int = RESAMPLES,
    selected: pd.Series | None = None,
    missing: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per (model with a paper row, domain): `overall` first, then the paper's
    domains; a domain the paper gives no number for has an empty `paper`.

    `selected`: the selected instances' domain by instance (the count per domain and
    overall); `missing`: the coverage records (model, instance, found) of the models made
    elsewhere."""
    mine = results[results["model"].isin(rows)]
    table = final_by_domain_level(mine, seed, resamples)
    table = table[(table["level"] == "avg") & table["model"].isin(rows)]
    domains = ["overall", *(c for c in paper.columns if c not in COLUMNS_READ)]
    out = []
    for row in table.itertuples():
        if row.domain not in domains:
            continue
        published = paper.loc[rows[row.model]]
        value = published[row.domain]
        ours = [100 * v for v in (row.final, row.final_ci_low, row.final_ci_high)]
        chosen, lacking = _counts(selected, missing, row.model, row.domain)
        out.append(
            {
                "model": row.model,
                "paper_row": rows[row.model],
                "paper_name": published["name"],
                "domain": row.domain,
                "final": ours[0],
                "final_ci_low": ours[1],
                "final_ci_high": ours[2],
                "paper": value,
                **{name: v - value for name, v in zip(COLUMNS[8:11], ours, strict=True)},
                "n": row.n,
                "selected": chosen,
                "missing": lacking,
            }
        )
    frame = pd.DataFrame(out, columns=COLUMNS)
    order = {domain: k for k, domain in enumerate(domains)}
    models = {model: k for k, model in enumerate(rows)}
    return frame.sort_values(
        ["model", "domain"], key=lambda c: c.map(models if c.name == "model" else order),
        ignore_index=True,
    )  # fmt: skip


def _counts(selected, missing, model, domain) -> tuple[int | None, int]:
    """The selected instances of `domain` (`overall`: all) and how many of them `model`'s
    folder lacks (0 for a model the workflow makes)."""
    if selected is None:
        return None, 0
    mine = selected.index if domain == "overall" else selected.index[selected == domain]
    lacking = 0
    if missing is not None and len(missing):
        own = missing[(missing["model"] == model) & ~missing["found"].astype(bool)]
        lacking = int(own["instance"].isin(mine).sum())
    return len(mine), lacking
