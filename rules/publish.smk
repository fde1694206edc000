from workflow_scripts.publish.dataset import settings_digest

PUBLISH = config["publish"]
if PUBLISH["upload"] and not PUBLISH["repo_id"]:
    raise WorkflowError(
        "publish.upload is true but publish.repo_id is not set: set it to the Hub dataset "
        "(owner/name) the published folder goes to."
    )
# What the published folder says of each run: its model, condition, seed, the digest of its
# settings, its instances, and for a run with checkpoints the steps decoded and judged.
PUBLISHED_RUNS = {
    key: {
        "model": model,
        "condition": condition,
        "seed": STUDY.registry_seed(model) if seed is None else seed,
        "digest": settings_digest(GENERATION_PARAMS[key]),
        "instances": list(RUN_ROWS[key].index),
        **(
            {
                "decode": config["denoise"]["decode"],
                "steps": list(STUDY.steps),
                "judged_steps": CHECKPOINTS if key == model else [],
            }
            if model in STUDY.pipelines
            else {}
        ),
    }
    for key, (model, condition, seed) in RUNS.items()
}


# The study as a dataset others can load (`datasets.load_dataset`): each model's videos and
# checkpoint videos, one metadata row per file, a dataset card and a leaderboard card per
# model (workflow_scripts/publish/). It sends nothing: that is rule publish_upload.
rule publish:
    input:
        **(
            {
                "finals": rules.tables.output.final_by_domain_level,
                "strict": rules.tables.output.strict_success,
            }
            if judge_enabled()
            else {}
        ),
        videos=per_instance(f"{RUN}/video.mp4", main_only=False),
        checkpoints=per_instance(f"{RUN}/denoise", STUDY.pipelines, main_only=False),
        scores=judge_targets(rules.judge_all.input),
        transitions=judge_targets(rules.transitions_all.input),
        judged_checkpoints=judge_targets(
            per_task("judge_checkpoints", STUDY.pipelines, main_only=True)
            if CHECKPOINTS
            else []
        ),
        citation=os.path.join(workflow.basedir, "tasks/paper_citation.bib"),
    output:
        directory(f"{OUT}/publish"),
    log:
        f"{OUT}/logs/publish.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        runs=PUBLISHED_RUNS,
        instances={
            condition: rows[
                ["task", "level", "domain", "skills", "checklist"]
            ].to_dict("index")
            for condition, rows in ROWS.items()
        },
        models={
            model: {
                "kind": spec.kind,
                "settings": GENERATION_PARAMS[model],
                "digest": settings_digest(GENERATION_PARAMS[model]),
            }
            for model, spec in STUDY.models.items()
        },
        judge=JUDGE_PARAMS,
        card={key: PUBLISH[key] for key in ("license", "pretty_name")},
    script:
        "../workflow_scripts/entry/publish.py"


# The published folder to the Hub (`publish.repo_id`) only with `publish.upload: true`;
# else a dry run: the list of what would go, nothing sent.
rule publish_upload:
    input:
        rules.publish.output,
    output:
        f"{OUT}/publish_upload.txt",
    log:
        f"{OUT}/logs/publish_upload.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        repo_id=PUBLISH["repo_id"],
        upload=PUBLISH["upload"],
        private=PUBLISH["private"],
    script:
        "../workflow_scripts/entry/publish_upload.py"
