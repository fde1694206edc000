"""Contact sheets: per (model, instance), one row of frames per checkpoint video in step
order, then the final video (`gallery/<model>/sheets/<instance>.png`)."""

from __future__ import annotations

from pathlib import Path

import decord
from PIL import Image, ImageDraw, ImageFont

from workflow_scripts.common.logs import job_log
from workflow_scripts.gallery.runs import Run, runs_of

LABEL_WIDTH, HEADER, GAP = 80, 20, 2  # contact sheet layout (pixels)


def sample_tiles(video: Path, columns: int, width: int, height: int | None = None):
    """`columns` frames spread evenly from the first to the last, as `width` px tiles
    (height: the video's aspect unless given), and their times in seconds."""
    reader = decord.VideoReader(str(video))
    count, rate = len(reader), reader.get_avg_fps()
    indices = [round(k * (count - 1) / max(columns - 1, 1)) for k in range(columns)]
    frames = [Image.fromarray(pixels) for pixels in reader.get_batch(indices).asnumpy()]
    height = height or round(width * frames[0].height / frames[0].width)
    return [f.resize((width, height), Image.LANCZOS) for f in frames], [i / rate for i in indices]


def contact_sheet(rows: list[tuple[str, Path]], columns: int = 6, width: int = 160) -> Image.Image:
    """One labelled row of `columns` tiles per (label, video); the last row (the final
    video) sets the tile height and the times in the column labels."""
    last, times = sample_tiles(rows[-1][1], columns, width)
    height = last[0].height
    tiles = [sample_tiles(video, columns, width, height)[0] for _, video in rows[:-1]] + [last]
    size = (LABEL_WIDTH + columns * (width + GAP), HEADER + len(rows) * (height + GAP))
    sheet = Image.new("RGB", size, "white")
    draw, font = ImageDraw.Draw(sheet), ImageFont.load_default(size=12)
    for column, time in enumerate(times):
        x = LABEL_WIDTH + column * (width + GAP) + width // 2
        draw.text((x, HEADER // 2), f"{time:.2f} s", fill="black", font=font, anchor="mm")
    for row, ((label, _), frames) in enumerate(zip(rows, tiles, strict=True)):
        y = HEADER + row * (height + GAP)
        draw.text((4, y + height // 2), label, fill="black", font=font, anchor="lm")
        for column, frame in enumerate(frames):
            sheet.paste(frame, (LABEL_WIDTH + column * (width + GAP), y))
    return sheet


def write_sheets(runs: list[Run], folder: Path, columns: int, width: int) -> None:
    """A contact sheet `<instance>.png` in `folder` per run."""
    folder.mkdir(parents=True, exist_ok=True)
    for run in runs:
        reason = run.failure()
        sheet = (
            failure_sheet(reason, columns, width)
            if reason
            else contact_sheet(run.videos(), columns, width)
        )
        sheet.save(folder / f"{run.instance}.png")


def failure_sheet(reason: str, columns: int, width: int) -> Image.Image:
    """A sheet saying why there is no video (a video API's refusal or failure)."""
    sheet = Image.new("RGB", (LABEL_WIDTH + columns * (width + GAP), 3 * HEADER), "white")
    font = ImageFont.load_default(size=12)
    ImageDraw.Draw(sheet).text((4, HEADER), f"no video: {reason}"[:200], fill="darkred", font=font)
    return sheet


def contact_sheet_job(smk) -> None:
    """Rule `contact_sheet`: a sheet per instance of one model, in one folder."""
    runs = runs_of(smk)
    with job_log(smk):
        write_sheets(runs, Path(smk.output[0]), smk.params.columns, smk.params.tile_width)
        print(f"{len(runs)} contact sheets")
