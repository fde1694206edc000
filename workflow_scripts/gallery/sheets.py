"""Contact sheets and thumbnails, per (model, instance), from one decoding of its videos:

    gallery/<model>/sheets/<instance>.png       a row of frames per checkpoint video in step
                                                order, then the final video
    gallery/<model>/thumbs/<instance>.jpg       the final video's last frame (the index's cell)
    gallery/<model>/thumbs/<instance>.steps.jpg the last frame of each x0 checkpoint, then the
                                                final's, side by side (none without checkpoints)

A run whose generation failed (`generation.json` status `error`) has neither.
"""

from __future__ import annotations

from pathlib import Path

import decord
from PIL import Image, ImageDraw, ImageFont

from workflow_scripts.common.files import write_image
from workflow_scripts.common.logs import job_log
from workflow_scripts.gallery.runs import CHECKPOINT, JPEG, Run, runs_of

LABEL_WIDTH, HEADER, GAP = 80, 20, 2  # contact sheet layout (pixels)
STRIP_TILE = 40  # width of a checkpoint's tile in the strip (pixels)


def sample_tiles(video: Path, columns: int, width: int, height: int | None = None):
    """`columns` frames spread evenly from the first to the last, as `width` px tiles
    (height: the video's aspect unless given), and their times in seconds."""
    reader = decord.VideoReader(str(video))
    count, rate = len(reader), reader.get_avg_fps()
    indices = [round(k * (count - 1) / max(columns - 1, 1)) for k in range(columns)]
    frames = [Image.fromarray(pixels) for pixels in reader.get_batch(indices).asnumpy()]
    height = height or round(width * frames[0].height / frames[0].width)
    return [f.resize((width, height), Image.LANCZOS) for f in frames], [i / rate for i in indices]


def video_tiles(rows: list[tuple[str, Path]], columns: int, width: int):
    """The tiles of every (label, video), the last (the final video) setting the tile
    height, and the final's frame times."""
    last, times = sample_tiles(rows[-1][1], columns, width)
    height = last[0].height
    tiles = [sample_tiles(video, columns, width, height)[0] for _, video in rows[:-1]]
    return [*tiles, last], times


def contact_sheet(labels: list[str], tiles: list[list[Image.Image]], times) -> Image.Image:
    """One labelled row of tiles per video; the columns labelled with their times."""
    width, height, columns = tiles[0][0].width, tiles[0][0].height, len(times)
    size = (LABEL_WIDTH + columns * (width + GAP), HEADER + len(labels) * (height + GAP))
    sheet = Image.new("RGB", size, "white")
    draw, font = ImageDraw.Draw(sheet), ImageFont.load_default(size=12)
    for column, time in enumerate(times):
        x = LABEL_WIDTH + column * (width + GAP) + width // 2
        draw.text((x, HEADER // 2), f"{time:.2f} s", fill="black", font=font, anchor="mm")
    for row, (label, frames) in enumerate(zip(labels, tiles, strict=True)):
        y = HEADER + row * (height + GAP)
        draw.text((4, y + height // 2), label, fill="black", font=font, anchor="lm")
        for column, frame in enumerate(frames):
            sheet.paste(frame, (LABEL_WIDTH + column * (width + GAP), y))
    return sheet


def strip(lasts: list[Image.Image]) -> Image.Image:
    """The frames side by side, each STRIP_TILE px wide, 1 px apart."""
    height = round(STRIP_TILE * lasts[0].height / lasts[0].width)
    image = Image.new("RGB", (len(lasts) * (STRIP_TILE + 1) - 1, height), "white")
    for k, frame in enumerate(lasts):
        image.paste(frame.resize((STRIP_TILE, height), Image.LANCZOS), (k * (STRIP_TILE + 1), 0))
    return image


def write_pictures(runs: list[Run], sheets: Path, thumbs: Path, columns: int, width: int) -> None:
    """Per run whose generation did not fail: its contact sheet in `sheets`, its
    thumbnail and checkpoint strip in `thumbs` (the names in the module's docstring)."""
    sheets.mkdir(parents=True, exist_ok=True)
    thumbs.mkdir(parents=True, exist_ok=True)
    for run in runs:
        if run.generation_error():
            continue
        rows = run.videos()
        tiles, times = video_tiles(rows, columns, width)
        sheet = contact_sheet([label for label, _ in rows], tiles, times)
        write_image(sheets / f"{run.instance}.png", sheet)
        write_image(thumbs / f"{run.instance}.jpg", tiles[-1][-1], **JPEG)
        x0 = [
            row[-1]
            for (_, video), row in zip(rows, tiles, strict=True)
            if (match := CHECKPOINT.fullmatch(video.name)) and not match[2]
        ]
        if x0:
            write_image(thumbs / f"{run.instance}.steps.jpg", strip([*x0, tiles[-1][-1]]), **JPEG)


def contact_sheet_job(smk) -> None:
    """Rule `contact_sheet`: the sheets and thumbnails of one model, in two folders."""
    runs = runs_of(smk)
    with job_log(smk):
        write_pictures(
            runs,
            Path(smk.output.sheets),
            Path(smk.output.thumbs),
            smk.params.columns,
            smk.params.tile_width,
        )
        print(f"{len(runs)} contact sheets and thumbnails")
