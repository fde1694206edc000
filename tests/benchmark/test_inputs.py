"""Input images that would silently change the study: an entry that is not a readable
regular image is named before any job (never a dropped instance and a different seeded
half); an image a model would not see as the file shows it is converted the one way
(`vgi_models.input_image`) for the models, the judge and the gallery, or named."""

from __future__ import annotations

import io
import os

import decord
import numpy as np
from PIL import Image

from tests.support.workflow import default_config, examples_without, snakemake
from vgi_models.input_image import load_rgb, model_image_bytes
from workflow_scripts.gallery.pages import thumbnail
from workflow_scripts.judge.frames import encode_image


def sixteen_bit(path):
    """`path` (an example's input) rewritten, at half its brightness, as a 16-bit greyscale
    PNG; returns the 8-bit greyscale it shows."""
    grey = np.asarray(Image.open(path).convert("L"), dtype=np.uint16) // 2
    Image.fromarray(grey * 257).save(path)  # 0..127 -> 0..32639
    assert Image.open(path).mode == "I;16"
    return grey.astype(np.uint8)


def test_odd_entries_and_unseeable_images_are_named_before_any_job(tmp_path):
    root = examples_without(tmp_path / "bench", ["maze_square"])
    inputs = root / "maze_square" / "input_image"
    dangling = inputs / "lv1" / "maze_square_lv1_002.png"
    dangling.unlink()
    dangling.symlink_to(tmp_path / "gone.png")
    fifo = inputs / "lv2" / "maze_square_lv2_002.png"
    fifo.unlink()
    os.mkfifo(fifo)
    folder = inputs / "lv3" / "maze_square_lv3_002.png"
    folder.unlink()
    folder.mkdir()
    png = inputs / "lv2" / "maze_square_lv2_001.png"
    cmyk = png.with_suffix(".jpg")
    Image.open(png).convert("CMYK").save(cmyk)
    png.unlink()

    config = default_config(tmp_path, root=str(root), tasks=["maze_square"], subset="half")
    result = snakemake(tmp_path, config, "-n")
    assert result.returncode != 0
    expected = {
        "maze_square_lv1_002": f"input image is a symbolic link to {tmp_path / 'gone.png'}, "
        "which does not exist",
        "maze_square_lv2_002": "input image is a FIFO (named pipe), not an image file",
        "maze_square_lv3_002": "input image is a folder, not an image file",
        "maze_square_lv2_001": "image: image is CMYK, which has no faithful RGB reading",
    }
    lines = result.stdout.splitlines()
    for instance, problem in expected.items():
        assert any(f"- {instance}: {problem}" in line for line in lines), (instance, problem)
    assert "4 problem(s) found before scheduling any job" in result.stdout
    assert not (tmp_path / "results").exists()


def test_a_16_bit_image_reaches_the_model_the_judge_and_the_gallery_as_it_looks(tmp_path):
    root = examples_without(tmp_path / "bench", ["maze_square"])
    image = root / "maze_square" / "input_image" / "lv1" / "maze_square_lv1_001.png"
    shown = sixteen_bit(image)
    assert shown.max() < 128  # no white in it, where convert("RGB") sees almost only white:
    assert (np.asarray(Image.open(image).convert("RGB")) == 255).mean() > 0.9

    # the model: the held-image baseline's video starts from the image as it looks
    config = default_config(tmp_path, root=str(root), tasks=["maze_square"], levels=[1])
    config.update(models=["static_image"], judge={"enabled": False})
    run = tmp_path / "results" / "static_image" / "maze_square" / "maze_square_lv1_001"
    result = snakemake(tmp_path, config, str(run / "video.mp4"))
    assert result.returncode == 0, result.stdout[-3000:]
    first = decord.VideoReader(str(run / "video.mp4"))[0].asnumpy().astype(float)
    height, width = first.shape[:2]
    expected = np.asarray(Image.fromarray(shown).resize((width, height), Image.BICUBIC), float)
    assert np.abs(first.mean(axis=2) - expected).mean() < 4

    # the judge and the gallery, and an API: the same 8-bit reading
    judged = np.asarray(Image.open(io.BytesIO(encode_image(image, 10_000))), float)
    assert np.abs(judged.mean(axis=2) - shown).mean() < 2  # but for JPEG's loss
    thumbnail(image, tmp_path / "thumb.png", shown.shape[1])
    assert np.array_equal(np.asarray(Image.open(tmp_path / "thumb.png"))[..., 0], shown)
    data, mime = model_image_bytes(image, "image/png")
    sent = np.asarray(Image.open(io.BytesIO(data)))
    assert mime == "image/png" and np.array_equal(sent[..., 0], shown)
    assert np.array_equal(np.asarray(load_rgb(image))[..., 1], shown)


def test_transparency_is_composited_on_white_and_plain_files_are_sent_as_they_are(tmp_path):
    palette = Image.new("P", (16, 9))
    palette.putpalette([0, 0, 0, 200, 10, 10])
    palette.putpixel((0, 0), 1)
    palette.save(tmp_path / "p.png", transparency=0)
    rgb = np.asarray(load_rgb(tmp_path / "p.png"))
    assert rgb[0, 0].tolist() == [200, 10, 10] and rgb[1, 1].tolist() == [255, 255, 255]
    rgba = Image.new("RGBA", (16, 9), (0, 0, 255, 0))
    rgba.save(tmp_path / "a.png")
    assert np.asarray(load_rgb(tmp_path / "a.png"))[0, 0].tolist() == [255, 255, 255]
    Image.new("RGB", (16, 9), "red").save(tmp_path / "plain.jpg")
    data, mime = model_image_bytes(tmp_path / "plain.jpg", "image/jpeg")
    assert (data, mime) == ((tmp_path / "plain.jpg").read_bytes(), "image/jpeg")
