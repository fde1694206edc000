"""Kill the whole workflow (SIGKILL to its process group) during generation, then during
judging; each rerun must finish the work without redoing what was done.

What a crash leaves, as measured here: incomplete markers on the outputs of the jobs it cut
off, and Snakemake's lock. A cut-off job that wrote no output yet is simply run again; one
that did (here: its video written, its checkpoints still decoding) stops a rerun, dry runs
included, with IncompleteFilesException unless `--rerun-incomplete` (the SLURM profile sets
it), which redoes that job from its saved denoising state. Then the lock stops the rerun
("cannot be locked"): `snakemake --unlock` once, and the rerun finishes. Finished jobs are
never redone.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import yaml

from tests.support.fake_vlm import FakeVLM, Received
from tests.support.scripted_judge import Judge
from tests.support.workflow import REPO, default_config, examples_without, snakemake

DELAY = 0.5  # seconds per judge reply: judging takes a few seconds a video
TASKS = ["sorting", "maze_square"]  # two judge jobs
INSTANCES = 3  # level 1 of a release without maze_square_lv1_002
STEPS = 10  # tiny_wan22's denoising steps here (checkpoints 1, 2, 3, 4, then the video)


def start(workdir: Path, config: dict, *args: str) -> subprocess.Popen:
    """Snakemake (`--cores 2`) in its own session, its log to workdir/run.log."""
    (workdir / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(workdir)]
    command += ["--configfile", str(workdir / "config.yaml"), "--cores", "2", *args]
    with open(workdir / "run.log", "w", encoding="utf-8") as log:
        return subprocess.Popen(command, stdout=log, stderr=log, start_new_session=True)


def kill_when(process: subprocess.Popen, ready, timeout: float = 300) -> float:
    """SIGKILL the process group once `ready()`; the kill's time (time.monotonic)."""
    deadline = time.monotonic() + timeout
    while not ready():
        assert process.poll() is None, "the run ended before the kill"
        assert time.monotonic() < deadline, "no kill point within the timeout"
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    killed_at = time.monotonic()
    process.wait()
    return killed_at


def resume(workdir: Path, config: dict, *targets: str) -> None:
    """After a crash: the lock stops a rerun; unlock, then rerun, incomplete jobs included."""
    locked = snakemake(workdir, config, "--rerun-incomplete", *targets)
    assert locked.returncode != 0 and "cannot be locked" in locked.stdout, locked.stdout[-2000:]
    assert snakemake(workdir, config, "--unlock").returncode == 0
    done = snakemake(workdir, config, "--rerun-incomplete", *targets)
    assert done.returncode == 0, done.stdout[-3000:]


def finished(workdir: Path, rule: str, wildcard: str = "instance") -> set[str]:
    """The `wildcard` of each `rule` job the killed run logged finished (incomplete marker
    gone)."""
    log = (workdir / "run.log").read_text(encoding="utf-8")
    lines = r"(?:    .*\n)*?"  # more lines of the job's block
    block = rf"rule {rule}:\n{lines}    jobid: (\d+)\n{lines}    wildcards: .*{wildcard}=([^,\s]+)"
    instance = dict(re.findall(block, log))
    return {instance[job] for job in re.findall(rf"Finished jobid: (\d+) \(Rule: {rule}\)", log)}


def outputs(run: Path) -> list[Path]:
    return [run / "video.mp4", run / "generation.json", *sorted((run / "denoise").iterdir())]


def stamp(path: Path) -> tuple[int, int]:
    status = path.stat()
    return status.st_ino, status.st_mtime_ns


def request_key(received: Received) -> str:
    """A hash of what a call sends: the same key twice is the same call paid twice."""
    digest = hashlib.sha256(json.dumps([received.system, received.texts]).encode())
    for image in received.images:
        digest.update(hashlib.sha256(image).digest())
    return digest.hexdigest()


class DistinctJudge(Judge):
    """The scripted judge, its window comments naming the frames' hash: every video's
    verdict call then differs, so that only a crash can repeat a call."""

    def __call__(self, received: Received) -> dict:
        reply = super().__call__(received)
        for item in reply.get("evaluations", []):
            item["comment"] += " " + request_key(received)[:12]
        return reply


def test_a_killed_run_resumes_without_redoing_videos_or_paying_a_call_twice(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_VLM_KEY", "test-key")
    root = examples_without(tmp_path / "release", TASKS, "maze_square_lv1_002")
    config = default_config(tmp_path, root=str(root), tasks=TASKS, levels=[1], subset="full")
    registry = yaml.safe_load((REPO / "config" / "models.yaml").read_text(encoding="utf-8"))
    registry["tiny_wan22"]["generation"]["num_inference_steps"] = STEPS
    (tmp_path / "models.yaml").write_text(yaml.safe_dump(registry), encoding="utf-8")
    config["model_registry"] = str(tmp_path / "models.yaml")
    config["denoise"]["steps"] = [1, 2, 3, 4, STEPS]  # saved at steps 5 and 10
    model = tmp_path / "results" / "tiny_wan22"

    # 1. generation: kill once a generate job is done and another has written its video but
    # is still decoding its checkpoints (an output exists: the job is marked incomplete)
    def decoding() -> bool:
        videos = {path.parent.name for path in model.glob("*/*/video.mp4")}
        done = {path.parent.name for path in model.glob("*/*/generation.json")}
        return bool(finished(tmp_path, "generate") and videos - done)

    kill_when(start(tmp_path, config, "generate_all"), decoding)
    runs = {path.parent.name: path.parent for path in model.glob("*/*/video.mp4")}
    done = {path: stamp(path) for n in finished(tmp_path, "generate") for path in outputs(runs[n])}
    cut = set(runs.values()) - {p.parent for p in done}
    assert done and cut
    incomplete = snakemake(tmp_path, config, "-n", "generate_all")
    assert "IncompleteFilesException" in incomplete.stdout, incomplete.stdout[-2000:]
    resume(tmp_path, config, "generate_all")
    assert len(list(model.glob("*/*/generation.json"))) == INSTANCES
    assert {path: stamp(path) for path in done} == done  # not one redone
    for run in cut:  # its 10 steps were saved: only the decoding is done again
        assert json.loads((run / "generation.json").read_text())["resumed_from_step"] == STEPS
    assert not (tmp_path / "results" / "resume").exists()

    # 2. judging, one (model, task) job at a time: kill once a judge job is done and the
    # other's calls are in flight
    with FakeVLM(DistinctJudge(tier=2, violations=[0, 1, 0, 0]), delay=DELAY) as fake:
        config["judge"] = {"enabled": True, "model": "fake", "base_url": fake.url}
        config["judge"] |= {"api_key_env": "FAKE_VLM_KEY", "backoff_initial_s": 0.01}
        process = start(tmp_path, config, "judge_all", "--resources", "judge_api=1")
        judged = lambda: finished(tmp_path, "judge", "task")  # noqa: E731
        killed_at = kill_when(process, lambda: judged() and fake.in_flight)
        in_flight, sent_before = fake.in_flight, len(fake.requests)
        scored = {p: stamp(p) for task in judged() for p in model.glob(f"{task}/judge/*/*.json")}
        resume(tmp_path, config, "judge_all")
    scores = [json.loads(path.read_text()) for path in model.glob("*/judge/*/score.json")]
    assert len(scores) == INSTANCES and {score["status"] for score in scores} == {"ok"}
    assert scored and {path: stamp(path) for path in scored} == scored
    assert len(fake.requests) > sent_before  # the rerun judged the rest

    # a call answered before the kill is never made again; one cut off in flight may be
    sent = Counter(request_key(received) for received in fake.requests)
    resent = {key for key, count in sent.items() if count > 1}
    answered = {
        request_key(r) for r in fake.requests[:sent_before] if r.at + DELAY < killed_at - 0.2
    }
    print(f"\n{sum(sent.values())} calls, {in_flight} in flight at the kill, {len(resent)} resent")
    assert answered and not resent & answered
    assert len(resent) <= in_flight
