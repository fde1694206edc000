"""The preference page: rank three models' videos of one instance (paper Appendix C.3).

    python -m workflow_scripts.annotate preferences --annotator NAME [--configfile my.yaml]
        [--rankings FOLDER] [--triplets N] [--seed 0]
        [--annotators ann1,ann2,ann3,ann4 --per-triplet 2]

serves, on 127.0.0.1 and a free port it prints, one triplet per page: three models'
videos of one instance side by side (in a seeded order, the models unnamed), playing in
sync, with the input image, prompt, goal and checklist. The annotator ranks them 1-3
(equal ranks are ties) or skips the triplet; keys: three digits rank the videos left to
right, `s` skips, arrows move, space plays. Judge scores are never sent to the page.
Every ranking is written at once, atomically, to `<rankings>/<annotator>.csv`
(`judge_reliability.rankings`; columns instance, triplet, annotator, model, rank, a
skipped triplet's ranks empty), which rule judge_reliability turns into pairs; a
restart resumes at the first triplet not yet ranked.

Triplets are drawn with `--seed` (the same draw for every annotator): the instances in
turn over (task, level), so that tasks and levels are spread evenly, each with three of
the models that have a video of it. With `--annotators` (the pool) each triplet goes to
`--per-triplet` of them in rotation (2: every triplet ranked twice); without, every
annotator ranks every triplet.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import re
from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

from workflow_scripts.annotate.items import PROG, LabelStore, load_run
from workflow_scripts.annotate.server import Handler, serve
from workflow_scripts.benchmark.study import Study
from workflow_scripts.common import layout

PAGE = Path(__file__).with_name("preferences.html")
MEDIA = re.compile(r"/media/(\d+)/(0|1|2|image)")
COLUMNS = ("instance", "triplet", "annotator", "model", "rank")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


@dataclass(frozen=True)
class Triplet:
    """Three models' videos of one instance, in the order the page shows them."""

    task: str
    level: int
    instance: str
    models: tuple[str, str, str]  # as shown, left to right

    @property
    def key(self) -> tuple[str, str]:
        return (self.instance, "|".join(sorted(self.models)))


def video(study: Study, outdir: str | Path, model: str, task: str, instance: str) -> Path | None:
    """The model's video of the instance: the run's, else the one made elsewhere."""
    path = layout.run_folder(outdir, model, task, instance) / "video.mp4"
    if path.is_file():
        return path
    found = study.videos.get(model, {}).get(instance)
    return Path(found) if found and Path(found).is_file() else None


def draw(study: Study, outdir: str | Path, n: int | None, seed: int) -> list[Triplet]:
    """`n` triplets (None: one per instance with three videos), seeded: the instances in
    turn over the (task, level) strata, each stratum's in a seeded order; each triplet
    three of the instance's models with a video, shown in a seeded order. A second round
    over the instances draws other model triplets where there are."""
    rng = random.Random(seed)
    strata: dict[tuple[str, int], list[tuple[str, list[str]]]] = defaultdict(list)
    for instance, row in study.instances.iterrows():
        models = [m for m in study.models if video(study, outdir, m, row["task"], instance)]
        if len(models) >= 3:
            strata[(row["task"], int(row["level"]))].append((instance, models))
    for entries in strata.values():
        rng.shuffle(entries)
    order = [entry for column in zip_longest(strata.values()) for entry in column]
    total = len(order) if n is None else n
    triplets, seen = [], set()
    while order and len(triplets) < total:
        added = False
        for instance, models in order:
            if len(triplets) == total:
                break
            options = [c for c in combinations3(models) if (instance, "|".join(c)) not in seen]
            if not options:
                continue
            chosen = list(rng.choice(options))
            seen.add((instance, "|".join(chosen)))
            rng.shuffle(chosen)
            row = study.instances.loc[instance]
            triplets.append(Triplet(row["task"], int(row["level"]), instance, tuple(chosen)))
            added = True
        if not added:
            break
    return triplets


def zip_longest(lists) -> list[list]:
    """Round-robin columns of `lists`: the first of each, then the second of each, ..."""
    lists = [list(entries) for entries in lists]
    depth = max(map(len, lists), default=0)
    return [[entries[i] for entries in lists if i < len(entries)] for i in range(depth)]


def combinations3(models: list[str]) -> list[tuple[str, str, str]]:
    return [tuple(sorted(c)) for c in combinations(models, 3)]


def assigned(triplets: list[Triplet], annotator: str, pool: list[str], per_triplet: int):
    """The triplets `annotator` ranks: triplet t goes to `per_triplet` annotators of the
    pool in rotation (t * per_triplet, ... mod the pool's size); an empty pool: all."""
    if not pool:
        return list(triplets)
    if annotator not in pool:
        raise ValueError(f"--annotator {annotator} is not one of --annotators {','.join(pool)}")
    if not 1 <= per_triplet <= len(pool):
        raise ValueError(f"--per-triplet {per_triplet}: need 1..{len(pool)} (the pool's size)")
    me = pool.index(annotator)
    return [
        t
        for i, t in enumerate(triplets)
        if me in {(i * per_triplet + j) % len(pool) for j in range(per_triplet)}
    ]


class RankingStore(LabelStore):
    """One annotator's rankings CSV (COLUMNS), shared and written as LabelStore's."""

    columns_of_its_own = COLUMNS
    keeps_other_columns = False  # a row's other columns are not kept

    def __init__(self, path: str | Path, annotator: str) -> None:
        self.annotator = annotator
        super().__init__(path)

    def rankings(self) -> dict[tuple[str, str], dict[str, int | None]]:
        """Each ranked or skipped triplet's ranks by model (None: skipped), as on disk."""
        self._read()
        found: dict[tuple[str, str], dict[str, int | None]] = defaultdict(dict)
        for row in self.rows:
            rank = (row.get("rank") or "").strip()
            found[(row["instance"], row["triplet"])][row["model"]] = int(rank) if rank else None
        return dict(found)

    def rank(self, triplet: Triplet, ranks: dict[str, int] | None) -> None:
        """Rank (or with None skip) one triplet, replacing what it had, and write."""
        instance, key = triplet.key

        def edit(rows: list[dict]) -> list[dict]:
            kept = [r for r in rows if (r["instance"], r["triplet"]) != (instance, key)]
            for model in sorted(triplet.models):
                rank = "" if ranks is None else str(ranks[model])
                values = (instance, key, self.annotator, model, rank)
                kept.append(dict(zip(COLUMNS, values, strict=True)))
            return kept

        self.change(edit)


class Preferences:
    """The annotator's triplets, what the page shows of each (never a judge score), and
    the rankings store."""

    def __init__(self, triplets: list[Triplet], study: Study, outdir, store: RankingStore):
        self.items, self.study, self.outdir, self.store = triplets, study, outdir, store

    def view(self, index: int, rankings: dict) -> dict:
        triplet = self.items[index]
        row = self.study.instances.loc[triplet.instance]
        ranks = rankings.get(triplet.key)
        return {
            "task": triplet.task,
            "level": triplet.level,
            "instance": triplet.instance,
            "prompt": row["prompt"],
            "goal": row["goal"],
            "checklist": list(row["checklist"]),
            "done": ranks is not None,
            "skipped": ranks is not None and all(r is None for r in ranks.values()),
            "ranks": None if ranks is None else [ranks.get(m) for m in triplet.models],
        }

    def state(self) -> dict:
        rankings = self.store.rankings()
        return {"items": [self.view(i, rankings) for i in range(len(self.items))]}

    def rank(self, index: int, ranks) -> dict:
        """Save the ranks of the videos as shown (a list of three of 1-3), or skip (None)."""
        triplet = self.items[index]
        if ranks is not None:
            if len(ranks) != 3 or not all(r in (1, 2, 3) for r in ranks):
                raise ValueError(f"ranks must be three of 1, 2, 3, got {ranks!r}")
            ranks = dict(zip(triplet.models, map(int, ranks), strict=True))
        self.store.rank(triplet, ranks)
        return self.view(index, self.store.rankings())

    def media(self, index: int, which: str) -> Path:
        triplet = self.items[index]
        if which == "image":
            return Path(self.study.instances.loc[triplet.instance, "image"])
        model = triplet.models[int(which)]
        return video(self.study, self.outdir, model, triplet.task, triplet.instance)


class PreferenceHandler(Handler):
    """GET / (the page), /api/items, /media/<triplet>/<0|1|2|image>; POST /api/rank
    {"index", "ranks": [r0, r1, r2] | null (skip)}; each only from the page it served."""

    page, media, action = PAGE, MEDIA, "/api/rank"

    def save(self, index: int, body: dict) -> dict:
        return self.annotation.rank(index, body["ranks"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog=f"{PROG} preferences",
        description=__doc__.split("\n")[0],
    )
    parser.add_argument("--annotator", required=True, help="your name (letters, digits, _.-)")
    parser.add_argument("--configfile", action="append", default=[], help="layered as Snakemake")
    parser.add_argument("--rankings", help="folder (default: judge_reliability.rankings)")
    parser.add_argument("--triplets", type=int, help="how many (default: one per instance)")
    parser.add_argument("--seed", type=int, default=0, help="of the draw")
    parser.add_argument("--annotators", default="", help="the pool, comma-separated")
    parser.add_argument("--per-triplet", type=int, default=2, help="annotators per triplet")
    parser.add_argument("--port", type=int, default=0, help="default: a free one")
    args = parser.parse_args(argv)
    if not NAME.fullmatch(args.annotator):
        parser.error(f"--annotator {args.annotator!r}: letters, digits, _ . - only")
    try:
        config, study, _ = load_run(args.configfile)
    except ValueError as err:  # a missing config file, a bad key: one line, no traceback
        parser.exit(2, f"{PROG}: error: {err}\n")
    folder = args.rankings or config["judge_reliability"]["rankings"]
    if not folder:
        parser.error("--rankings is needed when judge_reliability.rankings is not set")
    triplets = draw(study, config["outdir"], args.triplets, args.seed)
    pool = [name.strip() for name in args.annotators.split(",") if name.strip()]
    try:
        mine = assigned(triplets, args.annotator, pool, args.per_triplet)
    except ValueError as err:
        parser.error(str(err))
    if not mine:
        outdir = config["outdir"]
        parser.error(f"no triplets: an instance needs videos of three models under {outdir}")
    path = Path(folder) / f"{args.annotator}.csv"
    preferences = Preferences(mine, study, config["outdir"], RankingStore(path, args.annotator))
    server, url = serve(preferences, args.port, PreferenceHandler)
    with server:
        done = len(set(preferences.store.rankings()) & {t.key for t in mine})
        print(url, flush=True)
        print(f"{len(mine)} triplets, {done} done; rankings go to {path}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()
