"""The bodies of rules `tables` and `plots`."""

from __future__ import annotations

import pandas as pd

from workflow_scripts.aggregate import plots
from workflow_scripts.aggregate.collect import collect, instance_table
from workflow_scripts.aggregate.tables import all_tables
from workflow_scripts.common.logs import job_log

PLOTS = {
    "final_heatmap": ("final_by_domain_level", plots.final_heatmap),
    "skills": ("skills", plots.skill_bars),
    "transitions": ("transitions", plots.transition_bars),
}


def tables_job(smk) -> None:
    """Rule `tables`: the run's per-instance results into every table of DESIGN's contract.

    transitions.json is read only when the rule lists it among its inputs.
    """
    with job_log(smk):
        instances = instance_table(smk.input.selected, smk.input.taxonomy, smk.input.overlap)
        results, pairs = collect(
            instances,
            smk.params.models,
            smk.config["outdir"],
            transitions=bool(smk.input.get("transitions")),
            no_checkpoints=smk.params.no_checkpoints,
        )
        tables = all_tables(results, pairs, smk.params.vbvr_pairs, smk.params.pool)
        for name, table in tables.items():
            table.to_csv(smk.output[name], index=False)
        print(tables["errors"].to_string(index=False))


def plots_job(smk) -> None:
    """Rule `plots`: each figure from its table."""
    with job_log(smk):
        for name, (table, draw) in PLOTS.items():
            draw(pd.read_csv(smk.input[table]), smk.output[name])
