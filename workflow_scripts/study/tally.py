"""What a run's documents record so far, counted once per (run, task): the one count the
plan, the status page and the costs read (`documents.Study` says which documents)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from workflow_scripts.judge.drift import versions
from workflow_scripts.study.documents import Documents, Study, generation_seconds, spent

# per stage: documents (n), of them `ok`, and with calls (`paid`: not a refused video's);
# and what they spent (documents.spent)
STAGE_KEYS = ("n", "ok", "paid", "calls", "cached_calls", "input_tokens", "output_tokens")


@dataclass
class Tally:
    """The counts of some instances of one run."""

    videos: int = 0  # instances
    made: int = 0  # videos made (a generation.json; made elsewhere: the video)
    measured: int = 0  # of them, with generation seconds (generation.json)
    seconds: float = 0.0  # their generation seconds (documents.generation_seconds)
    loads: float = 0.0  # of which loading the weights (a batch job's load, in each video)
    refused: int = 0  # generations in error (a video API's refusal)
    stages: dict = field(default_factory=dict)  # stage -> Counter of STAGE_KEYS
    errors: list = field(default_factory=list)  # (instance, stage, reason) of each error
    versions: dict = field(default_factory=dict)  # stage -> Counter: documents per model version

    def stage(self, name: str) -> Counter:
        return self.stages.get(name, Counter())

    def job_seconds(self, batch: int) -> float:
        """`seconds` with each load counted once per batch of `batch` videos (a batch job
        records its one load in each of its videos)."""
        return self.seconds - self.loads + self.loads / batch

    def __add__(self, other: Tally) -> Tally:
        stages = {name: self.stage(name) + other.stage(name)
                  for name in {*self.stages, *other.stages}}  # fmt: skip
        return Tally(
            videos=self.videos + other.videos,
            made=self.made + other.made,
            measured=self.measured + other.measured,
            seconds=self.seconds + other.seconds,
            loads=self.loads + other.loads,
            refused=self.refused + other.refused,
            stages=stages,
            errors=self.errors + other.errors,
            versions={
                name: self.versions.get(name, Counter()) + other.versions.get(name, Counter())
                for name in {*self.versions, *other.versions}
            },
        )


def tally(study: Study, run, instances, docs: Documents) -> Tally:
    """The counts of `run`'s `instances` (each read once per version, `docs`)."""
    count = Tally(videos=len(instances))
    stages = study.stages(run)
    for instance in instances:
        made = docs.read(study.generation(run, instance))
        count.made += made is not None
        refused = isinstance(made, dict) and made.get("status") == "error"
        if isinstance(made, dict) and made.get("seconds"):
            count.measured += 1
            count.seconds += generation_seconds(made)
            count.loads += made["seconds"].get("load", 0.0)
        if refused:
            count.refused += 1
            count.errors.append((instance, "generate", made.get("reason", "")))
        for stage in stages:
            document = docs.read(study.document(stage, run, instance))
            if not document:
                continue
            used = spent(document)
            ok = document.get("status") == "ok"
            paid = bool(used["calls"] + used["cached_calls"])
            count.stages[stage] = count.stage(stage) + Counter(n=1, ok=ok, paid=paid, **used)
            reported = [document, *document.get("steps", [])]  # a checkpoint document's steps
            seen = versions(part.get("model_version") for part in reported)
            count.versions[stage] = count.versions.get(stage, Counter()) + seen
            if not ok and not refused:  # a refused video's judgement only repeats it
                count.errors.append((instance, stage, document.get("reason", "")))
    return count


def run_tallies(study: Study, docs: Documents) -> dict[str, Tally]:
    """Each run key's counts over all its instances."""
    return {key: tally(study, run, run.instances, docs) for key, run in study.runs.items()}
