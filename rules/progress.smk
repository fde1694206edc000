# What the plan, the status page and the costs look at, and the status page's writer
# (functions only: the rule `plan` is in study.smk).
import shlex

from workflow_scripts.study.documents import Study
from workflow_scripts.study.status import StatusWriter
from workflow_scripts.image_api.providers import nominal_size
from workflow_scripts.video_api.providers import nominal_clip


def study_description():
    """What the plan, the status page and the costs look at (study.documents.Study)."""
    runs = {}
    for key, (model, condition, _) in RUNS.items():
        spec = STUDY.models[model]
        generation = spec.generation or {}
        clip = (
            nominal_clip(spec.provider, generation)
            if model in STUDY.api
            else {
                # a pipeline's or a held image's
                "frames": generation.get("num_frames"),
                "fps": generation.get("fps"),
                "width": generation.get("width"),
                "height": generation.get("height"),
            }
        )
        runs[key] = {
            "model": model,
            "kind": spec.kind,
            "main": key == model,
            "instances": RUN_ROWS[key]["task"].to_dict(),
            **clip,
            "runtime_min": time_limit(spec),
            "gpu_type": spec.resources.get("gpu_type"),
            "batch": spec.resources.get("batch", 1),
            "sample": next(iter(STUDY.videos.get(model, {}).values()), None),
            "entry": REGISTRY[model],
        }
    for model, spec in STUDY.image_models.items():  # the image branch: one frame each
        generation = spec.generation or {}
        width, height = (
            nominal_size(spec.provider, generation)
            if spec.provider
            else (generation.get("width"), generation.get("height"))
        ) or (None, None)
        runs[model] = {
            "model": model,
            "kind": spec.kind,
            "output": "image",
            "main": True,
            "instances": STUDY.image_rows_of(model)["task"].to_dict(),
            "frames": 1,
            "fps": 1.0,
            "width": width,
            "height": height,
            "runtime_min": time_limit(spec),
            "gpu_type": spec.resources.get("gpu_type"),
            "sample": next(iter(STUDY.images.get(model, {}).values()), None),
            "entry": REGISTRY[model],
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


# The run's progress (<outdir>/status.{csv,html}) from Snakemake's job events, and at the
# end tables/costs.csv: written by the main process, never a job, so nothing reruns.
STATUS = []


def start_status():
    """Attach the status writer to Snakemake's logger (the main process of a real run)."""
    if not workflow.is_main_process:
        return
    # what a rerun command needs after its target: this run's cores (the profile on a
    # cluster), config files and --config overrides
    cores = workflow.resource_settings.cores
    options = ["--cores", str(cores)] if workflow.local_exec else ["--profile", "slurm"]
    if workflow.overwrite_configfiles:
        options += ["--configfile", *map(str, workflow.overwrite_configfiles)]
    if workflow.config_settings.config_args:
        options += ["--config", *workflow.config_settings.config_args]
    writer = StatusWriter(
        Study.from_dict(study_description()),
        config["prices"],
        shlex.join(options),
        logger.info,
        judge_off=judge_off(),
    )
    logger.addHandler(writer)
    STATUS.append(writer)


def finish_status(failed=False):
    """The last status, saying the run has ended (`failed`: in an error), and the run's
    costs (tables/costs.csv)."""
    for writer in STATUS:
        writer.finish(failed)
        logger.removeHandler(writer)
