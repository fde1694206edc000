"""What reruns and what does not, and how judge service failures end a run (real Snakemake,
run from a copy of the checkout as a user runs it, against FakeVLM): through its command line
in this test process, and as the `snakemake` and `python -m snakemake` commands where the
interpreter that starts it is what a test is about."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.fake_vlm import FakeVLM
from tests.support.scripted_judge import Judge, Transitioner
from tests.support.videos import clip, register, write_videos
from tests.support.workflow import REPO, snakemake_cli

KEY = "test-key-7d1e0b"
NOTHING = "Nothing to be done"


def checkout(where: Path) -> Path:
    """A copy of the repository's files (tracked and new, not ignored), as a user has it."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, (n.decode() for n in listed)):
        if (REPO / name).is_file():
            (where / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, where / name)
    return where


def run(cwd: Path, command: list[str], *args: str) -> subprocess.CompletedProcess:
    """`command` (a way to start Snakemake) in `cwd` with `args`; both streams in stdout."""
    return subprocess.run(
        [*command, *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=1200,
    )


def typed(cwd: Path, command: str) -> subprocess.CompletedProcess:
    """A documented `snakemake ...` line as a shell splits it, plus `-n`, in `cwd`."""
    program, *args = shlex.split(command)
    assert program == "snakemake", command
    return snakemake_cli([*args, "-n"], cwd=cwd)


PYTHON_M = [sys.executable, "-m", "snakemake"]
CONSOLE = [str(Path(sys.executable).with_name("snakemake"))]
ONE_TASK = "benchmark={tasks: [sorting], levels: [1]}"


def judge_config(url: str, **more) -> str:
    settings = {"enabled": True, "model": "fake", "base_url": url, "api_key_env": "FAKE_VLM_KEY"}
    settings.update(backoff_initial_s=0.01, **more)
    return "judge={" + ", ".join(f"{k}: {v}" for k, v in settings.items()) + "}"


def test_nothing_reruns_for_interpreter_checkout_registry_path_or_judge_pacing(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("FAKE_VLM_KEY", KEY)
    first = checkout(tmp_path / "first")
    with FakeVLM(Transitioner(other=Judge(tier=2, violations=[0]))) as fake:
        done = run(first, CONSOLE, "--cores", "2", "--config", ONE_TASK, judge_config(fake.url))
        assert done.returncode == 0, done.stdout[-3000:]
        assert len(list(first.glob("results/*/sorting/judge/*/score.json"))) == 1
        assert len(list(first.glob("results/*/sorting/transitions/*.json"))) == 1
        same = run(first, PYTHON_M, "-n", "--config", ONE_TASK, judge_config(fake.url))
        assert NOTHING in same.stdout, same.stdout[-3000:]

    moved = tmp_path / "moved checkout"
    shutil.copytree(first, moved, symlinks=True)  # .snakemake/ and results/ come along
    shutil.copy(moved / "config/models.yaml", moved / "models copy.yaml")
    with FakeVLM(Transitioner(other=Judge(tier=2, violations=[0]))) as other:
        pacing = {"requests_per_minute": 600, "tokens_per_minute": 99999}
        changed = judge_config(other.url, max_concurrency=3, timeout_s=99, max_attempts=2, **pacing)
        registry = "model_registry=models copy.yaml"
        again = run(moved, PYTHON_M, "-n", "--config", ONE_TASK, changed, registry)
        assert NOTHING in again.stdout, again.stdout[-3000:]

    # how the model runs: an exact runtime value reruns nothing, an approximate one its videos
    entries = yaml.safe_load((moved / "models copy.yaml").read_text(encoding="utf-8"))
    for runtime, reruns in (
        ({"compile": True, "offload": "model"}, False),
        ({"vae_tiling": True}, True),
    ):
        entries["tiny_wan22"]["runtime"] = runtime
        (moved / "models copy.yaml").write_text(yaml.safe_dump(entries), encoding="utf-8")
        dry = snakemake_cli(["-n", "--config", ONE_TASK, changed, registry], cwd=moved)
        assert (NOTHING not in dry.stdout) == reruns, dry.stdout[-3000:]
        assert ("rule generate:" in dry.stdout) == reruns


def test_refused_key_stops_the_run_at_one_call_and_a_plain_rerun_completes(tmp_path, monkeypatch):
    """Four instances' videos made elsewhere, one job at a time: the first judge job's one
    call is refused, the run fails loudly and schedules no other judge job; with the right
    key a plain rerun completes every score and copies no video again."""
    repo = checkout(tmp_path / "repo")
    instances = [f"sorting_lv{level}_00{n}" for level in (1, 2) for n in (1, 2)]
    folder = write_videos(tmp_path / "ext", {i: clip(n) for n, i in enumerate(instances)})
    registry = register(tmp_path / "videos.yaml", {"ext": folder})
    monkeypatch.setenv("FAKE_VLM_KEY", "a-wrong-key")
    four = "benchmark={tasks: [sorting], levels: [1, 2], subset: full}"
    ext = ("models=[ext]", f"model_registry={registry}")
    with FakeVLM(Judge(tier=2, violations=[0]), api_key=KEY) as fake:
        args = ("--cores", "1", "judge_all", "--config", four, *ext, judge_config(fake.url))
        failed = snakemake_cli(list(args), cwd=repo)
        assert failed.returncode != 0
        assert len(fake.requests) == 1 and fake.requests[0].api_key == "a-wrong-key"
        assert not list(repo.glob("results/*/sorting/judge/*/score.json"))
        assert re.search(r"judge service failure: HTTP 401: API key not valid", failed.stdout)
        assert "a-wrong-key" not in failed.stdout
        videos = {p: p.stat().st_mtime_ns for p in repo.glob("results/*/sorting/*/video.mp4")}
        assert len(videos) == 4  # the judge job waited on every video

        monkeypatch.setenv("FAKE_VLM_KEY", KEY)
        fixed = snakemake_cli(list(args), cwd=repo)
        assert fixed.returncode == 0, fixed.stdout[-3000:]
    scores = [json.loads(p.read_text()) for p in repo.glob("results/*/sorting/judge/*/score.json")]
    assert [s["status"] for s in scores] == ["ok"] * 4
    assert all(p.stat().st_mtime_ns == t for p, t in videos.items())
    assert "Judge: errors in 0 of 4 scores." in fixed.stdout


def test_judge_enabled_without_its_key_is_an_error_before_any_job(tmp_path, monkeypatch):
    repo = checkout(tmp_path / "repo")
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    result = snakemake_cli(["-n", "--config", "judge={enabled: true}"], cwd=repo)
    assert result.returncode != 0
    assert "judge.enabled is true, but $GEMINI_API_KEY" in result.stdout
    assert not (repo / "results").exists()


def readme_commands(flag: str) -> list[str]:
    """The one-line `snakemake` commands (bash blocks) of README.md and docs/ using `flag`. (The
    multi-line recipe for the published generations has placeholders; its flow, a
    `source: videos` model through `all`, is test_release's.)"""
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    text = "\n".join(page.read_text(encoding="utf-8") for page in pages)
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    lines = [line.split("  #")[0].strip() for block in blocks for line in block.splitlines()]
    return [
        line
        for line in lines
        if line.startswith("snakemake ") and flag in line and not line.endswith("\\")
    ]


def test_readme_config_examples_run_as_written(tmp_path, monkeypatch):
    """Each `--config` example of README.md and docs/, typed as written (plus `-n`: a dry
    run) in a fresh checkout with the release folder and the official checkout it names in
    place."""
    repo = checkout(tmp_path / "repo")
    shutil.copytree(REPO / "tasks" / "examples", repo / "VGI-Bench" / "bench_data")
    shutil.copy(REPO / "tasks" / "task_names.yaml", repo / "VGI-Bench" / "task_names.yaml")
    official = REPO / "tests" / "support" / "official_checkout"  # the official repository's
    shutil.copytree(official, tmp_path / "VGI-Bench")  # checkout beside ours (a stand-in)
    monkeypatch.setenv("VLLM_KEY", "not-used-in-a-dry-run")
    commands = readme_commands("--config ")
    assert len(commands) >= 4, commands
    for command in commands:
        result = typed(repo, command)
        assert result.returncode == 0, (command, result.stdout[-3000:])
        assert "This was a dry-run" in result.stdout, command
        if "judge='{enabled: true" in command:
            assert re.search(r"^judge\s+\d+$", result.stdout, re.M), command


def test_readme_target_examples_run_as_written(tmp_path, monkeypatch):
    """Each README command naming an output under results/ (one instance's video, one
    task's judge), typed as written plus `-n`: it schedules the rule it names, and only
    for that target."""
    repo = checkout(tmp_path / "repo")
    monkeypatch.setenv("GEMINI_API_KEY", "not-used-in-a-dry-run")
    commands = [command for command in readme_commands("results/") if "--report" not in command]
    assert len(commands) >= 3, commands
    for command in commands:
        result = typed(repo, command)
        assert result.returncode == 0, (command, result.stdout[-3000:])
        rule = "judge" if command.split()[3].endswith("/judge") else "generate"
        assert re.search(rf"^{rule}\s+1$", result.stdout, re.M), (command, result.stdout[-3000:])


@pytest.mark.parametrize(
    ("override", "says"),
    [
        ("denoise={stepz: [1]}", ["config['denoise']:", "'stepz' was unexpected", "steps, decode"]),
        ("benchmark={subset_seed: zero}", ["config['benchmark']['subset_seed']:", "'zero'"]),
    ],
)
def test_a_config_error_names_the_key_in_a_few_lines(tmp_path, override, says):
    repo = checkout(tmp_path / "repo")
    result = snakemake_cli(["-n", "--config", override], cwd=repo)
    assert result.returncode != 0
    assert all(part in result.stdout for part in says), result.stdout
    assert len(result.stdout.splitlines()) <= 12, result.stdout


def test_a_target_outside_the_selection_is_named(tmp_path):
    repo = checkout(tmp_path / "repo")
    target = "results/tiny_wan22/maze_square/maze_square_lv1_002/video.mp4"  # not in half
    result = snakemake_cli(["-n", target, "--forcerun", "generate"], cwd=repo)
    assert result.returncode != 0
    assert "maze_square_lv1_002 is not one of this run's selected instances" in result.stdout
