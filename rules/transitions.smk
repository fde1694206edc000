from workflow_scripts.transitions import load_transitions

# Needs judge.smk's TRANSITION_PARAMS, JUDGE_INSTANCE and GT_IMAGE: include it after judge.smk.
try:
    TRANSITIONS = load_transitions(config, STUDY)
except StudyError as err:
    raise WorkflowError(str(err)) from None
if STUDY.videos and workflow.is_main_process:
    logger.info(
        f"No transition labels for {', '.join(STUDY.videos)}: videos made elsewhere "
        "have no denoising checkpoints."
    )


rule label_transitions:
    input:
        denoise=f"{RUN}/denoise",
        image=instance_image,
        gt=lambda w: GT_IMAGE[w.instance] or [],
    output:
        f"{RUN}/transitions.json",
    log:
        f"{OUT}/logs/label_transitions/{{model}}/{{task}}/{{instance}}.log",
    localrule: True
    conda:
        "../envs/judge.yaml"
    resources:
        judge_api=1,
    params:
        transitions=TRANSITIONS.params(),
        judge=TRANSITION_PARAMS,
        instance=lambda w: JUDGE_INSTANCE[w.instance],
        human=lambda w: TRANSITIONS.human_params(w.model, w.instance),
    shell:
        f"{ENTRY}/label_transitions.py {JUDGE_CLIENT} "
        "--denoise {input.denoise:q} --image {input.image:q} --gt={input.gt:q} "
        "--transitions {params.transitions:q} --judge {params.judge:q} "
        "--instance {params.instance:q} --human {params.human:q} --output {output:q} "
        "> {log:q} 2>&1"


rule transitions_all:
    input:
        per_instance(f"{RUN}/transitions.json", STUDY.generated),


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
