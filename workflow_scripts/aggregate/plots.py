"""The paper's figures from the tables, drawn on matplotlib's Agg canvas into PNG files.

Each function writes its figure to ``path`` and returns it (``Figure.axes`` for checks).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from vgi_models.state import write_atomic
from workflow_scripts.aggregate.sensitivity import CONDITION_TABLES
from workflow_scripts.common.files import read_csv
from workflow_scripts.common.layout import TABLE_FIX
from workflow_scripts.common.logs import job_log
from workflow_scripts.transitions.labels import LABELS

DPI = 120


def _save(fig: Figure, path: str | Path) -> Figure:
    suffix = Path(path).suffix[1:]
    write_atomic(path, lambda out: fig.savefig(out, format=suffix, dpi=DPI, bbox_inches="tight"))
    return fig


def final_heatmap(table: pd.DataFrame, path: str | Path) -> Figure:
    """A domain x level heat map of final per model (final_by_domain_level.csv)."""
    table = table.astype({"level": str})
    models, domains, levels = (list(dict.fromkeys(table[c])) for c in ("model", "domain", "level"))
    size = (1.5 + 0.8 * len(levels) * len(models), 0.8 + 0.5 * len(domains))
    fig = Figure(figsize=size, layout="constrained")
    axes = fig.subplots(1, len(models), squeeze=False)[0]
    for ax, model in zip(axes, models, strict=True):
        grid = table[table.model == model].pivot(index="domain", columns="level", values="final")
        values = grid.reindex(index=domains, columns=levels).to_numpy(float)
        image = ax.imshow(values, vmin=0, vmax=1, cmap="viridis", aspect="auto")
        for (i, j), value in np.ndenumerate(values):
            text = "–" if np.isnan(value) else f"{value:.2f}"
            color = "k" if np.isnan(value) or value > 0.6 else "w"
            ax.text(j, i, text, ha="center", va="center", color=color, fontsize="small")
        ax.set(title=model, xlabel="level", xticks=range(len(levels)), xticklabels=levels)
        ax.set_yticks(range(len(domains)), domains if ax is axes[0] else [])
    fig.colorbar(image, ax=axes, label="final")
    return _save(fig, path)


def skill_bars(table: pd.DataFrame, path: str | Path) -> Figure:
    """Final per skill tag, one bar per model with its 95% CI (skills.csv; pooled row left out)."""
    table = table[table.model != "all"]
    models, skills = (list(dict.fromkeys(table[c])) for c in ("model", "skill"))
    width = 0.8 / len(models)
    fig = Figure(figsize=(2 + 0.3 * len(models) * len(skills), 3.5), layout="constrained")
    ax = fig.subplots()
    for k, model in enumerate(models):
        rows = table[table.model == model].set_index("skill").reindex(skills)
        error = [rows.final - rows.final_ci_low, rows.final_ci_high - rows.final]
        x = np.arange(len(skills)) + (k - (len(models) - 1) / 2) * width
        ax.bar(x, rows.final, width, yerr=error, capsize=2, label=model)
    ax.set(ylabel="final", ylim=(0, 1))
    ax.set_xticks(range(len(skills)), skills, rotation=30, ha="right")
    fig.legend(loc="outside upper center", ncols=min(len(models), 4), fontsize="small")
    return _save(fig, path)


def transition_bars(table: pd.DataFrame, path: str | Path) -> Figure:
    """Table 7: label percentages stacked per step pair, one panel per model and pooled."""
    models = list(dict.fromkeys(table["model"]))
    fig = Figure(figsize=(1 + 3 * max(len(models), 1), 3.5), layout="constrained")
    if not models:
        fig.text(0.5, 0.5, "no transition labels", ha="center", va="center")
        return _save(fig, path)
    axes = fig.subplots(1, len(models), sharey=True, squeeze=False)[0]
    for ax, model in zip(axes, models, strict=True):
        rows = table[table.model == model]
        bottom = np.zeros(len(rows))
        for label in LABELS:
            ax.bar(rows.step_pair, rows[label], bottom=bottom, label=label)
            bottom += rows[label].to_numpy(float)
        ax.set(title=model, xlabel="step pair", ylim=(0, 100))
        ax.tick_params(axis="x", labelrotation=45)
    axes[0].set_ylabel("% of instances")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center", ncols=len(LABELS), fontsize="small")
    return _save(fig, path)


def trajectory_lines(table: pd.DataFrame, path: str | Path) -> Figure:
    """Final score against the denoising step, one line per model with its 95% CI band
    (trajectory_scores.csv; the steps evenly spaced, the final video last)."""
    steps = [str(step) for step in dict.fromkeys(table["step"])]
    fig = Figure(figsize=(2 + 0.8 * len(steps), 3.5), layout="constrained")
    ax = fig.subplots()
    for model in dict.fromkeys(table["model"]):
        rows = table[table.model == model]
        x = [steps.index(str(step)) for step in rows.step]
        ax.plot(x, rows.final, marker="o", label=f"{model}")
        ax.fill_between(x, rows.final_ci_low, rows.final_ci_high, alpha=0.2)
    ax.set(xlabel="denoising step (final: the video)", ylabel="final", ylim=(0, 1))
    ax.set_xticks(range(len(steps)), steps)
    ax.legend(fontsize="small")
    return _save(fig, path)


def condition_bars(by_task: pd.DataFrame, overall: pd.DataFrame, path: str | Path) -> Figure:
    """Figure 5: final per task (and overall) under each condition, one bar per condition
    with its 95% CI, one panel per model (conditions_by_task.csv, conditions.csv)."""
    table = pd.concat([by_task, overall.assign(task="overall")], ignore_index=True)
    models, conditions = (list(dict.fromkeys(table[c])) for c in ("model", "condition"))
    tasks = list(dict.fromkeys(table["task"]))
    width = 0.8 / max(len(conditions), 1)
    size = (1.5 + 0.35 * len(tasks) * len(conditions), 1 + 3 * max(len(models), 1))
    fig = Figure(figsize=size, layout="constrained")
    axes = fig.subplots(max(len(models), 1), 1, sharex=True, squeeze=False)[:, 0]
    for ax, model in zip(axes, models, strict=False):
        for k, condition in enumerate(conditions):
            rows = table[(table.model == model) & (table.condition == condition)]
            rows = rows.set_index("task").reindex(tasks)
            error = [rows.final - rows.final_ci_low, rows.final_ci_high - rows.final]
            x = np.arange(len(tasks)) + (k - (len(conditions) - 1) / 2) * width
            ax.bar(x, rows.final, width, yerr=np.nan_to_num(error), capsize=2, label=condition)
        ax.set(title=model, ylabel="final", ylim=(0, 1))
    axes[-1].set_xticks(range(len(tasks)), tasks, rotation=30, ha="right")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center", ncols=len(conditions), fontsize="small")
    return _save(fig, path)


def reliability_bars(table: pd.DataFrame, path: str | Path) -> Figure:
    """Tables 3/14: each judge's ROC-AUC and pairwise accuracy against the human
    preference pairs, with their 95% CIs (judge_reliability.csv)."""
    judges = list(table["judge"])
    fig = Figure(figsize=(2.5 + 0.9 * max(len(judges), 1), 3.5), layout="constrained")
    ax = fig.subplots()
    if not judges:
        ax.text(0.5, 0.5, "no judge", ha="center", va="center")
        return _save(fig, path)
    x = np.arange(len(judges))
    for k, (metric, label) in enumerate([("auc", "ROC-AUC"), ("pairwise_accuracy", "accuracy")]):
        value = table[metric].to_numpy(float)
        error = np.nan_to_num(
            [value - table[f"{metric}_lo"].to_numpy(float), table[f"{metric}_hi"] - value]
        )
        ax.bar(x + (k - 0.5) * 0.4, value, 0.4, yerr=error, capsize=3, label=label)
    ax.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax.set(ylabel="agreement with people", ylim=(0, 1))
    ax.set_xticks(x, [f"{j}\n(n={n})" for j, n in zip(judges, table["n_pairs"], strict=True)])
    ax.legend(fontsize="small")
    return _save(fig, path)


def paper_scatter(table: pd.DataFrame, path: str | Path) -> Figure:
    """Every paper table beside the run (vs_paper.csv): a panel per table, the paper's
    number across, the run's with its 95% CI up, the diagonal where they agree; a table
    without any run value says so in its panel."""
    table = table.astype({"table": str})
    names = list(dict.fromkeys(table["table"]))
    columns = 4
    rows = -(-len(names) // columns)
    fig = Figure(figsize=(3.2 * columns, 3.0 * rows), layout="constrained")
    axes = fig.subplots(rows, columns, squeeze=False).ravel()
    for ax, name in zip(axes, names, strict=False):
        cells = table[table["table"] == name]
        both = cells.dropna(subset=["run"])
        title = f"{'Table' if name.isdigit() else 'Appendix'} {name}"
        ax.set_title(f"{title} ({len(both)} of {len(cells)} numbers)", fontsize="small")
        if both.empty:
            ax.text(0.5, 0.5, "no counterpart\nin this run", ha="center", va="center")
            ax.set_xticks([]), ax.set_yticks([])
            continue
        x, y = both["paper"].to_numpy(float), both["run"].to_numpy(float)
        error = np.nan_to_num([y - both["run_ci_low"], both["run_ci_high"] - y])
        ax.errorbar(x, y, yerr=error, fmt="o", ms=3, lw=0.6, capsize=1.5)
        low, high = min(x.min(), y.min(), 0.0), max(x.max(), y.max(), 1.0)
        ax.plot([low, high], [low, high], color="grey", lw=0.8, ls="--")
        ax.set(xlabel="paper", ylabel="this run")
    for ax in axes[len(names) :]:
        ax.set_axis_off()
    return _save(fig, path)


def image_bars(table: pd.DataFrame, vs_paper: pd.DataFrame, path: str | Path) -> Figure:
    """Table 4: each model's success rate at Easy, Mid, Hard and Avg. with its 95% CI, and
    the paper's Avg. beside it where the model has a row there (image_success.csv,
    image_vs_paper.csv)."""
    table = table.astype({"level": str})
    models = list(dict.fromkeys(table["model"]))
    fig = Figure(figsize=(2.5 + 1.2 * max(len(models), 1), 3.8), layout="constrained")
    ax = fig.subplots()
    if not models:
        ax.text(0.5, 0.5, "no judged image", ha="center", va="center")
        return _save(fig, path)
    x, width = np.arange(len(models)), 0.17
    for k, (level, label) in enumerate(
        {"1": "Easy", "2": "Mid", "3": "Hard", "avg": "Avg."}.items()
    ):
        rows = table[table.level == level].set_index("model").reindex(models)
        rate = rows["success"].to_numpy(float)
        error = np.nan_to_num([rate - rows["success_ci_low"], rows["success_ci_high"] - rate])
        ax.bar(x + (k - 2) * width, rate, width, yerr=error, capsize=2, label=label)
    paper = vs_paper.astype({"level": str})
    paper = paper[paper.level == "avg"].set_index("model")["paper"].reindex(models)
    if paper.notna().any():
        ax.scatter(x + 2 * width, paper, marker="D", color="k", clip_on=False, label="paper Avg.")
    ax.set(ylabel="success rate (%)", ylim=(0, 100))
    ax.set_xticks(x, models, rotation=30, ha="right")
    handles, labels = ax.get_legend_handles_labels()
    order = sorted(range(len(labels)), key=lambda k: labels[k] == "paper Avg.")  # bars first
    fig.legend(
        [handles[k] for k in order], [labels[k] for k in order],
        loc="outside upper center", ncols=len(labels), fontsize="small",
    )  # fmt: skip
    return _save(fig, path)


PLOTS = {
    "final_heatmap": ("final_by_domain_level", final_heatmap),
    "skills": ("skills", skill_bars),
    "transitions": ("transitions", transition_bars),
    "vs_paper": ("vs_paper", paper_scatter),
}


def plots_job(smk) -> None:
    """Rule `plots`: each figure from its table."""
    with job_log(smk):
        for name, (table, draw) in PLOTS.items():
            draw(read_csv(smk.input[table], TABLE_FIX), smk.output[name])
        if smk.output.get("conditions"):
            tables = (read_csv(smk.input[name], TABLE_FIX) for name in CONDITION_TABLES)
            condition_bars(*reversed(list(tables)), smk.output["conditions"])
