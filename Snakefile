import os
import sys

from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version, validate

min_version("9.0")

# The packages ship with the workflow: importable whether installed or not (rule scripts
# put the same folder on their path).
sys.path.insert(0, workflow.basedir)


from workflow_scripts.common.config import SchemaError, check


configfile: os.path.join(workflow.basedir, "config/config.yaml")


try:
    check(config, os.path.join(workflow.basedir, "config/schemas/config.schema.yaml"))
except SchemaError as err:
    raise WorkflowError(str(err)) from None
validate(config, "config/schemas/config.schema.yaml")  # fills in the defaults


report: "report/workflow.rst"


include: "rules/common.smk"
include: "rules/progress.smk"
include: "rules/generate.smk"
include: "rules/judge.smk"
include: "rules/transitions.smk"
include: "rules/report.smk"
include: "rules/images.smk"
include: "rules/gallery.smk"
include: "rules/study.smk"
include: "rules/publish.smk"


# The study's products; every video, score and transition label comes in through them.
rule all:
    default_target: True
    input:
        rules.select_instances.output,
        rules.coverage.output if len(STUDY.coverage) else [],
        rules.generate_all.input,
        judge_targets(rules.label_agreement.output if TRANSITIONS.human else []),
        judge_targets(rules.plots.output),
        judge_targets(rules.trajectory_scores.output if CHECKPOINTS else []),
        judge_targets(rules.judge_agreement.output if VARIANTS else []),
        judge_targets(
            rules.judge_reliability.output if RELIABILITY["preferences"] else []
        ),
        rules.gallery.output.index,
        rules.export_official_all.input,
        rules.image_all.input,


# Before any job: the API key of every job about to call an API, the weights of every model
# about to generate; the outdir's lock against a run in another working directory; a note
# when the run is narrower than its outdir; then the status page while the run goes
# (rules/study.smk).
onstart:
    check_api_keys()
    check_weights()
    lock_outdir()
    try:
        note_narrower_run()
        start_status()
    except BaseException:
        unlock_outdir()
        raise


# At the end of a run: the last status and the costs; the judge service failure that
# stopped it, the judge's error count (an outdir file that does not read back: its message);
# the outdir's lock goes.
onsuccess:
    try:
        with outdir_file_errors():
            finish_status()
            report_judge_errors()
    finally:
        unlock_outdir()


onerror:
    try:
        with outdir_file_errors():
            finish_status(failed=True)
            report_judge_errors(failed=True)
    finally:
        unlock_outdir()
