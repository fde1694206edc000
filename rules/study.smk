import shlex

from workflow_scripts.study.documents import Study
from workflow_scripts.study.status import StatusWriter


def study_description():
    """What the plan, the status page and the costs look at (study.documents.Study)."""
    runs = {}
    for key, (model, condition, _) in RUNS.items():
        spec = STUDY.models[model]
        generation = spec.generation or {}
        runs[key] = {
            "model": model,
            "source": spec.source,
            "main": key == model,
            "instances": ROWS[condition]["task"].to_dict(),
            "frames": generation.get("num_frames"),
            "fps": generation.get("fps"),
            "width": generation.get("width"),
            "height": generation.get("height"),
            "runtime_min": spec.resources.get("runtime"),
            "sample_video": next(iter(STUDY.videos.get(model, {}).values()), None),
        }
    judges = {
        name: {"model": judge["model"], "protocol": judge.get("protocol") or {}}
        for name, judge in judge_configs(config).items()
    }
    return {
        "outdir": OUT,
        "runs": runs,
        "judges": judges,
        "checkpoints": CHECKPOINTS,
        "pairs": [list(pair) for pair in TRANSITIONS.pairs],
        "frames_per_checkpoint": TRANSITIONS.frames_per_checkpoint,
        "steps": list(STUDY.steps),
        "decode": STUDY.decode,
        "judged": config["judge"]["enabled"] is not False,
    }


# What is left of the study: <outdir>/plan.csv, printed. No output, so it always runs.
rule plan:
    localrule: True
    params:
        study=lambda w: study_description(),
        prices=config["prices"],
    script:
        "../workflow_scripts/entry/plan.py"


# The run's progress (<outdir>/status.{csv,html}) from Snakemake's job events, and at the
# end tables/costs.csv: written by the main process, never a job, so nothing reruns.
STATUS = []


def start_status():
    """Attach the status writer to Snakemake's logger (the main process of a real run)."""
    if not workflow.is_main_process:
        return
    configfiles = [
        f"--configfile {shlex.quote(str(f))}" for f in workflow.overwrite_configfiles
    ]
    rerun = " ".join(["snakemake", *configfiles])
    writer = StatusWriter(
        Study.from_dict(study_description()), config["prices"], rerun, logger.info
    )
    logger.addHandler(writer)
    STATUS.append(writer)


def finish_status():
    """The last status and the run's costs (tables/costs.csv)."""
    for writer in STATUS:
        writer.finish()
        logger.removeHandler(writer)
