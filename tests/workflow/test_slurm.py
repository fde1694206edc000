"""The workflow through the repository's SLURM profile on a real local SLURM.

`generate` must go through sbatch to the GPU partition with the registry's GPU request and
run with a GPU SLURM gave it (CUDA_VISIBLE_DEVICES, as SLURM's TaskProlog saw it); contact
sheets to the CPU partition without one; the judge and the other localrules must run on the
submit host. The squeue lines seen during the run are printed (`pytest -s`). A killed
Snakemake leaves its SLURM jobs running; a rerun after they finish keeps their videos. The
image branch: `generate_image` through sbatch to the GPU partition, `generate_image_api` on
the submit host under the profile's `image_api` total. A
video API job requeued mid-wait waits on the same operation. A batch job (`resources.batch`)
goes where `generate` goes, and requeued in its second instance, restores the first and
resumes the second. Every test that starts SLURM is
in this module: xdist (`--dist loadscope`) runs it on one worker, one SLURM at a time.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from tests.support.fake_video_api import API_KEY, FakeVideoAPI
from tests.support.fake_vlm import FakeVLM
from tests.support.image_doubles.server import API_KEY as IMAGE_KEY
from tests.support.image_doubles.server import FakeImageAPI
from tests.support.scripted_judge import Judge, Transitioner
from tests.support.video_api_run import KEY_ENV, MODELS, api_config
from tests.support.workflow import REPO, default_config, snakemake

SQUEUE = "JobID:6,Partition:6,State:11,Comment:90,tres-per-job:14,NodeList:10"
GENERATE = "rule_generate_wildcards_tiny_wan22_sorting_sorting_lv1_00{}"  # a job's comment


def squeue(cluster) -> dict[str, str]:
    """job id -> its squeue line, finished jobs included (MinJobAge)."""
    lines = cluster.run("squeue", "--states=all", "--noheader", "-O", SQUEUE).splitlines()
    return {line.split()[0]: line.rstrip() for line in lines}


def stamp(path: Path) -> tuple[int, int]:
    return path.stat().st_ino, path.stat().st_mtime_ns


def gpu_config(workdir: Path, judge: dict) -> dict:
    """Two instances, tiny_wan22 asking for a GPU (`gpu: 1`, as the full-size models do)."""
    registry = yaml.safe_load((REPO / "config" / "models.yaml").read_text(encoding="utf-8"))
    registry["tiny_wan22"]["resources"]["gpu"] = 1
    (workdir / "models.yaml").write_text(yaml.safe_dump(registry, allow_unicode=True))
    config = default_config(workdir, tasks=["sorting"], levels=[1], subset="full")
    return config | {"model_registry": str(workdir / "models.yaml"), "judge": judge}


def start(workdir: Path, config: dict, *args: str) -> subprocess.Popen:
    """Snakemake with `--profile <repo>/slurm` in its own session; its log: workdir/run.log."""
    (workdir / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(workdir)]
    command += ["--configfile", str(workdir / "config.yaml"), "--profile", str(REPO / "slurm")]
    command += ["--slurm-init-seconds-before-status-checks", "1", *args]  # a test-sized poll
    with open(workdir / "run.log", "w", encoding="utf-8") as log:
        return subprocess.Popen(
            command, cwd=workdir, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )


def watch(cluster, until, timeout: float = 600) -> list[str]:
    """Every distinct squeue line, polled until `until(lines so far)`."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while True:
        seen += [line for line in squeue(cluster).values() if line not in seen]
        if until(seen):
            return seen
        if time.monotonic() > deadline:
            raise TimeoutError(f"not done within {timeout} s:\n" + "\n".join(seen))
        time.sleep(0.5)


def requeue(cluster, jobs) -> None:
    """`scontrol requeue` each job, then release it: SLURM holds a requeued job back (its
    BeginTime) for a while, longer than a test waits."""
    for job in jobs:
        cluster.run("scontrol", "requeue", job)
    pending = lambda _: all(" PENDING " in squeue(cluster)[job] for job in jobs)  # noqa: E731
    watch(cluster, pending, timeout=120)
    for job in jobs:
        cluster.run("scontrol", "update", f"JobId={job}", "StartTime=now")


def target_in(outdir: Path, target: str | Path) -> str:
    """A rule's name as it is; a file as a path under `outdir`."""
    return str(outdir / target) if isinstance(target, Path) else target


def requeued_once(cluster, workdir: Path, config: dict, target: str | Path, ready) -> str:
    """Snakemake with the profile on `target` (a rule, or a file under the outdir); its one
    job requeued once `ready()`; the run waited on to its end, the job run again, not
    submitted again. The job's id."""
    before = set(squeue(cluster))
    process = start(workdir, config, target_in(workdir / "results", target))
    log = workdir / "run.log"

    def saved(_) -> bool:
        assert process.poll() is None, log.read_text(encoding="utf-8")[-3000:]
        return ready()

    watch(cluster, saved, timeout=300)
    (job,) = set(squeue(cluster)) - before
    requeue(cluster, [job])
    seen = watch(cluster, lambda _: process.poll() is not None)
    print(f"\nsqueue -O {SQUEUE}, after the requeue:", *seen, sep="\n")
    assert process.wait() == 0, log.read_text(encoding="utf-8")[-4000:]
    assert set(squeue(cluster)) - before == {job}
    return job


def made_as_locally(workdir: Path, config: dict, target: str | Path, folder: Path) -> int:
    """`target` made again without SLURM, uninterrupted, under workdir/local: each video under
    `folder` (in the outdir) has the bytes of its local twin. How many videos there are."""
    results, local = workdir / "results", workdir / "local" / "results"
    done = snakemake(local.parent, config | {"outdir": str(local)}, target_in(local, target))
    assert done.returncode == 0, done.stdout[-3000:]
    videos = sorted((results / folder).rglob("*.mp4"))
    for path in videos:
        assert path.read_bytes() == (local / path.relative_to(results)).read_bytes()
    return len(videos)


def test_profile_puts_generate_on_gpus_and_the_judge_on_the_submit_host(
    slurm_cluster, tmp_path, monkeypatch
):
    monkeypatch.setenv("FAKE_VLM_KEY", "test-key")
    before = set(squeue(slurm_cluster))
    with FakeVLM(Transitioner(other=Judge(tier=2, violations=[0, 1, 0, 0]))) as fake:
        judge = {"enabled": True, "model": "fake", "base_url": fake.url}
        judge |= {"api_key_env": "FAKE_VLM_KEY", "backoff_initial_s": 0.01}
        process = start(tmp_path, gpu_config(tmp_path, judge))
        seen = watch(slurm_cluster, lambda _: process.poll() is not None)
    log = (tmp_path / "run.log").read_text(encoding="utf-8")
    tasks = slurm_cluster.tasks_log.read_text() if slurm_cluster.tasks_log.exists() else ""
    print(f"\nsqueue -O {SQUEUE}, during the run:", *seen, sep="\n")
    print("TaskProlog: job, step (none: the batch script), CUDA_VISIBLE_DEVICES", tasks, sep="\n")
    where = [line for line in log.splitlines() if re.match(r"localrule \w+:|Job \d+ has", line)]
    print("Snakemake: localrule (submit host) | submitted to SLURM", *where, sep="\n")
    assert process.wait() == 0, log[-4000:]

    jobs = {job: line.split() for job, line in squeue(slurm_cluster).items() if job not in before}
    assert sorted(fields[3] for fields in jobs.values()) == [  # all that went through sbatch
        "rule_contact_sheet_wildcards_tiny_wan22",
        *(GENERATE.format(n) for n in (1, 2)),
        "rule_prepare_frames_wildcards_tiny_wan22_sorting",  # the VLM jobs' frames: a CPU job
    ]
    for job, fields in jobs.items():
        assert fields[2] == "COMPLETED", fields
        if "generate" in fields[3]:  # asked for a GPU (--gpus=1) and got one, in the step
            assert fields[1] == "gpu" and fields[4] == "gres:gpu:1", fields
            assert re.search(rf"^{job} 0 [01]$", tasks, re.MULTILINE), tasks
        else:
            assert fields[1] == "cpu" and fields[4] == "N/A", fields
            assert re.search(rf"^{job} 0 none$", tasks, re.MULTILINE), tasks
    assert any(" RUNNING " in line and "gres:gpu:1" in line for line in seen), seen
    for rule in ("judge", "label_transitions", "select_instances", "gallery"):
        assert f"localrule {rule}:" in log, rule  # on the submit host
    assert re.search(r"Provided resources: .*judge_api\D+16\b", log)  # the profile's cap
    assert fake.requests
    scores = list((tmp_path / "results" / "tiny_wan22").glob("sorting/judge/*/score.json"))
    assert len(scores) == 2 and all(json.loads(p.read_text())["status"] == "ok" for p in scores)


def test_profile_puts_image_pipelines_on_gpus_and_image_apis_on_the_submit_host(
    slurm_cluster, tmp_path, monkeypatch
):
    monkeypatch.setenv("FAKE_IMAGE_KEY", IMAGE_KEY)
    before = set(squeue(slurm_cluster))
    registry = yaml.safe_load((REPO / "config" / "models.yaml").read_text(encoding="utf-8"))
    registry["tiny_qwen_image_edit"]["resources"]["gpu"] = 1  # as the full-size ones ask
    with FakeImageAPI() as fake_image:
        registry["nano_banana_pro"] |= {
            "api_key_env": "FAKE_IMAGE_KEY",
            "base_url": fake_image.base_url("gemini_image"),
        }
        (tmp_path / "models.yaml").write_text(yaml.safe_dump(registry), encoding="utf-8")
        config = default_config(tmp_path, tasks=["sorting"], levels=[1], subset="full")
        config |= {"models": ["static_image"], "judge": {"enabled": False}}
        config |= {"image_models": ["tiny_qwen_image_edit", "nano_banana_pro"]}
        process = start(tmp_path, config | {"model_registry": str(tmp_path / "models.yaml")},
                        "image_all")  # fmt: skip
        watch(slurm_cluster, lambda _: process.poll() is not None)
    log = (tmp_path / "run.log").read_text(encoding="utf-8")
    assert process.wait() == 0, log[-4000:]
    jobs = {job: line.split() for job, line in squeue(slurm_cluster).items() if job not in before}
    assert sorted(fields[3] for fields in jobs.values()) == [
        f"rule_generate_image_wildcards_tiny_qwen_image_edit_sorting_sorting_lv1_00{n}"
        for n in (1, 2)
    ]
    for fields in jobs.values():
        assert fields[1:3] == ["gpu", "COMPLETED"] and fields[4] == "gres:gpu:1", fields
    assert log.count("localrule generate_image_api:") == 2, log[-4000:]  # on the submit host
    assert re.search(r"Provided resources: .*image_api\D+4\b", log)  # the profile's cap
    assert len(fake_image.sent) == 2
    assert len(list((tmp_path / "results").glob("*/sorting/*/image.png"))) == 4


def test_a_killed_snakemake_leaves_its_jobs_running_and_a_rerun_keeps_their_videos(
    slurm_cluster, tmp_path
):
    config = gpu_config(tmp_path, {"enabled": False})
    before = set(squeue(slurm_cluster))
    process = start(tmp_path, config, "generate_all")
    both = {GENERATE.format(n) for n in (1, 2)}
    watch(slurm_cluster, lambda seen: {ln.split()[3] for ln in seen if " RUNNING " in ln} == both)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()

    new = set(squeue(slurm_cluster)) - before
    watch(slurm_cluster, lambda _: all(" COMPLETED " in squeue(slurm_cluster)[job] for job in new))
    assert len(new) == 2
    videos = {path: stamp(path) for path in tmp_path.rglob("video.mp4")}
    assert len(videos) == 2

    assert start(tmp_path, config, "--unlock").wait() == 0
    rerun = start(tmp_path, config, "generate_all")
    assert rerun.wait() == 0
    assert "Nothing to be done" in (tmp_path / "run.log").read_text(encoding="utf-8")
    assert set(squeue(slurm_cluster)) - before == new  # nothing submitted again
    assert {path: stamp(path) for path in videos} == videos


def test_a_requeued_generate_job_resumes_where_slurm_cut_it_off(slurm_cluster, tmp_path):
    """`scontrol requeue` mid-denoise: SIGTERM, the job saves its state and ends; SLURM runs
    it again, it resumes (log line), and its files equal an uninterrupted local run's."""
    config = gpu_config(tmp_path, {"enabled": False})
    registry = yaml.safe_load((tmp_path / "models.yaml").read_text(encoding="utf-8"))
    # about 5 s of denoising: 200 steps of 25 ms (more steps would repeat timesteps)
    registry["tiny_wan22"]["generation"]["num_inference_steps"] = 200
    (tmp_path / "models.yaml").write_text(yaml.safe_dump(registry, allow_unicode=True))
    config["denoise"] |= {"steps": [20, 100, 200], "save_every": 10}
    run = Path("tiny_wan22/sorting/sorting_lv1_001")  # under the outdir
    log = tmp_path / "results/logs/generate/tiny_wan22/sorting/sorting_lv1_001.log"

    def saved() -> bool:
        return log.exists() and "saved the state at step 20 " in log.read_text()

    requeued_once(slurm_cluster, tmp_path, config, run / "video.mp4", saved)
    resumed = re.search(r"resumed at step (\d+) of 200\n", log.read_text())
    assert resumed and int(resumed[1]) >= 20, log.read_text()[-3000:]
    meta = json.loads((tmp_path / "results" / run / "generation.json").read_text())
    assert meta["resumed_from_step"] == int(resumed[1]) and len(meta["attempts"]) == 2
    assert not (tmp_path / "results" / "resume").exists()
    made = made_as_locally(tmp_path, config, run / "video.mp4", run)
    assert made == 1 + len(config["denoise"]["steps"])
    again = start(tmp_path, config, "-n", str(tmp_path / "results" / run / "video.mp4"))
    assert again.wait() == 0 and "Nothing to be done" in (tmp_path / "run.log").read_text()


def test_a_requeued_batch_job_restores_its_first_instance_and_resumes_the_second(
    slurm_cluster, tmp_path
):
    """Both instances in one job (`resources.batch: 2`), through sbatch to the GPU partition
    as `generate` (the profile's set-resources); `scontrol requeue` in the second instance:
    SLURM runs the job again, which puts the first back (kept), resumes the second, loads the
    weights once, and writes the bytes of a job per instance run locally."""
    config = gpu_config(tmp_path, {"enabled": False})
    registry = yaml.safe_load((tmp_path / "models.yaml").read_text(encoding="utf-8"))
    registry["tiny_wan22"]["generation"]["num_inference_steps"] = 200  # as above: about 5 s
    (tmp_path / "models.yaml").write_text(yaml.safe_dump(registry, allow_unicode=True))
    registry["tiny_wan22"]["resources"]["batch"] = 2
    (tmp_path / "batched.yaml").write_text(yaml.safe_dump(registry, allow_unicode=True))
    config["denoise"] |= {"steps": [20, 100, 200], "save_every": 10}
    batched = config | {"model_registry": str(tmp_path / "batched.yaml")}
    log = tmp_path / "results/logs/generate/tiny_wan22/generate_batch_tiny_wan22_0.log"

    def second_saved() -> bool:
        return log.exists() and log.read_text().count("saved the state at step 20 ") == 2

    job = requeued_once(slurm_cluster, tmp_path, batched, "generate_all", second_saved)
    fields = squeue(slurm_cluster)[job].split()
    assert fields[1:5] == ["gpu", "COMPLETED", "rule_generate_batch_tiny_wan22_0", "gres:gpu:1"]
    text = log.read_text()
    assert text.count(": restored from ") == 1 and text.count("loaded tiny_wan22 in ") == 1
    assert re.search(r"resumed at step (\d+) of 200\n", text), text[-3000:]
    # a job per instance, uninterrupted, no SLURM
    made = made_as_locally(tmp_path, config, "generate_all", Path("tiny_wan22"))
    assert made == 2 * (1 + len(config["denoise"]["steps"]))


# Every provider's video API job requeued by SLURM mid-wait (`scontrol requeue`) waits on
# the same operation when SLURM runs it again: one submission each.
def test_a_requeued_api_job_waits_on_the_same_operation(slurm_cluster, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, API_KEY)  # sbatch passes the environment on
    with FakeVideoAPI(polls=100_000) as fake:
        config = api_config(tmp_path, fake)  # a job per provider, all at once (8 CPUs)
        config["benchmark"] |= {"tasks": ["sorting"], "levels": [1]}
        before = set(squeue(slurm_cluster))
        process = start(tmp_path, config, "generate_all")

        def waiting(_) -> bool:
            assert process.poll() is None, (tmp_path / "run.log").read_text()[-3000:]
            ops = fake.submissions
            return len(ops) == len(MODELS) and all(op.polls_left < 100_000 - 3 for op in ops)

        watch(slurm_cluster, waiting, timeout=300)
        jobs = set(squeue(slurm_cluster)) - before
        assert len(jobs) == len(MODELS)
        requeue(slurm_cluster, jobs)
        left = {op.id: op.polls_left for op in fake.submissions}
        while any(op.polls_left == left[op.id] for op in fake.submissions):  # polled again ...
            assert process.poll() is None, (tmp_path / "run.log").read_text()[-3000:]
            time.sleep(0.2)
        for op in fake.submissions:
            op.polls_left = 2  # ... and the operations finish
        seen = watch(slurm_cluster, lambda _: process.poll() is not None)
        print(f"\nsqueue -O {SQUEUE}, after the requeue:", *seen, sep="\n")
        assert process.wait() == 0, (tmp_path / "run.log").read_text()[-4000:]
        assert len(fake.submissions) == len(MODELS)  # requeued, waited on, never paid twice
        assert set(squeue(slurm_cluster)) - before == jobs
        logs = list((tmp_path / "results" / "logs" / "generate_api").rglob("*.log"))
        assert len(logs) == len(MODELS) and all(
            "resuming operation" in log.read_text() for log in logs
        )
        print(f"submissions: {len(fake.submissions)}; SLURM jobs: {sorted(jobs)} (requeued once)")
