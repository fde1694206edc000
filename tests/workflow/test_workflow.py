"""The workflow end to end through Snakemake: outputs, validation before any job, reruns."""

from __future__ import annotations

import json
import shutil
import zipfile
from itertools import pairwise
from pathlib import Path

import decord
import pandas as pd
import pytest
import yaml
from PIL import Image

from tests.support.fake_vlm import FakeVLM
from tests.support.scripted_judge import Judge, Transitioner
from tests.support.shared import shared_folder
from tests.support.workflow import REPO, default_config, snakemake
from workflow_scripts.aggregate.tables import TABLES

STEPS = [1, 2, 3, 4, 10, 20, 40]
JUDGE = Judge(tier=1, violations=[0, 1])


def build_default_run(workdir: Path) -> None:
    """The default workflow (tiny Wan2.2, bundled examples, half subset) run to the end, with
    the judge pointed at the local test server, then its report; its config in
    `config.yaml` (outdir `results`, relative: a copy is the same finished run). The model
    makes its 12 videos in two batch jobs of 6 (`resources.batch`: its weights loaded twice,
    not 12 times; the per-instance rule `generate` runs in the other workflow tests)."""
    registry = yaml.safe_load((REPO / "config" / "models.yaml").read_text(encoding="utf-8"))
    registry["tiny_wan22"]["resources"]["batch"] = 6
    (workdir / "models.yaml").write_text(yaml.safe_dump(registry), encoding="utf-8")
    config = default_config(workdir) | {"outdir": "results", "model_registry": "models.yaml"}
    with pytest.MonkeyPatch.context() as env, FakeVLM(Transitioner(other=JUDGE)) as fake:
        env.setenv("FAKE_VLM_KEY", "test-key")
        config["judge"] = {"enabled": True, "base_url": fake.url, "api_key_env": "FAKE_VLM_KEY"}
        result = snakemake(workdir, config)
        assert result.returncode == 0, result.stdout[-3000:]
        report = snakemake(workdir, config, "--report", str(workdir / "report.zip"))
        assert report.returncode == 0, report.stdout[-3000:]


def default_study(tmp_path_factory) -> Path:
    """The folder of the session's default run (`build_default_run`), shared with
    tests/publish/test_publish.py: read it, or copy it (`copy_of`) to write."""
    return shared_folder(tmp_path_factory, "default_run", build_default_run)


@pytest.fixture(scope="module")
def default_run(tmp_path_factory):
    workdir = default_study(tmp_path_factory)
    return workdir, yaml.safe_load((workdir / "config.yaml").read_text(encoding="utf-8"))


def test_default_run_writes_every_video_and_checkpoint(default_run):
    workdir, config = default_run
    selected = pd.read_csv(workdir / "results" / "instances" / "selected.csv", dtype={"id": str})
    assert len(selected) == 12  # 4 tasks x 3 levels x ceil(2 / 2)
    assert selected.groupby(["task", "level"]).size().eq(1).all()
    for row in selected.itertuples():
        run = workdir / "results" / "tiny_wan22" / row.task / row.instance
        frames = len(decord.VideoReader(str(run / "video.mp4")))
        assert frames == 9
        for step in STEPS:
            assert len(decord.VideoReader(str(run / "denoise" / f"step{step:02d}.mp4"))) == frames
        meta = json.loads((run / "generation.json").read_text())
        assert meta["model"] == "tiny_wan22" and meta["denoise"]["steps"] == STEPS
        assert meta["image"].endswith(f"{row.instance}.png")


def test_default_run_scores_labels_tabulates_and_reports(default_run):
    workdir, _ = default_run
    results = workdir / "results"
    scores = [json.loads(p.read_text()) for p in results.glob("tiny_wan22/*/judge/*/score.json")]
    assert len(scores) == 12 and {s["status"] for s in scores} == {"ok"}
    assert {s["completeness"] for s in scores} == {0.5}
    transitions = [
        json.loads(p.read_text()) for p in results.glob("tiny_wan22/*/transitions/*.json")
    ]
    assert len(transitions) == 12
    assert all(
        [(p["from"], p["to"]) for p in t["pairs"]] == list(pairwise(STEPS)) for t in transitions
    )
    for name in TABLES:
        assert len(pd.read_csv(results / "tables" / f"{name}.csv")) > 0, name
    overall = pd.read_csv(results / "tables" / "final_by_domain_level.csv")
    overall = overall.query("model == 'tiny_wan22' and domain == 'overall' and level == 'avg'")
    finals = [s["final"] for s in scores]
    assert overall["final"].item() == pytest.approx(sum(finals) / len(finals))
    for plot in ("final_heatmap", "skills", "transitions"):
        assert (results / "plots" / f"{plot}.png").stat().st_size > 0
    assert (results / "gallery" / "index.html").is_file()
    assert len(list((results / "eval_res" / "tiny_wan22").glob("*/tiny_wan22_*_lv*_*.mp4"))) == 12
    with zipfile.ZipFile(workdir / "report.zip") as report:
        names = report.namelist()
    assert any(n.endswith("report.html") for n in names)
    assert any("final_heatmap.png" in n for n in names) and any("skills.csv" in n for n in names)


def test_a_finished_run_has_nothing_left_to_do(default_run, monkeypatch):
    workdir, config = default_run
    monkeypatch.setenv("FAKE_VLM_KEY", "test-key")  # the judge is on: its key is set
    result = snakemake(workdir, config, "-n")
    assert result.returncode == 0
    assert "Nothing to be done" in result.stdout


def break_benchmark(root):
    """Copy of the bundled examples with one problem of every kind."""
    shutil.copytree(REPO / "tasks" / "examples", root)
    images = root / "maze_square" / "input_image"
    (root / "maze_square" / "prompt" / "video_gen_prompt" / "maze_square.txt").unlink()
    Image.new("RGB", (64, 64)).save(images / "lv2" / "maze_square_lv2_001.png")  # not 16:9
    (images / "lv3" / "maze_square_lv3_002.png").write_bytes(b"not a png")
    shutil.copy(
        images / "lv1" / "maze_square_lv1_001.png", images / "lv1" / "maze_square_lv1_001.jpg"
    )
    (root / "sorting" / "judge_spec" / "_judge_rubric_sorting.json").write_text('{"rubric": []}')
    (root / "clock_running" / "judge_spec" / "_completeness_judge.txt").unlink()
    (root / "block_assembly" / "judge_spec" / "_judge_rubric_block_assembly.json").unlink()
    shutil.copytree(root / "sorting", root / "stacking")  # a task the taxonomy does not know
    for path in (root / "stacking").rglob("sorting*"):
        path.rename(path.with_name(path.name.replace("sorting", "stacking")))


def test_bad_input_is_reported_all_at_once_and_no_job_runs(tmp_path):
    root = tmp_path / "bench"
    break_benchmark(root)
    config = default_config(tmp_path, root=str(root), subset="full")
    config["denoise"]["steps"] = [1, 50]
    result = snakemake(tmp_path, config)
    assert result.returncode != 0
    message = result.stdout
    expected = [
        ("maze_square_lv1_001", "missing prompt"),
        ("maze_square_lv2_001", "16:9"),
        ("maze_square_lv3_002", "unreadable"),
        ("maze_square_lv1_001", "duplicate"),
        ("sorting_lv2_002", "empty rubric"),
        ("clock_running_lv3_001", "tier standard"),
        ("block_assembly_lv1_001", "rubric"),
        ("stacking_lv1_001", "taxonomy"),
        ("tiny_wan22", "exceed its num_inference_steps"),
    ]
    lines = message.splitlines()
    for name, problem in expected:
        assert any(name in line and problem in line for line in lines), (name, problem, message)
    assert "problem(s) found before scheduling any job" in message
    assert not (tmp_path / "results").exists()


FAMILIES = ["tiny_wan21", "tiny_hunyuan15", "tiny_ltx23", "tiny_vbvr_wan22", "tiny_vbvr_ltx23"]
PROMPT = 'Move the dot\'s "path" $(echo no) `id` {instance} {{x}} 100%\nthen stop; & | >'


@pytest.fixture(scope="module")
def families(tmp_path_factory):
    """Every family but tiny_wan22's (the other workflow tests run it) through rule `generate`
    in one run on maze_square's level-1 instance, by shell entries given awkward text and
    paths: a prompt with quotes, `$`, braces and a newline, and spaces, `$` and quotes in the
    paths (braces too in the registry's). Returns the workdir, the config and the outdir."""
    workdir = tmp_path_factory.mktemp("families")
    folder = workdir / "a dir $HOME 'q'"
    root = folder / "bench"
    shutil.copytree(REPO / "tasks" / "examples" / "maze_square", root / "maze_square")
    (root / "maze_square/prompt/video_gen_prompt/maze_square.txt").write_text(PROMPT)
    registry = folder / "models {m}.yaml"
    shutil.copy(REPO / "config" / "models.yaml", registry)
    config = default_config(workdir, root=str(root), tasks=["maze_square"], levels=[1])
    config["models"] = list(FAMILIES)
    config["model_registry"], config["outdir"] = str(registry), str(folder / "out $x")
    result = snakemake(workdir, config, "generate_all")
    assert result.returncode == 0, result.stdout[-3000:]
    return workdir, config, folder / "out $x"


def the_run(outdir, model):
    (run,) = (outdir / model / "maze_square").iterdir()
    return run


def test_every_family_runs_through_the_generate_rule(families):
    outdir = families[2]
    for model in FAMILIES:
        run = the_run(outdir, model)
        meta = json.loads((run / "generation.json").read_text())
        frames = len(decord.VideoReader(str(run / "video.mp4")))
        assert frames == meta["frames"] == 9
        for step in STEPS:
            assert len(decord.VideoReader(str(run / "denoise" / f"step{step:02d}.mp4"))) == frames
        lora = meta["lora"]
        assert (lora is not None) == model.startswith("tiny_vbvr"), model
        if lora:
            assert all(c["layers"] > 0 for c in lora["components"].values())


def test_shell_entries_pass_awkward_text_and_paths_unchanged(families):
    """The per-instance rules are shell commands: the awkward prompt and paths reach the job
    as they are."""
    for model in FAMILIES:
        run = the_run(families[2], model)
        assert json.loads((run / "generation.json").read_text())["prompt"] == PROMPT, model


def test_editing_one_model_reruns_only_its_jobs(families):
    workdir, config, outdir = families
    models = config["models"]
    videos = {m: the_run(outdir, m) / "video.mp4" for m in models}
    before = {m: v.stat().st_mtime_ns for m, v in videos.items()}

    registry_path = Path(config["model_registry"])
    registry = yaml.safe_load(registry_path.read_text(encoding="utf-8"))
    registry["tiny_wan21"]["generation"]["guidance_scale"] = 4.0
    registry_path.write_text(yaml.safe_dump(registry, allow_unicode=True), encoding="utf-8")
    dry = snakemake(workdir, config, "-n", "generate_all")
    assert [m for m in models if f"model={m}," in dry.stdout] == ["tiny_wan21"], dry.stdout
    result = snakemake(workdir, config, "generate_all")
    assert result.returncode == 0, result.stdout[-3000:]
    assert [m for m in models if videos[m].stat().st_mtime_ns != before[m]] == ["tiny_wan21"]
    meta = json.loads((videos["tiny_wan21"].parent / "generation.json").read_text())
    assert meta["settings"]["generation"]["guidance_scale"] == 4.0


def test_braces_in_outdir_or_root_name_the_key(tmp_path):
    for key, config in [
        ("outdir", {**default_config(tmp_path), "outdir": str(tmp_path / "out{x}")}),
        ("root", default_config(tmp_path, root=str(tmp_path / "bench{x}"))),
    ]:
        result = snakemake(tmp_path, config, "-n")
        assert result.returncode != 0 and f"['{key}']" in result.stdout, result.stdout[-2000:]
