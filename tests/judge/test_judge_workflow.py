"""The `judge` rule through Snakemake against FakeVLM: scores, no call paid twice, no key
leaked, loose replies taken as they come, and prompt templates a user can replace."""

from __future__ import annotations

import json

from tests.support.fake_vlm import FakeVLM
from tests.support.scripted_judge import Judge
from tests.support.videos import clip, videos_config, write_videos
from tests.support.workflow import default_config, snakemake
from workflow_scripts.judge.templates import HERE as TEMPLATES

KEY = "test-key-3f9c2a"  # stands in for a real API key


def jobs(stdout: str) -> dict[str, int]:
    """The job counts of a run's or a dry run's table."""
    table = stdout.split("Job stats:")[1].split("total")[0]
    return {
        line.split()[0]: int(line.split()[1]) for line in table.splitlines()[3:] if line.strip()
    }


def test_judge_scores_every_video_pays_once_and_never_writes_the_key(tmp_path, monkeypatch):
    """Two videos made elsewhere; the scripted VLM cites loosely in every window (one frame
    not shown, one left out)."""
    monkeypatch.setenv("FAKE_VLM_KEY", KEY)
    instances = ["sorting_lv1_001", "sorting_lv1_002"]
    folder = write_videos(tmp_path / "ext", {i: clip(n) for n, i in enumerate(instances)})
    config = videos_config(tmp_path, {"ext": folder}, tasks=["sorting"], levels=[1], subset="full")
    with FakeVLM(Judge(tier=2, violations=[0, 1, 0, 0], loose=True)) as fake:
        config["judge"] = {
            "enabled": True,
            "model": "fake-model",
            "base_url": fake.url,
            "api_key_env": "FAKE_VLM_KEY",
            "backoff_initial_s": 0.01,
        }
        first = snakemake(tmp_path, config, "judge_all")
        assert first.returncode == 0, first.stdout[-3000:]
        paid = len(fake.requests)
        again = snakemake(tmp_path, config, "--forcerun", "judge", "--", "judge_all")
        assert again.returncode == 0, again.stdout[-3000:]
        assert len(fake.requests) == paid  # every call of the rerun came from the cache

        # A replaced window template: judge reruns (params changed; one job for the task's
        # two videos) and its frames are made again (a temporary output), the videos are not
        # imported again, and only the window calls are new (completeness and verdict texts
        # are unchanged).
        prompts = tmp_path / "prompts"
        prompts.mkdir()
        window = (TEMPLATES / "window.txt").read_text().replace("# Rubric window", "# My window")
        (prompts / "window.txt").write_text(window)
        config["judge"]["prompts"] = str(prompts)
        third = snakemake(tmp_path, config, "judge_all")
        assert third.returncode == 0, third.stdout[-3000:]
        assert jobs(third.stdout) == {"prepare_frames": 1, "judge": 1, "judge_all": 1}
        reasons = [line for line in third.stdout.splitlines() if line.strip().startswith("reason:")]
        changed = [line for line in reasons if "Params have changed since last execution" in line]
        assert len(changed) == 1, third.stdout[-2500:]
        new = fake.requests[paid:]
        assert len(new) == 2 and all(r.texts[0].startswith("# My window") for r in new)
        assert not any("# My window" in t for r in fake.requests[:paid] for t in r.texts)
    assert {r.api_key for r in fake.requests} == {KEY}

    scores = sorted((tmp_path / "results" / "ext").glob("sorting/judge/*/score.json"))
    assert len(scores) == 2
    for path in scores:
        score = json.loads(path.read_text())
        assert score["status"] == "ok", score
        assert (score["tier"], score["violations"]) == (2, [0, 1, 0, 0])
        assert (score["dropped_citations"], score["uncovered_frames"]) == (1, 1)
        assert (score["rubric"], score["final"], score["strict_success"]) == (0.875, 0.875, False)
        assert (score["calls"], score["cached_calls"]) == (1, 2)
        for name in ("completeness", "rubric"):
            assert (path.parent / f"{name}.json").is_file()
    # 3 calls a video (completeness, one window, the verdict), each paid once (none retried);
    # the third run paid the new window call and took the other two from the cache
    assert json.loads(scores[0].read_text())["cached_calls"] == 2 and paid == 2 * 3

    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert not [p for p in written if KEY.encode() in p.read_bytes()]
    assert KEY not in first.stdout + again.stdout


def test_without_a_key_the_judge_stages_are_left_out(tmp_path, monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    result = snakemake(tmp_path, default_config(tmp_path), "-n")
    assert result.returncode == 0
    assert "Judge stages left out: set $GEMINI_API_KEY" in result.stdout
    assert "judge" not in [line.split()[0] for line in result.stdout.splitlines() if line.strip()]


def test_a_template_that_is_no_template_is_a_config_error(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_VLM_KEY", KEY)
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "windows.txt").write_text("typo in the name")
    config = default_config(tmp_path)
    config["judge"] = {"enabled": True, "api_key_env": "FAKE_VLM_KEY", "prompts": str(prompts)}
    result = snakemake(tmp_path, config, "-n")
    assert result.returncode != 0
    assert f"judge.prompts: {prompts / 'windows.txt'} is not a template" in result.stdout
