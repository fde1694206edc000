# What is left of the study: <outdir>/plan.csv, printed. No output, so it always runs.
rule plan:
    log:
        f"{OUT}/logs/plan.log",
    localrule: True
    conda:
        "../envs/judge.yaml"
    params:
        study=lambda w: study_description(),
        prices=config["prices"],
    script:
        "../workflow_scripts/entry/plan.py"
