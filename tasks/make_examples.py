"""Generate the small bundled example benchmark in the official VGI-Bench layout.

Four tasks (one per domain), three levels, two instances per level (3-digit ids):

    <root>/<task>/input_image/lv<N>/<task>_lv<N>_<id>.png
    <root>/<task>/input_image/lv<N>/<task>_lv<N>_<id>_gt.png      (sorting: reference image)
    <root>/<task>/prompt/video_gen_prompt/<task>.txt
    <root>/<task>/prompt/image_gen_prompt/<task>.txt             (all but block_assembly)
    <root>/<task>/judge_spec/_judge_rubric_<task>.json
    <root>/<task>/judge_spec/_completeness_judge.txt
    <root>/<task>/judge_spec/_gt_desc_<task>.json                  (clock_running)
    <root>/<task>/_raw/lv<N>/<task>_lv<N>_<id>_gt_desc.json        (clock_running)

The rubric files take the release's shapes: one task-wide object (maze_square), a list
of per-instance entries with a BOM (sorting; level 3 has one more checklist item), an
object keyed by id with reference answers (clock_running), an object holding a
``<task>_default`` entry (block_assembly).

Every instance draws from its own seeded ``random.Random``, so re-running the
script reproduces the folder byte for byte.

Usage: python tasks/make_examples.py [--out tasks/examples]
"""

import argparse
import json
import math
import random
import shutil
from pathlib import Path

from PIL import Image, ImageDraw

W, H = 640, 360
LEVELS = (1, 2, 3)
IDS = ("001", "002")
INK = (40, 40, 40)
PALETTE = [
    (230, 57, 70),
    (244, 162, 97),
    (233, 196, 106),
    (42, 157, 143),
    (69, 123, 157),
    (131, 56, 236),
    (255, 0, 110),
    (96, 108, 56),
]
CLOCK_RUN_MIN = 105  # duration stated in the clock_running prompt and used for its gt
CLOCK_RUN_TEXT = "1 hour and 45 minutes"


def canvas(bg=(255, 255, 255)):
    img = Image.new("RGB", (W, H), bg)
    return img, ImageDraw.Draw(img)


def dot(draw, x, y, r, fill):
    draw.ellipse((x - r, y - r, x + r, y + r), fill=fill)


# --- task drawings: (rng, level) -> (first frame, ground truth or None) ---


def draw_maze(rng, level):
    n = {1: 5, 2: 7, 3: 9}[level]
    cell = 320 // n
    x0, y0 = (W - cell * n) // 2, (H - cell * n) // 2
    opened, seen, stack = set(), {(0, 0)}, [(0, 0)]
    while stack:  # depth-first carving of a perfect maze
        r, c = stack[-1]
        nxt = [
            (r + dr, c + dc)
            for dr, dc in ((0, 1), (1, 0), (0, -1), (-1, 0))
            if 0 <= r + dr < n and 0 <= c + dc < n and (r + dr, c + dc) not in seen
        ]
        if not nxt:
            stack.pop()
            continue
        cell_next = rng.choice(nxt)
        opened.add(frozenset({(r, c), cell_next}))
        seen.add(cell_next)
        stack.append(cell_next)
    img, d = canvas()
    for r in range(n):
        for c in range(n):
            x, y = x0 + c * cell, y0 + r * cell
            if frozenset({(r, c), (r - 1, c)}) not in opened:
                d.line((x, y, x + cell, y), fill=INK, width=4)
            if frozenset({(r, c), (r, c - 1)}) not in opened:
                d.line((x, y, x, y + cell), fill=INK, width=4)
    d.rectangle((x0, y0, x0 + cell * n, y0 + cell * n), outline=INK, width=4)
    half, rad = cell // 2, cell // 4
    dot(d, x0 + half, y0 + rng.randrange(n) * cell + half, rad, (40, 170, 60))
    dot(d, x0 + (n - 1) * cell + half, y0 + rng.randrange(n) * cell + half, rad, (220, 40, 40))
    return img, None


def _bars(bars):
    img, d = canvas()
    step = 560 // len(bars)
    for i, (height, color) in enumerate(bars):
        x = 40 + i * step + step // 5
        d.rectangle((x, 320 - height, x + step * 3 // 5, 320), fill=color)
    d.line((30, 321, 610, 321), fill=INK, width=3)
    return img


def draw_sorting(rng, level):
    n = {1: 4, 2: 6, 3: 8}[level]
    bars = list(zip(rng.sample(range(40, 300, 20), n), rng.sample(PALETTE, n), strict=True))
    while bars == sorted(bars):
        rng.shuffle(bars)
    return _bars(bars), _bars(sorted(bars))


def draw_clock(rng, level):
    hour = rng.randint(1, 12)
    minute = {1: 0, 2: rng.choice((15, 30, 45)), 3: rng.randrange(1, 60)}[level]
    img, d = canvas((235, 238, 242))
    cx, cy, rad = W // 2, H // 2, 150
    face = rng.choice([(255, 255, 255), (255, 248, 225), (230, 244, 255)])
    d.ellipse((cx - rad, cy - rad, cx + rad, cy + rad), fill=face, outline=INK, width=6)

    def point(frac, length):
        a = 2 * math.pi * frac
        return cx + length * math.sin(a), cy - length * math.cos(a)

    for k in range(60):
        major = k % 5 == 0
        d.line(
            (*point(k / 60, rad - (26 if major else 12)), *point(k / 60, rad - 6)),
            fill=INK,
            width=5 if major else 2,
        )
    d.polygon(
        [point(-0.012, rad - 30), point(0.012, rad - 30), point(0, rad - 48)], fill=(220, 40, 40)
    )  # marks 12 o'clock
    d.line((cx, cy, *point((hour % 12 + minute / 60) / 12, 80)), fill=INK, width=10)
    d.line((cx, cy, *point(minute / 60, 125)), fill=INK, width=5)
    dot(d, cx, cy, 9, INK)
    end = (hour % 12) * 60 + minute + CLOCK_RUN_MIN
    eh, em = (end // 60) % 12 or 12, end % 60
    gt = {
        "description": f"The clock starts at {hour}:{minute:02d} and runs forward "
        f"{CLOCK_RUN_TEXT}, so it should end showing {eh}:{em:02d}.",
        "answer": f"{eh}:{em:02d}",
    }
    return img, gt


def draw_blocks(rng, level):
    cols, rows, k = {1: (4, 3, 2), 2: (5, 3, 3), 3: (5, 4, 4)}[level]
    pieces = [(0, 0, cols, rows)]
    while len(pieces) < k:  # guillotine-cut the target into k rectangles
        x, y, w, h = pieces.pop(max(range(len(pieces)), key=lambda i: pieces[i][2] * pieces[i][3]))
        if w >= h:
            s = rng.randint(1, w - 1)
            pieces += [(x, y, s, h), (x + s, y, w - s, h)]
        else:
            s = rng.randint(1, h - 1)
            pieces += [(x, y, w, s), (x, y + s, w, h - s)]
    unit = 36
    img, d = canvas()
    tx, ty = 600 - cols * unit, (H - rows * unit) // 2
    for i in range(1, cols):
        d.line((tx + i * unit, ty, tx + i * unit, ty + rows * unit), fill=(225, 225, 225))
    for j in range(1, rows):
        d.line((tx, ty + j * unit, tx + cols * unit, ty + j * unit), fill=(225, 225, 225))
    d.rectangle((tx, ty, tx + cols * unit, ty + rows * unit), outline=(120, 120, 120), width=3)
    rng.shuffle(pieces)
    x, y, shelf = 30, 30, 0
    for (_, _, w, h), color in zip(pieces, rng.sample(PALETTE, k), strict=True):
        if x + w * unit > 390:  # shelf packing left of the target
            x, y, shelf = 30, y + shelf + 24, 0
        assert y + h * unit <= H - 20, "blocks do not fit"
        d.rectangle((x, y, x + w * unit, y + h * unit), fill=color, outline=INK, width=2)
        x, shelf = x + w * unit + 24, max(shelf, h * unit)
    return img, None


# --- task texts ---

TEXT = {
    "maze_square": {
        "draw": draw_maze,
        "prompt": (
            "This is a square maze seen from above. Animate the green dot moving through "
            "the corridors of the maze from where it starts to the red dot. The green dot "
            "must stay inside the corridors and never pass through a black wall. The maze "
            "walls stay fixed and the camera does not move. The video ends with the green "
            "dot on top of the red dot."
        ),
        "image_prompt": (
            "This is a square maze seen from above. Show the maze after the green dot has "
            "travelled through the corridors, never crossing a black wall, to the red dot: "
            "the green dot now sits on top of the red dot. The walls, the colours and the "
            "framing stay as in the input image."
        ),
        "rubric": [
            "Move the green dot through the maze corridors until it reaches the red goal dot.",
            "The green dot never passes through or over a black wall.",
            "The green dot ends on the red goal dot.",
            "The maze layout (walls and corridors) stays the same throughout the video.",
            "The red goal dot stays where it started.",
            "The green dot moves continuously, without jumping or teleporting.",
        ],
        "tiers": (
            "2 (complete): the green dot travels along a wall-free path and finishes on the "
            "red goal dot, with the maze unchanged.\n"
            "1 (partial): the green dot makes real progress along valid corridors but stops "
            "before the goal, or reaches it only after a minor violation (clipping one wall "
            "corner, a brief jump).\n"
            "0 (failed): the dot does not move, goes through walls, gets nowhere near the "
            "goal, or the maze itself is redrawn or altered.\n"
        ),
    },
    "sorting": {
        "draw": draw_sorting,
        "prompt": (
            "The image shows coloured bars of different heights standing on a line. "
            "Rearrange the bars so that they are sorted from left to right by height, "
            "shortest on the left and tallest on the right. Move the bars one at a time; "
            "each bar keeps its own colour and height. The camera does not move."
        ),
        "image_prompt": (
            "The image shows coloured bars of different heights standing on a line. Show "
            "the same bars sorted from left to right by height, shortest on the left and "
            "tallest on the right; each bar keeps its own colour and height, and nothing "
            "else in the picture changes."
        ),
        "rubric": [
            "Rearrange the coloured bars so that they stand sorted left to right from shortest "
            "to tallest.",
            "In the final frame the bars are ordered from shortest (left) to tallest (right).",
            "Every bar keeps its original colour and height; no bar is added, removed or resized.",
            "All bars still stand on the common baseline at the end.",
            "Bars are moved as whole objects, without merging or morphing into each other.",
        ],
        "tiers": (
            "2 (complete): the final frame shows every original bar, unchanged in colour and "
            "height, in strictly increasing height from left to right.\n"
            "1 (partial): the bars are moved towards the right order but the final order "
            "has one or two misplaced bars, or the order is right but a bar is slightly "
            "distorted.\n"
            "0 (failed): the order is unchanged or random, or bars are added, removed, "
            "recoloured or resized.\n"
        ),
    },
    "clock_running": {
        "draw": draw_clock,
        "prompt": (
            "This is an analogue clock; the red triangle marks 12 o'clock. Let the clock "
            f"run forward by {CLOCK_RUN_TEXT}. The minute hand turns clockwise at a "
            "steady speed and the hour hand moves along with it at the correct rate. The "
            "clock face stays the same and the camera does not move. The video ends "
            f"showing the time {CLOCK_RUN_TEXT} after the starting time."
        ),
        "image_prompt": (
            "This is an analogue clock; the red triangle marks 12 o'clock. Show the same "
            f"clock {CLOCK_RUN_TEXT} later: both hands at the positions of the new time, "
            "the clock face and everything around it unchanged."
        ),
        "rubric": [
            f"Let the clock run forward by {CLOCK_RUN_TEXT}, with both hands moving correctly.",
            f"The final frame shows the starting time plus {CLOCK_RUN_TEXT}.",
            "Both hands turn clockwise only, never backwards.",
            "The hour hand moves consistently with the minute hand (1/12 of the minute "
            "hand's angle).",
            "The clock face, tick marks and hand shapes stay unchanged.",
        ],
        "tiers": (
            "2 (complete): the hands turn clockwise and end at the correct time (within "
            "about 5 minutes), with the hour hand consistent with the minute hand.\n"
            "1 (partial): the hands turn clockwise but the final time is noticeably off, "
            "or the minute hand is right while the hour hand is wrong or frozen.\n"
            "0 (failed): the hands do not move, run backwards or spin erratically, or the "
            "clock face is destroyed or replaced.\n"
        ),
    },
    "block_assembly": {
        "draw": draw_blocks,
        "prompt": (
            "On the left are several coloured blocks; on the right is the grey outline of "
            "a target shape. Move the blocks, one at a time and without rotating them, so "
            "that together they exactly fill the grey outline with no gaps or overlaps. "
            "The blocks keep their size, shape and colour, and the camera does not move."
        ),
        "rubric": [
            "Move all the coloured blocks into the grey target outline so that they fill it "
            "exactly.",
            "At the end every block lies inside the grey outline.",
            "The blocks cover the whole outline with no gaps and do not overlap each other.",
            "Each block keeps its size, shape and colour; no block is added or removed.",
            "Blocks are moved as rigid objects, one at a time, without passing through each other.",
        ],
        "tiers": (
            "2 (complete): all blocks end inside the outline, fill it completely without "
            "gaps or overlaps, and are unchanged in size, shape and colour.\n"
            "1 (partial): some blocks are placed correctly in the outline but the shape is "
            "not fully filled, or small gaps/overlaps remain.\n"
            "0 (failed): no block is placed in the outline, or blocks are deformed, "
            "recoloured, duplicated or vanish.\n"
        ),
    },
}


OVERALL = "Overall task: "


def rubric_file(task, rubric, refs):
    """The task's rubric file content in the shape this example shows (see the docstring)."""
    if task == "maze_square":
        return {"rubric": [OVERALL + rubric[0], *rubric[1:]]}
    if task == "sorting":
        extra = {3: ["Exactly 8 bars stand on the baseline at the end."]}
        return [
            {"id": name, "rubric": [OVERALL + rubric[0], *rubric[1:], *extra.get(level, [])]}
            for name, level in refs
        ]
    if task == "clock_running":
        return {
            name: {"rubric": rubric, "answer": refs[name, level]["answer"]} for name, level in refs
        }
    return {f"{task}_default": {"rubric": rubric}}


def write_json(path, data, encoding="utf-8"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding=encoding)


def write_task(root, task, spec):
    base = root / task
    shutil.rmtree(base, ignore_errors=True)
    prompts = {"video_gen_prompt": spec["prompt"], "image_gen_prompt": spec.get("image_prompt")}
    for kind, prompt in prompts.items():
        if prompt:  # as in the release, a task whose goal fits no single image has none
            (base / f"prompt/{kind}").mkdir(parents=True)
            (base / f"prompt/{kind}/{task}.txt").write_text(prompt + "\n")
    (base / "judge_spec").mkdir()
    (base / "judge_spec/_completeness_judge.txt").write_text(spec["tiers"])
    refs = {}
    for level in LEVELS:
        for iid in IDS:
            name = f"{task}_lv{level}_{iid}"
            frame, gt = spec["draw"](random.Random(name), level)
            out = base / f"input_image/lv{level}/{name}.png"
            out.parent.mkdir(parents=True, exist_ok=True)
            frame.save(out, optimize=True)
            refs[name, level] = gt
            if isinstance(gt, Image.Image):
                gt.save(out.with_name(f"{name}_gt.png"), optimize=True)
            elif gt is not None:
                write_json(base / f"_raw/lv{level}/{name}_gt_desc.json", gt["description"])
    if task == "clock_running":
        desc = {"description": f"The clock runs forward by exactly {CLOCK_RUN_TEXT}."}
        write_json(base / f"judge_spec/_gt_desc_{task}.json", desc)
    encoding = "utf-8-sig" if task == "sorting" else "utf-8"
    write_json(
        base / f"judge_spec/_judge_rubric_{task}.json",
        rubric_file(task, spec["rubric"], refs),
        encoding,
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "examples")
    root = ap.parse_args().out
    for task, spec in TEXT.items():
        write_task(root, task, spec)
    print(f"wrote {len(TEXT)} tasks to {root}")


if __name__ == "__main__":
    main()
