"""Every image mode Pillow can open becomes the right RGB image, or is refused by name (issue 35, item 3).

``common.files.image_transforms.to_rgb`` is the one conversion every image reader goes through, before the model's own
preprocessing: 16-bit images are scaled to 8 bits (never clipped to white), float images in [0, 1] are scaled,
colour spaces go through Pillow's conversion, alpha is dropped as the papers' loaders (``.convert("RGB")``) drop it,
and what has no faithful 8-bit RGB form is refused in one line naming the file and the mode.
"""
from __future__ import annotations

import io
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st
from PIL import Image

from common.cli import main as cli_main
from common.errors import WorkspaceError
from common.evaluation.engine import Engine, EngineConfig
from common.files.image_transforms import SIXTEEN_BIT_MODES, ImageModeError, open_rgb, to_rgb
from common.files.io import sha256_file
from common.files.tasks import DatasetError, ImageToTextItem, as_ref
from test_bad_input_matrix import MODEL, good_set, tiny_models  # noqa: F401 - tiny_models: a fixture

RAMP16 = np.array([[0, 1, 128, 257, 32767, 32768, 65278, 65535]], dtype=np.uint16)
"""16-bit samples whose 8-bit values are known: round(v * 255 / 65535)."""
RAMP8 = np.array([[0, 0, 0, 1, 127, 128, 254, 255]], dtype=np.uint8)


def rgb(image: Image.Image) -> np.ndarray:
    assert image.mode == "RGB"
    return np.asarray(image)


def grey(values: np.ndarray) -> np.ndarray:
    return np.repeat(np.asarray(values, dtype=np.uint8)[..., None], 3, axis=-1)


def sixteen_bit(mode: str) -> Image.Image:
    order = {"I;16": "<u2", "I;16L": "<u2", "I;16B": ">u2", "I;16N": "=u2"}[mode]
    return Image.frombytes(mode, (RAMP16.shape[1], 1), RAMP16.astype(order).tobytes())


def palette() -> Image.Image:
    image = Image.new("P", (3, 1))
    image.putpalette([255, 0, 0, 0, 255, 0, 0, 0, 255] + [0] * (253 * 3))
    image.putdata([0, 1, 2])
    return image


# mode -> (an image of that mode, the RGB pixels it must become)
def _cases() -> dict[str, tuple[Image.Image, np.ndarray]]:
    cases: dict[str, tuple[Image.Image, np.ndarray]] = {}
    bits = Image.new("1", (2, 1))
    bits.putpixel((1, 0), 1)
    cases["1"] = bits, grey([[0, 255]])
    cases["L"] = Image.fromarray(RAMP8), grey(RAMP8)
    cases["P"] = palette(), np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255]]], dtype=np.uint8)
    pa = palette().convert("PA")
    pa.putalpha(Image.new("L", (3, 1), 7))
    cases["PA"] = pa, cases["P"][1]
    colours = np.array([[[10, 20, 30], [200, 100, 0]]], dtype=np.uint8)
    cases["RGB"] = Image.fromarray(colours), colours
    rgba = np.concatenate([colours, np.full((1, 2, 1), 40, np.uint8)], axis=-1)
    cases["RGBA"] = Image.fromarray(rgba, "RGBA"), colours  # alpha dropped, as the papers' .convert("RGB")
    cases["RGBX"] = Image.fromarray(rgba, "RGBA").convert("RGBX"), colours
    premultiplied = Image.fromarray(rgba, "RGBA").convert("RGBa")
    cases["RGBa"] = premultiplied, np.asarray(premultiplied.convert("RGBA").convert("RGB"))
    la = np.stack([RAMP8, np.full_like(RAMP8, 9)], axis=-1)
    cases["LA"] = Image.fromarray(la, "LA"), grey(RAMP8)
    la_pre = Image.fromarray(la, "LA").convert("La")
    cases["La"] = la_pre, grey(np.asarray(la_pre.convert("LA"))[..., 0])
    for mode in ("CMYK", "YCbCr", "LAB", "HSV"):  # colour spaces: Pillow's own conversion to RGB
        image = Image.fromarray(colours).convert(mode) if mode != "HSV" else \
            Image.frombytes("HSV", (2, 1), bytes([0, 255, 255, 85, 255, 128]))
        cases[mode] = image, np.asarray(image.convert("RGB"))
    expected16 = grey(RAMP8)
    for mode in ("I;16", "I;16L", "I;16B", "I;16N"):
        cases[mode] = sixteen_bit(mode), expected16
    cases["I"] = Image.fromarray(RAMP16.astype(np.int32)), expected16  # what 16-bit PNGs and PGMs open as
    floats = np.array([[0.0, 0.25, 0.5, 1.0]], dtype=np.float32)
    cases["F"] = Image.fromarray(floats, "F"), grey([[0, 64, 128, 255]])
    return cases


CASES = _cases()


def test_every_pillow_mode_is_covered():
    """A mode a future Pillow adds must be decided here (converted or refused), not fall through silently."""
    assert set(Image.MODES) <= set(CASES), sorted(set(Image.MODES) - set(CASES))


@pytest.mark.parametrize("mode", sorted(CASES))
def test_mode_becomes_the_right_rgb_image(mode):
    image, expected = CASES[mode]
    assert image.mode == mode
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "Palette images with Transparency ..." and the like
        out = to_rgb(image, Path(f"x.{mode}"))
    assert np.array_equal(rgb(out), expected), (mode, rgb(out).tolist(), expected.tolist())


def test_sixteen_bit_is_scaled_not_clipped():
    """The bug: ``.convert("RGB")`` of an I;16 image clips every sample above 255 to white."""
    out = rgb(to_rgb(sixteen_bit("I;16")))
    assert np.array_equal(out[..., 0], RAMP8)
    assert (out == 255).sum() == 3  # only the brightest sample is white (in each channel)


def test_palette_with_transparency_gives_its_colours_without_a_warning(tmp_path):
    path = tmp_path / "p.png"
    image = palette()
    image.save(path, transparency=bytes([0, 255, 255]))
    with Image.open(path) as opened:
        assert opened.mode == "P" and "transparency" in opened.info
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            out = rgb(to_rgb(opened, path))
    assert np.array_equal(out, CASES["P"][1])


@pytest.mark.parametrize("mode, values, shown", [
    ("F", [[0.0, 1.5]], "[0, 1.5]"),
    ("F", [[-0.5, 0.5]], "[-0.5, 0.5]"),
    ("F", [[0.0, float("nan")]], "NaN"),
    ("I", [[-1, 100]], "[-1, 100]"),
    ("I", [[0, 70000]], "[0, 70000]"),
])
def test_values_without_an_8_bit_meaning_are_refused_by_name(mode, values, shown):
    array = np.array(values, dtype=np.float32 if mode == "F" else np.int32)
    with pytest.raises(ImageModeError) as info:
        to_rgb(Image.fromarray(array, mode), Path("scan.tif"))
    message = str(info.value)
    assert isinstance(info.value, WorkspaceError) and "\n" not in message
    assert message.startswith("scan.tif: image mode ") and repr(mode) in message and shown in message, message


class _Unconvertible:
    """An image of a mode Pillow may open but cannot convert to RGB (older Pillows' BGR;15, a plugin's own mode)."""

    mode = "BGR;15"

    def convert(self, mode: str):
        raise ValueError(f"conversion from {self.mode} to {mode} not supported")


def test_unconvertible_mode_is_refused_by_name():
    with pytest.raises(ImageModeError, match=r"^a\.bmp: image mode 'BGR;15' cannot be converted to RGB"):
        to_rgb(_Unconvertible(), Path("a.bmp"))  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------------------------------------
# files, the model's loader and the engine
# ----------------------------------------------------------------------------------------------------------------
def save_16bit_png(path: Path, values: np.ndarray) -> Path:
    Image.fromarray(values.astype(np.uint16)).save(path)
    with Image.open(path) as check:
        assert check.mode in ("I;16", "I"), check.mode
    return path


def gradient16(size: int = 48) -> np.ndarray:
    ramp = np.linspace(0, 65535, size * size).reshape(size, size)
    return np.round(ramp).astype(np.uint16)


def as_8bit(values16: np.ndarray) -> np.ndarray:
    return ((values16.astype(np.uint32) * 255 + 32767) // 65535).astype(np.uint8)


def test_open_rgb_reads_a_16_bit_png(tmp_path):
    values = gradient16()
    out = open_rgb(save_16bit_png(tmp_path / "deep.png", values))
    assert np.array_equal(rgb(out), grey(as_8bit(values)))


def test_a_16_bit_png_is_encoded_as_its_8_bit_twin(tiny_model, tmp_path):
    values = gradient16()
    deep = save_16bit_png(tmp_path / "deep.png", values)
    twin = tmp_path / "twin.png"
    Image.fromarray(grey(as_8bit(values))).save(twin)
    assert torch.equal(tiny_model.load_image(deep), tiny_model.load_image(twin))


def test_rgb_and_grey_files_decode_exactly_as_before(tiny_model, tmp_path):
    """The conversion moved before the model's preprocessing; RGB and L files (every image of the mini sets, COCO's
    grey JPEGs) give the same tensor, bit for bit, as the model's transform on the file itself (what the cache holds)."""
    rng = np.random.default_rng(0)
    paths = []
    for name, array in (("c.png", rng.integers(0, 256, (37, 53, 3))), ("g.png", rng.integers(0, 256, (41, 29))),
                        ("c.jpg", rng.integers(0, 256, (40, 60, 3))), ("g.jpg", rng.integers(0, 256, (33, 47)))):
        Image.fromarray(array.astype(np.uint8)).save(tmp_path / name)
        paths.append(tmp_path / name)
    for path in paths:
        with Image.open(path) as image:
            before = tiny_model.transform(image)
        assert torch.equal(tiny_model.load_image(path), before), path


def test_the_engine_does_not_reuse_an_embedding_cached_from_a_clipped_decoding(tiny_model, tmp_path):
    """Embeddings cached before the fix are keyed by the file's sha256 alone; for an image whose decoding changed
    (here a 16-bit PNG, clipped to white before) the engine must not hand back that stale embedding."""
    deep = save_16bit_png(tmp_path / "deep.png", gradient16())
    twin = tmp_path / "twin.png"
    Image.fromarray(grey(as_8bit(gradient16()))).save(twin)
    cache = tmp_path / "cache"
    engine = Engine(tiny_model, EngineConfig(progress=False), cache_root=cache)
    dim = engine.embed([(twin, "t")], []).images([twin]).shape[1]
    engine.image_cache.put([sha256_file(deep)], np.full((1, dim), 7.0, dtype=np.float32))  # the old key
    fresh = Engine(tiny_model, EngineConfig(progress=False), cache_root=cache)
    got, expected = fresh.embed([(deep, "d"), (twin, "t")], []).images([deep, twin])
    assert np.array_equal(got, expected)
    assert fresh.image_keys([as_ref(twin)], {})[0] == sha256_file(twin)  # RGB and L keys are unchanged


def test_the_engine_refuses_a_float_image_out_of_range_by_file_mode_and_example(tiny_model, tmp_path):
    path = tmp_path / "depth.tif"
    Image.fromarray(np.array([[0.0, 3.0], [1.0, 2.0]], dtype=np.float32), "F").save(path)
    item = ImageToTextItem("ex/9", "g", path, ("a", "b"), origin="set.json#9")
    from common.evaluation.scoring.selection import image_to_text

    with pytest.raises(DatasetError) as info:
        image_to_text(Engine(tiny_model, EngineConfig(progress=False), cache_root=tmp_path / "c"), [item])
    message = str(info.value)
    assert f"{path}: image mode 'F'" in message and "set.json#9" in message and "\n" not in message, message


def test_eval_scores_a_16_bit_image_as_its_8_bit_twin(tmp_path, capsys, tiny_models):
    """End to end (``python -m common eval``): a set whose image is a 16-bit PNG scores as the same set with the
    8-bit image (before the fix, the 16-bit image was scored as white)."""
    scores = {}
    for kind in ("deep", "twin"):
        root = tmp_path / kind
        manifest = good_set(root)
        values = gradient16(16)
        if kind == "deep":
            save_16bit_png(root / "images" / "a.png", values)
        else:
            Image.fromarray(grey(as_8bit(values))).save(root / "images" / "a.png")
        assert cli_main(["eval", "--model", MODEL, "--manifest", str(manifest), "--out", str(root / "r.json")]) == 0
        scores[kind] = (root / "r.predictions.csv").read_text()
        assert json.loads((root / "r.json").read_text())["n"] == 2
    capsys.readouterr()
    assert scores["deep"] == scores["twin"]


def test_to_rgb_keeps_an_rgb_image_as_it_is():
    image = Image.new("RGB", (3, 3), (1, 2, 3))
    assert to_rgb(image) is image
    buf = io.BytesIO()
    image.save(buf, "PNG")
    assert np.array_equal(rgb(open_rgb(io.BytesIO(buf.getvalue()))), np.asarray(image))


# ----------------------------------------------------------------------------------------------------------------
# any pixels of any mode: an RGB image of the same size, or a refusal by name (hypothesis)
# ----------------------------------------------------------------------------------------------------------------
def _raw_size(mode: str, width: int, height: int) -> int:
    return len(Image.new(mode, (width, height)).tobytes())


@st.composite
def any_image(draw) -> Image.Image:
    mode = draw(st.sampled_from(sorted(Image.MODES)))
    width, height = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    data = draw(st.binary(min_size=_raw_size(mode, width, height), max_size=_raw_size(mode, width, height)))
    return Image.frombytes(mode, (width, height), data)


@settings(max_examples=300, deadline=None)
@given(any_image())
def test_any_image_becomes_rgb_of_its_size_or_is_refused_by_name(image):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # not even a NumPy warning (a signalling NaN cast, an overflow)
            out = to_rgb(image, Path("any.img"))
    except ImageModeError as exc:
        message = str(exc)
        assert image.mode in ("F", "I") and message.startswith(f"any.img: image mode {image.mode!r} "), message
        assert "\n" not in message
        return
    assert out.mode == "RGB" and out.size == image.size
    if image.mode in SIXTEEN_BIT_MODES:  # scaled, never clipped
        values = np.asarray(image).astype(np.int64)
        assert np.array_equal(np.asarray(out)[..., 0], (values * 255 + 32767) // 65535)

