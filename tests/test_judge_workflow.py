"""The `judge` rule through Snakemake against FakeVLM: scores, no call paid twice, no key leaked."""

from __future__ import annotations

import json

from tests.fake_vlm import FakeVLM
from tests.scripted_judge import Judge
from tests.workflow import default_config, snakemake

KEY = "test-key-3f9c2a"  # stands in for a real API key


def test_judge_scores_every_video_pays_once_and_never_writes_the_key(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_VLM_KEY", KEY)
    config = default_config(tmp_path, tasks=["sorting"], levels=[1], subset="full")
    with FakeVLM(Judge(tier=2, violations=[0, 1, 0, 0])) as fake:
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
    assert {r.api_key for r in fake.requests} == {KEY}

    scores = sorted((tmp_path / "results" / "tiny_wan22").glob("sorting/*/score.json"))
    assert len(scores) == 2
    for path in scores:
        score = json.loads(path.read_text())
        assert score["status"] == "ok", score
        assert (score["tier"], score["violations"]) == (2, [0, 1, 0, 0])
        assert (score["rubric"], score["final"], score["strict_success"]) == (0.875, 0.875, False)
        assert score["cached_calls"] == score["calls"] + score["cached_calls"] > 0  # rerun: cache
        for name in ("completeness", "rubric"):
            assert (path.parent / "judge" / f"{name}.json").is_file()
    # 3 calls a video (completeness, one window, the verdict), each paid once
    assert json.loads(scores[0].read_text())["cached_calls"] == 3 and paid == 2 * 3

    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert not [p for p in written if KEY.encode() in p.read_bytes()]
    assert KEY not in first.stdout + again.stdout


def test_without_a_key_the_judge_stages_are_left_out(tmp_path, monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    result = snakemake(tmp_path, default_config(tmp_path), "-n")
    assert result.returncode == 0
    assert "Judge stages left out: set $GEMINI_API_KEY" in result.stdout
    assert "judge" not in [line.split()[0] for line in result.stdout.splitlines() if line.strip()]
