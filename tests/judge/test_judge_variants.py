"""Judge variants (`judges:`) through Snakemake against FakeVLM: off by default, each
variant scores the same videos into its own folder, the main judge's documents and jobs
untouched, and a call a variant shares with the main judge comes from the cache."""

from __future__ import annotations

import json

from tests.judge.test_judge_workflow import jobs
from tests.support.fake_vlm import FakeVLM
from tests.support.scripted_judge import Judge, kind
from tests.support.videos import clip, videos_config, write_videos
from tests.support.workflow import default_config, snakemake
from workflow_scripts.common import layout
from workflow_scripts.judge.templates import HERE as TEMPLATES

KEY = "test-key-5d21"
INSTANCES = ["sorting_lv1_001", "sorting_lv1_002"]


def test_variants_score_the_same_videos_apart_and_share_the_cache(tmp_path, monkeypatch):
    """Two videos made elsewhere, judged by main, then by two variants."""
    monkeypatch.setenv("FAKE_VLM_KEY", KEY)
    folder = write_videos(tmp_path / "ext", {i: clip(n) for n, i in enumerate(INSTANCES)})
    config = videos_config(tmp_path, {"ext": folder}, tasks=["sorting"], levels=[1], subset="full")
    prompts = tmp_path / "prompts"  # the verdict call's template alone differs
    prompts.mkdir()
    verdict = (TEMPLATES / "verdict.txt").read_text(encoding="utf-8")
    (prompts / "verdict.txt").write_text("# Stricter verdict\n" + verdict, encoding="utf-8")
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
        main_calls = len(fake.requests)
        assert main_calls == 2 * 3  # completeness, one window, the verdict per video
        main = {i: layout.score_file(tmp_path / "results", "ext", "sorting", i) for i in INSTANCES}
        written = {i: path.stat().st_mtime_ns for i, path in main.items()}

        # Off by default: an empty `judges:` changes nothing, nothing reruns.
        config["judges"] = {}
        dry = snakemake(tmp_path, config, "-n", "judge_all")
        assert dry.returncode == 0 and "Nothing to be done" in dry.stdout, dry.stdout[-2000:]

        config["judges"] = {
            "other_model": {"model": "fake-model-b"},  # every call new
            "stricter": {"prompts": str(prompts)},  # only the verdicts new
        }
        run = snakemake(tmp_path, config, "judge_all", "judges_all")
        assert run.returncode == 0, run.stdout[-3000:]
        assert jobs(run.stdout) == {"judge_variant": 2, "judges_all": 1}  # no judge, no import
        assert "Judge: errors in 0 of 6 scores" in run.stdout  # main's 2 and the variants' 4
        again = snakemake(tmp_path, config, "-n", "judge_all", "judges_all")
        assert "Nothing to be done" in again.stdout, again.stdout[-2000:]

    new = fake.requests[main_calls:]
    by_model = {m: [r for r in new if r.model == m] for m in ("fake-model", "fake-model-b")}
    # other_model: 3 new calls a video; stricter: only its 2 verdicts (4 calls cached)
    assert len(by_model["fake-model-b"]) == 2 * 3
    assert [kind(r) for r in by_model["fake-model"]] == ["polish", "polish"]
    assert all(r.texts[0].startswith("# Stricter verdict") for r in by_model["fake-model"])
    assert {r.api_key for r in fake.requests} == {KEY}

    for instance, path in main.items():
        assert path.stat().st_mtime_ns == written[instance]  # the main judge's untouched
        main_score = json.loads(path.read_text())
        for name, cached in (("other_model", 0), ("stricter", 2)):
            variant = layout.score_file(tmp_path / "results", "ext", "sorting", instance, name)
            assert (
                variant
                == tmp_path / f"results/judges/{name}/ext/sorting/judge/{instance}/score.json"
            )
            score = json.loads(variant.read_text())
            assert score["status"] == "ok", score
            assert (score["final"], score["cached_calls"]) == (main_score["final"], cached)
            assert (variant.parent / "completeness.json").is_file()


def test_a_variant_named_main_or_with_a_main_only_key_is_a_config_error(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_VLM_KEY", KEY)
    config = default_config(tmp_path)
    config["judge"] = {"enabled": True, "api_key_env": "FAKE_VLM_KEY"}
    config["judges"] = {"main": {"model": "other"}}
    result = snakemake(tmp_path, config, "-n")
    assert result.returncode != 0 and "config['judges']: 'main' does not match" in result.stdout
    config["judges"] = {"cheap": {"checkpoints": [4]}}
    result = snakemake(tmp_path, config, "-n")
    assert result.returncode != 0
    assert "config['judges']['cheap']: Additional properties are not allowed" in result.stdout


def test_a_variant_whose_key_is_not_set_is_named_before_any_job(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_VLM_KEY", KEY)
    monkeypatch.delenv("OTHER_VLM_KEY", raising=False)
    config = default_config(tmp_path)
    config["judge"] = {"enabled": True, "api_key_env": "FAKE_VLM_KEY"}
    config["judges"] = {"hosted": {"backend": "openai", "api_key_env": "OTHER_VLM_KEY"}}
    result = snakemake(tmp_path, config, "-n")
    assert result.returncode != 0
    assert "judges: the variants' API key variable(s) OTHER_VLM_KEY" in result.stdout
