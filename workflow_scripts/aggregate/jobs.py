"""The bodies of rules `tables`, `plots`, `judge_reliability` and `judge_agreement`."""

from __future__ import annotations

import pandas as pd

from workflow_scripts.aggregate import plots, reliability, sensitivity
from workflow_scripts.aggregate.collect import collect, instance_table
from workflow_scripts.aggregate.tables import all_tables, errors
from workflow_scripts.aggregate.vs_paper import vs_paper
from workflow_scripts.benchmark.paper import read_paper_table
from workflow_scripts.common.files import read_csv
from workflow_scripts.common.layout import TABLE_FIX
from workflow_scripts.common.logs import job_log

PLOTS = {
    "final_heatmap": ("final_by_domain_level", plots.final_heatmap),
    "skills": ("skills", plots.skill_bars),
    "transitions": ("transitions", plots.transition_bars),
}


def tables_job(smk) -> None:
    """Rule `tables`: the run's per-instance results into every table of DESIGN's contract.

    transitions.json is read only when the rule lists it among its inputs. With
    `params.runs` (run key: model, condition, seed), every run is read: the contract's
    tables are over the main condition with each instance averaged over its seeds
    (errors.csv counts every seed's video; the transition labels of every seed are
    pooled), and the sensitivity tables whose outputs the rule lists are written too.
    """
    params = smk.params
    runs = getattr(params, "runs", None)
    covered = getattr(params, "conditions", {})
    with job_log(smk):
        instances = instance_table(smk.input.selected, smk.input.taxonomy, smk.input.overlap)
        if runs is not None:
            runs = {
                key: {**run, "instances": covered.get(run["condition"])}
                for key, run in runs.items()
            }
        every, pairs = collect(
            instances,
            params.models,
            smk.config["outdir"],
            transitions=bool(smk.input.get("transitions")),
            no_checkpoints=params.no_checkpoints,
            runs=runs,
        )
        main = every[every["condition"] == "default"]
        pairs = pairs[pairs["condition"] == "default"]
        averaged = sensitivity.average_seeds(main).drop(columns="seeds_ok")
        tables = all_tables(averaged, pairs, params.vbvr_pairs, params.pool)
        tables["errors"] = errors(main.reset_index(drop=True))
        wanted = set(smk.output.keys())
        if wanted & set(sensitivity.CONDITION_TABLES):
            tables |= sensitivity.conditions(every, covered)
        if "seed_variance" in wanted:
            tables["seed_variance"] = sensitivity.seed_variance(every)
        if "vs_paper" in wanted:
            paper = read_paper_table(smk.input.paper_table)
            tables["vs_paper"] = vs_paper(averaged, params.paper_rows, paper)
        if "subset_stability" in wanted:
            tables["subset_stability"] = sensitivity.subset_stability(
                every, instances, params.subset_seed
            )
        for name, table in tables.items():
            table.to_csv(smk.output[name], index=False)
        print(tables["errors"].to_string(index=False))


def plots_job(smk) -> None:
    """Rule `plots`: each figure from its table."""
    with job_log(smk):
        for name, (table, draw) in PLOTS.items():
            draw(read_csv(smk.input[table], TABLE_FIX), smk.output[name])
        if smk.output.get("conditions"):
            tables = (read_csv(smk.input[name], TABLE_FIX) for name in sensitivity.CONDITION_TABLES)
            plots.condition_bars(*reversed(list(tables)), smk.output["conditions"])
        if smk.output.get("vs_paper"):
            plots.paper_bars(read_csv(smk.input.vs_paper, TABLE_FIX), smk.output["vs_paper"])


def _finals(smk) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The run's instances (with domain and skills) and every judge's finals."""
    instances = instance_table(smk.input.selected, smk.input.taxonomy, smk.input.overlap)
    finals = reliability.judge_finals(
        instances, smk.params.models, smk.config["outdir"], smk.params.judges
    )
    return instances, finals


def judge_reliability_job(smk) -> None:
    """Rule `judge_reliability`: the human preference pairs (imported and from the
    preference page's rankings) merged, against every judge's finals."""
    with job_log(smk):
        instances, finals = _finals(smk)
        rankings = [
            pd.read_csv(path, dtype={"instance": str, "model": str, "rank": float})
            for path in smk.input.rankings
        ]
        pairs, dropped = reliability.preference_pairs(smk.input.preferences, rankings)
        pairs, outside = reliability.known(pairs, instances.index, smk.params.models)
        print(
            f"{len(pairs)} preference pairs; dropped: {dropped['contradictions']} "
            f"contradicted, {dropped['cycles']} on cycles, {outside} outside this run"
        )
        pairs.to_csv(smk.output.pairs, index=False)
        overall, by_slice = reliability.reliability_tables(
            pairs, finals, instances, smk.params.judges
        )
        overall.to_csv(smk.output.table, index=False)
        by_slice.to_csv(smk.output.by_slice, index=False)
        plots.reliability_bars(overall, smk.output.plot)
        print(overall.to_string(index=False))


def judge_agreement_job(smk) -> None:
    """Rule `judge_agreement`: every pair of judges on the same videos, without people."""
    with job_log(smk):
        instances, finals = _finals(smk)
        overall, by_slice = reliability.agreement_tables(finals, instances, smk.params.judges)
        overall.to_csv(smk.output.table, index=False)
        by_slice.to_csv(smk.output.by_slice, index=False)
        print(overall.to_string(index=False))
