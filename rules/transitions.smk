rule label_transitions:
    input:
        denoise=task_runs(f"{RUN}/denoise"),
        images=task_images,
        frames=f"{TASK}/frames",
    output:
        directory(f"{TASK}/transitions"),  # <instance>.json
    log:
        f"{OUT}/logs/label_transitions/{{model}}/{{task}}.log",
    wildcard_constraints:
        model=one_of(PIPELINE_RUNS),
    localrule: True
    conda:
        "../envs/judge.yaml"
    resources:
        judge_api=1,
    params:
        transitions=TRANSITIONS.params(),
        judge=TRANSITION_PARAMS,
        instances=task_instances,
        human=lambda w: TRANSITIONS.human_params(w.model, selected_task(w)),
    script:
        "../workflow_scripts/entry/label_transitions.py"


rule transitions_all:
    input:
        per_task("transitions", STUDY.pipelines),


rule export_label_sheet:
    input:
        rules.transitions_all.input,
    output:
        f"{OUT}/transitions/to_label.csv",
    log:
        f"{OUT}/logs/export_label_sheet.log",
    localrule: True
    conda:
        "../envs/judge.yaml"
    params:
        pairs=TRANSITIONS.pairs,
    script:
        "../workflow_scripts/entry/export_label_sheet.py"


rule label_agreement:
    input:
        rules.transitions_all.input,
    output:
        matrix=f"{OUT}/tables/label_agreement.csv",
        kappa=f"{OUT}/tables/label_agreement.json",
    log:
        f"{OUT}/logs/label_agreement.log",
    localrule: True
    conda:
        "../envs/judge.yaml"
    script:
        "../workflow_scripts/entry/label_agreement.py"
