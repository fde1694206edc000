"""The published folder's cards: the dataset card (README.md, its YAML front matter read by
the Hub and by `datasets`) and a leaderboard card per model (`<model>/README.md`)."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pandas as pd
import yaml


def front_matter(meta: Mapping, models: list[str]) -> str:
    """The card's YAML: license, pretty name, tags, and a config per model (its folder)
    beside `default` (every model), each the video files with their metadata.parquet."""
    configs = [{"config_name": "default", "data_dir": ".", "default": True}]
    configs += [{"config_name": model, "data_dir": model} for model in models]
    header = {
        "license": meta["license"],
        "pretty_name": meta["pretty_name"],
        "task_categories": ["image-to-video"],
        "tags": ["video-generation", "visual-reasoning", "denoising", "vlm-as-judge"],
        "configs": configs,
    }
    return f"---\n{yaml.safe_dump(header, sort_keys=False)}---\n"


def _table(frame: pd.DataFrame) -> str:
    """A pandas table as Markdown (no tabulate needed)."""
    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    body = ["| " + " | ".join(_cell(v) for v in row) + " |" for row in frame.itertuples(False)]
    return "\n".join([head, rule, *body])


def _cell(value) -> str:
    if isinstance(value, float):
        return "" if pd.isna(value) else f"{value:.3f}"
    return str(value)


def leaderboard(finals: pd.DataFrame, strict: pd.DataFrame, models: list[str]) -> pd.DataFrame:
    """The overall final score of each of `models` (instances pooled), its CI, n and strict
    success rate, best first: the study's leaderboard, the shortcut baselines in it."""

    def overall(table: pd.DataFrame) -> pd.DataFrame:
        table = table.query("domain == 'overall' and level == 'avg'")
        return table[table["model"].isin(models)].set_index("model")

    finals, strict = overall(finals), overall(strict)
    board = pd.DataFrame(
        {
            "final": finals["final"],
            "ci_low": finals["final_ci_low"],
            "ci_high": finals["final_ci_high"],
            "n": finals["n"],
            "strict_success": strict["strict_success"].reindex(finals.index),
        }
    )
    board = board.sort_values("final", ascending=False).rename_axis("model").reset_index()
    board.insert(0, "rank", board["final"].rank(method="min", ascending=False).astype("Int64"))
    return board


def model_card(model: str, about: Mapping, board: pd.DataFrame, finals: pd.DataFrame) -> str:
    """A model's leaderboard card: its rank among the study's models (the shortcut
    baselines included), its scores by domain and level, and the settings it ran with."""
    row = board[board["model"] == model]
    mine = finals[finals["model"] == model]
    by_domain = mine.pivot_table(index="domain", columns="level", values="final", aggfunc="first")
    by_domain = by_domain.rename_axis(None, axis=1).reset_index()
    rank = f"{row['rank'].item()} of {len(board)}" if len(row) else "not judged"
    lines = [
        f"# {model}: leaderboard card",
        "",
        f"Rank {rank} on this study's final score (completeness x rubric, the mean over "
        "instances; shortcut baselines ranked with the models).",
        "",
        _table(row.drop(columns="rank")) if len(row) else "No judged video.",
        "",
        "## Final score by domain and level",
        "",
        _table(by_domain) if len(by_domain) else "No judged video.",
        "",
        "## How its videos were made",
        "",
        f"- kind: {about['kind']}",
        f"- hardware: {about['hardware'] or 'not recorded'}",
        f"- seconds per video: {_seconds(about['seconds'])}",
        f"- settings (digest `{about['digest']}`):",
        "",
        "```json",
        json.dumps(json.loads(about["settings"]), indent=2, sort_keys=True),
        "```",
        "",
        f"Rows and files: `{model}/metadata.parquet` (`datasets.load_dataset(..., '{model}')`).",
        "",
    ]
    return "\n".join(lines)


def _seconds(seconds: Mapping | None) -> str:
    if not seconds:
        return "not recorded"
    return ", ".join(f"{name} {value:.1f}" for name, value in seconds.items())


def dataset_card(meta: Mapping, about: Mapping[str, Mapping], counts: Mapping, board) -> str:
    """The dataset card: what the folder holds, how to load it, the judge (model and the
    version it reported), each model's settings, hardware and seconds per video, the
    leaderboard, and the paper to cite."""
    models = list(about)
    judge = meta["judge"]
    lines = [
        front_matter(meta, models),
        f"# {meta['pretty_name']}",
        "",
        "Videos generated for the VGI-Bench visual-reasoning benchmark, their denoising "
        "checkpoints (each model's estimate of the clean video after a denoising step, "
        "decoded), the VLM judge's verdict on each, and the label of each checkpoint "
        "transition (whether the solution state held, changed, or was corrected), made by "
        "the VGI-Bench denoising workflow.",
        "",
        f"{counts['videos']} videos and {counts['checkpoints']} checkpoint videos; one "
        "row per file in each model's `metadata.parquet`.",
        "",
        "```python",
        "import datasets",
        "",
        'rows = datasets.load_dataset("<this folder or its Hub id>", split="train")',
        "# one model: its name as the config; file paths without a video decoder:",
        'rows = rows.cast_column("video", datasets.Video(decode=False))',
        "```",
        "",
        "## Columns",
        "",
        "`file_name` (the video), `model`, `run` (the run's folder: model, condition, seed), "
        "`condition`, `seed`, `settings_digest` (of the settings that made the video), "
        "`task`, `instance`, `level`, `domain`, `skills`, `step` (empty for the final video, "
        "else the denoising step of the checkpoint), `estimate` (`x0`: the clean-sample "
        "estimate; `xt`: the noisy latent), `judge_status`, `score` (completeness x rubric), "
        "`completeness`, `rubric`, `tier`, `strict_success`, `rubric_items` (each checklist "
        "item with its counted violations and evidence), `verdict` (the judge's reasoning, "
        "or why it could not judge), `judge_model_version`, and for a checkpoint the "
        "transition from the previous one: `transition_from`, `transition_label`, "
        "`transition_source` (`vlm` or `human`), `human_label`.",
        "",
        "## Judge",
        "",
        f"- backend: {judge['backend']}, model: `{judge['model']}`",
        f"- version the service reported: {', '.join(meta['judge_versions']) or 'none'}",
        f"- prompts digest: `{meta['prompts_digest']}`; protocol: "
        + ", ".join(
            f"{k} {v}" for k, v in sorted(judge["protocol"].items()) if not isinstance(v, dict)
        ),
        "",
        "## Leaderboard",
        "",
        _table(board) if len(board) else "No judged video.",
        "",
        "## Models",
        "",
    ]
    for model, info in about.items():
        lines += [
            f"### {model}",
            "",
            f"- kind: {info['kind']}; videos: {info['videos']}, checkpoints: {info['checkpoints']}",
            f"- hardware: {info['hardware'] or 'not recorded'}",
            f"- seconds per video: {_seconds(info['seconds'])}",
            f"- settings (digest `{info['digest']}`): `{info['settings']}`",
            f"- leaderboard card: [{model}/README.md]({model}/README.md)",
            "",
        ]
    lines += ["## Citation", "", "```bibtex", meta["citation"].strip(), "```", ""]
    return "\n".join(lines)
