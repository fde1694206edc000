"""What the annotation page labels, and where the labels go.

A run's checkpoint pairs (`transitions.pairs` of every (model, instance) with both
checkpoint videos decoded), optionally a seeded sample of (model, instance)s stratified
by model, and the CSV of human labels that `transitions.human_labels` reads (model,
instance, from, to, label), rewritten atomically after every label.
"""

from __future__ import annotations

import csv
import io
import random
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml
from filelock import FileLock

from vgi_models.video import checkpoint_name
from workflow_scripts.benchmark.study import Study, load_study
from workflow_scripts.common import layout
from workflow_scripts.common.config import check
from workflow_scripts.common.files import OutdirFileError, read_json, write_text
from workflow_scripts.transitions.settings import HUMAN_COLUMNS, Pair, load_transitions

REPO = Path(__file__).resolve().parents[2]
PROG = "python -m workflow_scripts.annotate"


@dataclass(frozen=True)
class Item:
    """One checkpoint pair of one (model, instance) to label."""

    model: str
    task: str
    instance: str
    pair: Pair
    outdir: Path

    @property
    def key(self) -> tuple[str, str, int, int]:
        return (self.model, self.instance, *self.pair)

    def video(self, step: int) -> Path:
        folder = layout.run_folder(self.outdir, self.model, self.task, self.instance)
        return folder / "denoise" / checkpoint_name(step, "x0")

    def vlm_label(self) -> str | None:
        """The VLM's label of this pair in transitions.json, if any (none, with a warning
        naming the file and its fix, where it does not read back: labelling goes on)."""
        path = layout.transitions_file(self.outdir, self.model, self.task, self.instance)
        try:
            document = read_json(path, layout.stage_fix(path), optional=True)
        except OutdirFileError as error:
            print(error, file=sys.stderr, flush=True)
            return None
        if document is None:
            return None
        pairs = document.get("pairs", [])
        found = [p["vlm_label"] for p in pairs if (p["from"], p["to"]) == self.pair]
        return found[0] if found else None


def load_run(configfiles: Sequence[str | Path] = ()) -> tuple[dict, Study, tuple[Pair, ...]]:
    """The config (config/config.yaml, then each of `configfiles` merged on top, checked and
    with its defaults), its study and its checkpoint pairs, as the workflow sees them. A
    missing or unreadable file, or a bad config, is a ValueError naming it."""
    from snakemake.utils import validate

    config = _yaml(REPO / "config" / "config.yaml", "config")
    for path in configfiles:
        _merge(config, _yaml(path, "--configfile") or {})
    schema = REPO / "config" / "schemas" / "config.schema.yaml"
    check(config, schema)
    validate(config, str(schema))
    registry = _yaml(config["model_registry"], "model_registry")
    study = load_study(config, registry, image_cache=".snakemake/vgi_image_check.json")
    unlabelled = {**config, "transitions": {**config["transitions"], "human_labels": None}}
    return config, study, load_transitions(unlabelled, study).pairs  # the CSV may not exist yet


def _yaml(path: str | Path, what: str):
    """The YAML document in `path` (`what` names it in an error)."""
    if not Path(path).is_file():
        raise ValueError(f"{what} {path}: no such file")
    try:
        return yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise ValueError(f"{what} {path}: not readable as YAML ({err})") from None


def _merge(base: dict, update: dict) -> None:
    """Merge `update` into `base`, mappings key by key (as Snakemake layers config files)."""
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value


def items_of(study: Study, pairs: Sequence[Pair], outdir: str | Path) -> list[Item]:
    """Every pair of every generated (model, instance) whose two checkpoints are decoded."""
    items = []
    for model in study.pipelines:
        for instance, task in study.instances["task"].items():
            found = [Item(model, task, instance, pair, Path(outdir)) for pair in pairs]
            items += [i for i in found if all(i.video(s).is_file() for s in i.pair)]
    return items


def stratified(items: Sequence[Item], n: int, seed: int) -> list[Item]:
    """The items of `n` (model, instance)s drawn with `seed`, spread over the models as
    evenly as their instances allow (n=117 over 4 models: 30, 29, 29, 29)."""
    units: dict[str, list[str]] = defaultdict(list)
    for item in items:
        if item.instance not in units[item.model]:
            units[item.model].append(item.instance)
    quota, target = dict.fromkeys(units, 0), min(n, sum(map(len, units.values())))
    while sum(quota.values()) < target:
        open_ = [m for m in units if quota[m] < len(units[m])]
        quota[min(open_, key=lambda m: quota[m])] += 1
    rng = random.Random(seed)
    chosen = {(m, i) for m, names in units.items() for i in rng.sample(names, quota[m])}
    return [item for item in items if (item.model, item.instance) in chosen]


class LabelStore:
    """The human labels CSV, shared: every change is made under a file lock (`<csv>.lock`)
    to the rows on disk as they are then, and written atomically (a temporary file in the
    same folder, then a rename), so a second server on the same file, or an edit made
    between two labels, is kept. Rows it did not write are kept as they were."""

    columns_of_its_own: tuple[str, ...] = HUMAN_COLUMNS
    keeps_other_columns = True

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.lock = FileLock(f"{self.path}.lock", thread_local=False)
        self.columns, self.rows = list(self.columns_of_its_own), []
        self._read()

    def _read(self) -> None:
        """The rows on disk now (none: no file yet)."""
        if not self.path.is_file():
            self.rows = []
            return
        with open(self.path, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            self.rows = list(reader)
            extra = [c for c in reader.fieldnames or [] if c not in self.columns_of_its_own]
        self.columns = [*self.columns_of_its_own, *(extra if self.keeps_other_columns else [])]

    def change(self, edit: Callable[[list[dict]], list[dict]]) -> None:
        """Apply `edit` to the rows on disk, under the lock, and write them."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.lock:
            self._read()
            self.rows = edit(self.rows)
            self._write()

    @staticmethod
    def _key(row: dict) -> tuple[str, str, int, int] | None:
        try:
            return (row["model"], row["instance"], int(row["from"]), int(row["to"]))
        except (KeyError, TypeError, ValueError):
            return None

    def labels(self) -> dict[tuple[str, str, int, int], str]:
        """The label of every labelled row on disk, by (model, instance, from, to)."""
        self._read()
        found = ((self._key(row), (row.get("label") or "").strip()) for row in self.rows)
        return {key: label for key, label in found if key and label}

    def set(self, key: tuple[str, str, int, int], label: str) -> None:
        """Label one pair (replacing its label, if any) and write the file."""

        def edit(rows: list[dict]) -> list[dict]:
            mine = [row for row in rows if self._key(row) == key]
            if mine:
                mine[0]["label"] = label
                return rows
            return [*rows, dict(zip(HUMAN_COLUMNS, (*key, label), strict=True))]

        self.change(edit)

    def _write(self) -> None:
        out = io.StringIO(newline="")
        writer = csv.DictWriter(out, self.columns, restval="", extrasaction="ignore")
        writer.writeheader()
        writer.writerows(self.rows)
        write_text(self.path, out.getvalue())
