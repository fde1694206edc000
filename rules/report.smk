from workflow_scripts.aggregate.sensitivity import CONDITION_TABLES
from workflow_scripts.aggregate.tables import TABLES, VBVR_PAIRS

# The sensitivity tables a run asks for: conditions (conditions:), seeds (seeds:),
# Table 13's half against full (subset: full); and every number the paper prints beside
# the run's own (vs_paper).
STUDY_TABLES = [
    *(CONDITION_TABLES if STUDY.conditions else []),
    *(["seed_variance"] if STUDY.seeds else []),
    *(["subset_stability"] if config["benchmark"]["subset"] == "full" else []),
    "vs_paper",
]
# With human preferences, vs_paper sets the judges' agreement beside Tables 3, 14 and 15.
RELIABILITY_TABLES = (
    {
        "reliability": f"{OUT}/tables/judge_reliability.csv",
        "reliability_by_slice": f"{OUT}/tables/judge_reliability_by_slice.csv",
    }
    if RELIABILITY["preferences"] or ranking_files(None)
    else {}
)


# How much of the selection each model made elsewhere (`source: videos|images`) holds a
# file of: such a model is judged on what its folder holds, the rest counted here.
rule coverage:
    output:
        coverage=report(
            f"{OUT}/tables/coverage.csv",
            caption="../report/coverage.rst",
            category="Tables",
        ),
        missing=f"{OUT}/tables/coverage_missing.csv",
    log:
        f"{OUT}/logs/coverage.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        coverage=STUDY.coverage.to_dict("records"),
    script:
        "../workflow_scripts/entry/coverage.py"


rule tables:
    input:
        **RELIABILITY_TABLES,
        paper_table=config["benchmark"]["paper_table"],
        scores=rules.judge_all.input,
        transitions=rules.transitions_all.input,
        selected=f"{OUT}/instances/selected.csv",
        taxonomy=config["benchmark"]["taxonomy"],
        overlap=config["benchmark"]["overlap"],
    output:
        **{
            name: report(
                f"{OUT}/tables/{name}.csv",
                caption="../report/tables.rst",
                category="Tables",
            )
            for name in [*TABLES, *STUDY_TABLES]
        },
    log:
        f"{OUT}/logs/tables.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        models=list(STUDY.models),
        no_checkpoints=STUDY.without_checkpoints,
        baselines=STUDY.static,
        vbvr_pairs=VBVR_PAIRS,
        pool=list(TRANSITIONS.pool),
        runs={
            key: {
                "model": model,
                "condition": condition,
                "seed": STUDY.registry_seed(model) if seed is None else seed,
            }
            for key, (model, condition, seed) in RUNS.items()
        },
        conditions={name: list(rows.index) for name, rows in STUDY.conditions.items()},
        subset_seed=config["benchmark"]["subset_seed"],
        paper_rows=PAPER_ROWS,
        held={model: list(videos) for model, videos in STUDY.videos.items()},
        coverage=VIDEO_COVERAGE,
        judge_model=config["judge"]["model"],
    script:
        "../workflow_scripts/entry/tables.py"


rule plots:
    input:
        **(
            {
                "conditions": rules.tables.output.conditions,
                "conditions_by_task": rules.tables.output.conditions_by_task,
            }
            if STUDY.conditions
            else {}
        ),
        vs_paper=rules.tables.output.vs_paper,
        final_by_domain_level=rules.tables.output.final_by_domain_level,
        skills=rules.tables.output.skills,
        transitions=rules.tables.output.transitions,
    output:
        **(
            {
                "conditions": report(
                    f"{OUT}/plots/conditions.png",
                    caption="../report/conditions.rst",
                    category="Plots",
                )
            }
            if STUDY.conditions
            else {}
        ),
        vs_paper=report(
            f"{OUT}/plots/vs_paper.png",
            caption="../report/vs_paper.rst",
            category="Plots",
        ),
        final_heatmap=report(
            f"{OUT}/plots/final_heatmap.png",
            caption="../report/final_heatmap.rst",
            category="Plots",
        ),
        skills=report(
            f"{OUT}/plots/skills.png", caption="../report/skills.rst", category="Plots"
        ),
        transitions=report(
            f"{OUT}/plots/transitions.png",
            caption="../report/transitions.rst",
            category="Plots",
        ),
    log:
        f"{OUT}/logs/plots.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    script:
        "../workflow_scripts/entry/plots.py"


rule trajectory_scores:
    input:
        checkpoints=per_task("judge_checkpoints", STUDY.pipelines, main_only=True),
        scores=per_task("judge", STUDY.pipelines, main_only=True),
    output:
        table=report(
            f"{OUT}/tables/trajectory_scores.csv",
            caption="../report/tables.rst",
            category="Tables",
        ),
        plot=report(
            f"{OUT}/plots/trajectory_scores.png",
            caption="../report/trajectory_scores.rst",
            category="Plots",
        ),
    log:
        f"{OUT}/logs/trajectory_scores.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        judge_model=config["judge"]["model"],
    script:
        "../workflow_scripts/entry/trajectory_scores.py"


# Trusting the judge: every judge against the human preference pairs (Tables 3, 14, 15).
rule judge_reliability:
    input:
        scores=rules.judge_all.input,
        variants=per_variant(),
        selected=f"{OUT}/instances/selected.csv",
        taxonomy=config["benchmark"]["taxonomy"],
        overlap=config["benchmark"]["overlap"],
        preferences=preference_files,
        rankings=ranking_files,
    output:
        table=report(
            f"{OUT}/tables/judge_reliability.csv",
            caption="../report/judge_reliability.rst",
            category="Judge",
        ),
        by_slice=report(
            f"{OUT}/tables/judge_reliability_by_slice.csv",
            caption="../report/judge_reliability.rst",
            category="Judge",
        ),
        pairs=f"{OUT}/tables/preference_pairs.csv",
        plot=report(
            f"{OUT}/plots/judge_reliability.png",
            caption="../report/judge_reliability.rst",
            category="Judge",
        ),
    log:
        f"{OUT}/logs/judge_reliability.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        models=list(STUDY.models),
        judges=JUDGES,
        judge_models={name: c["model"] for name, c in judge_configs(config).items()},
    script:
        "../workflow_scripts/entry/judge_reliability.py"


# Judge against judge on the same videos, without people.
rule judge_agreement:
    input:
        scores=rules.judge_all.input,
        variants=per_variant(),
        selected=f"{OUT}/instances/selected.csv",
        taxonomy=config["benchmark"]["taxonomy"],
        overlap=config["benchmark"]["overlap"],
    output:
        table=report(
            f"{OUT}/tables/judge_agreement.csv",
            caption="../report/judge_agreement.rst",
            category="Judge",
        ),
        by_slice=report(
            f"{OUT}/tables/judge_agreement_by_slice.csv",
            caption="../report/judge_agreement.rst",
            category="Judge",
        ),
    log:
        f"{OUT}/logs/judge_agreement.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        models=list(STUDY.models),
        judges=JUDGES,
        judge_models={name: c["model"] for name, c in judge_configs(config).items()},
    script:
        "../workflow_scripts/entry/judge_agreement.py"
