"""The body of rule `tables`: every table of the run from its documents (the figures are
`plots.plots_job`, the judge-reliability tables `reliability`'s jobs)."""

from __future__ import annotations

from collections import Counter

import pandas as pd

from workflow_scripts.aggregate import sensitivity
from workflow_scripts.aggregate.collect import VERSION, collect, instance_table
from workflow_scripts.aggregate.coverage import records_frame
from workflow_scripts.aggregate.tables import all_tables, errors
from workflow_scripts.aggregate.vs_paper import vs_paper
from workflow_scripts.benchmark.instances import load_taxonomy
from workflow_scripts.benchmark.paper import read_paper_table
from workflow_scripts.common.files import write_text
from workflow_scripts.common.logs import job_log
from workflow_scripts.judge.drift import with_judge


def tables_job(smk) -> None:
    """Rule `tables`: the run's per-instance results into every table of DESIGN's contract.

    transitions.json is read only when the rule lists it among its inputs. With
    `params.runs` (run key: model, condition, seed), every run is read: the contract's
    tables are over the main condition with each instance averaged over its seeds
    (errors.csv counts every seed's video; the transition labels of every seed are
    pooled), and the sensitivity tables whose outputs the rule lists are written too.
    Every table ends with its judge (`params.judge_model`) and the versions of the
    documents it is computed from (`judge.drift`: Table 7's, the transition labels'; the
    condition tables', every condition's; vs_paper's, its models'; the others', the main
    condition's, every seed).
    """
    params = smk.params
    runs = getattr(params, "runs", None)
    covered = getattr(params, "conditions", {})
    held = getattr(params, "held", {})  # made elsewhere: the instances its folder holds
    with job_log(smk):
        instances = instance_table(smk.input.selected, smk.input.taxonomy, smk.input.overlap)
        if runs is not None:
            runs = {
                key: {**run, "instances": held.get(key, covered.get(run["condition"]))}
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
        # a shortcut baseline is tabled beside the models, never pooled into `all`
        averaged["baseline"] = averaged["model"].isin(getattr(params, "baselines", []))
        taxonomy = load_taxonomy(smk.input.taxonomy)
        tags = Counter(tag for _, tags in taxonomy.values() for tag in tags)
        tables = all_tables(averaged, pairs, params.vbvr_pairs, params.pool, tag_tasks=tags)
        tables["errors"] = errors(main.reset_index(drop=True))
        wanted = set(smk.output.keys())
        sources = {"transitions": pairs, **dict.fromkeys(sensitivity.CONDITION_TABLES, every)}
        if wanted & set(sensitivity.CONDITION_TABLES):
            tables |= sensitivity.conditions(every, covered)
        if "seed_variance" in wanted:
            tables["seed_variance"] = sensitivity.seed_variance(every)
        if "subset_stability" in wanted:
            tables["subset_stability"] = sensitivity.subset_stability(
                every, instances, params.subset_seed
            )
        if "vs_paper" in wanted:
            reliability = {  # Tables 3, 14, 15: the judges against people, where the run has them
                name: pd.read_csv(path)
                for name, path in (("judge_reliability", smk.input.get("reliability")),
                                   ("by_slice", smk.input.get("reliability_by_slice")))
                if path
            }  # fmt: skip
            tables["vs_paper"] = vs_paper(
                read_paper_table(smk.input.paper_table),
                tables | reliability,
                averaged,
                params.paper_rows,
                params.vbvr_pairs,
                selected=instances[["domain", "level"]],
                missing=records_frame(getattr(params, "coverage", [])),
            )
            sources["vs_paper"] = main[main["model"].isin(params.paper_rows)]
        for name, table in tables.items():
            reported = sources.get(name, main)[VERSION]
            table = tables[name] = with_judge(table, params.judge_model, reported)
            write_text(smk.output[name], table.to_csv(index=False))
        print(tables["errors"].to_string(index=False))
