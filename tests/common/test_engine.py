"""The encoding engine: each unique image and text encoded once, cached bit-identically, resumable; decisions equal
a brute-force per-item loop (ties included); transformed images are keyed by content and transform."""
from __future__ import annotations

import errno
import logging
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from common.evaluation.engine import ENCODING, MIN_BATCH_ROWS, Engine, EngineConfig
from common.evaluation.scoring.selection import STRICT, image_to_text, text_to_image
from common.files.image_transforms import GridShuffle
from common.files.tasks import DatasetError, ImageRef, ImageToTextItem, TextToImageItem
from common.miniworld.claims import sample_claim
from common.miniworld.negatives import EDIT_TYPES
from common.miniworld.render import NATURAL, render
from common.miniworld.scene import sample_scene


@dataclass(frozen=True)
class SelectionData:
    items: list[ImageToTextItem]
    images: list[Path]
    texts: list[str]


def make_items(root: Path, n_images: int, seed: int = 0) -> SelectionData:
    """Rendered scenes as PNGs, each used by several items (a positive and an edited negative caption)."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    items, images = [], []
    for i in range(n_images):
        scene = sample_scene(rng)
        path = root / f"{i:03d}.png"
        render(scene, 64, NATURAL, seed=i).save(path)
        images.append(path)
        positive = sample_claim(rng, scene)
        for category, edit in EDIT_TYPES.items():
            negative = edit(scene, positive, rng)
            if negative is not None:
                items.append(ImageToTextItem(f"{category}/{len(items)}", category, path, (positive.text(), negative.text())))
    texts = list(dict.fromkeys(c for it in items for c in it.captions))
    return SelectionData(items, images, texts)


@torch.no_grad()
def per_item_decisions(model, items: list[ImageToTextItem]) -> list[int]:
    """The brute-force reference: per item, encode its image and each caption at batch 1, positive strictly first."""
    out = []
    for it in items:
        image = model.encode_images(model.load_image(it.image).unsqueeze(0))[0].double()
        scores = [float(model.encode_tokens(model.tokenize([c]))[0].double() @ image) for c in it.captions]
        out.append(int(scores[0] > max(scores[1:])))
    return out


class CountingModel:
    """Wraps a model, counting what it encodes; can fail after N image batches (an interruption)."""

    def __init__(self, inner, fail_after_image_batches: int | None = None):
        self.inner = inner
        self.name, self.fingerprint = inner.name, inner.fingerprint
        self.images_encoded = 0
        self.texts_encoded = 0
        self.image_batches = 0
        self.fail_after = fail_after_image_batches

    def load_image(self, path: Path) -> torch.Tensor:
        return self.inner.load_image(path)

    def tokenize(self, texts):
        return self.inner.tokenize(texts)

    def encode_images(self, pixels):
        if self.fail_after is not None and self.image_batches >= self.fail_after:
            raise KeyboardInterrupt("simulated interruption")
        self.image_batches += 1
        self.images_encoded += _distinct_rows(pixels)
        return self.inner.encode_images(pixels)

    def encode_tokens(self, tokens):
        self.texts_encoded += _distinct_rows(tokens)
        return self.inner.encode_tokens(tokens)


def _distinct_rows(batch: torch.Tensor) -> int:
    """The rows a batch encodes, less the copies that pad a short batch (``MIN_BATCH_ROWS``)."""
    return len(torch.unique(batch.flatten(1), dim=0))


@pytest.fixture(scope="module")
def bench_data(tmp_path_factory):
    return make_items(tmp_path_factory.mktemp("bench") / "images", n_images=8)


def test_decisions_equal_a_per_item_loop(tiny_model, bench_data, tmp_path):
    result = image_to_text(Engine(tiny_model, EngineConfig(image_batch_size=3, text_batch_size=7, progress=False),
                                  cache_root=tmp_path), bench_data.items)
    reference = per_item_decisions(tiny_model, bench_data.items)
    assert [int(o.correct) for o in result.outcomes] == reference
    # the data exercise both outcomes, so equality is not trivially all-0 or all-1
    assert 0 < sum(reference) < len(reference)


def test_each_unique_image_and_text_is_encoded_once(tiny_model, bench_data, tmp_path):
    model = CountingModel(tiny_model)
    image_to_text(Engine(model, EngineConfig(progress=False), cache_root=tmp_path), bench_data.items)
    assert model.images_encoded == len(bench_data.images)
    assert model.texts_encoded == len(bench_data.texts)
    assert len(bench_data.items) > len(bench_data.images)  # images are shared across examples


def test_cache_is_reused_and_bit_identical(tiny_model, bench_data, tmp_path):
    first = image_to_text(Engine(tiny_model, EngineConfig(progress=False), cache_root=tmp_path), bench_data.items)
    model = CountingModel(tiny_model)
    second = image_to_text(Engine(model, EngineConfig(progress=False), cache_root=tmp_path), bench_data.items)
    assert model.images_encoded == 0 and model.texts_encoded == 0
    assert [o.scores for o in first.outcomes] == [o.scores for o in second.outcomes]


def image_embeddings(engine: Engine, images: list) -> np.ndarray:
    """Embeddings of ``images``, rows in order, as ``Engine.embed`` serves a task (encoding only what is uncached)."""
    return engine.embed(((image, "test") for image in images), []).images(images)


def text_embeddings(engine: Engine, texts: list[str]) -> np.ndarray:
    """Embeddings of ``texts``, rows in order, as ``Engine.embed`` serves a task."""
    return engine.embed([], texts).texts(texts)


def test_an_embedding_is_the_same_bits_in_any_batch_and_after_any_cache_history(tiny_model, bench_data, tmp_path):
    """What the cache serves must be what a cold run computes: each text and image encoded alone, or in small batches
    of mixed lengths, first (the cache's history) gives the bits the whole task's batches give. Before
    ``MIN_BATCH_ROWS`` and one length per text batch, a from-scratch ``make repro`` wrote other last digits into ARO's
    mini predictions than a workspace whose cache other stages had filled."""
    texts, images = bench_data.texts, bench_data.images
    lengths = {int((row != 0).sum()) for row in tiny_model.tokenize(texts)}
    assert len(lengths) > 1 and len(texts) > MIN_BATCH_ROWS  # mixed lengths and more than one padded batch's worth
    cold = Engine(tiny_model, EngineConfig(progress=False), cache_root=tmp_path / "cold")
    cold_texts, cold_images = text_embeddings(cold, texts), image_embeddings(cold, images)

    warmed = Engine(tiny_model, EngineConfig(image_batch_size=3, text_batch_size=3, progress=False),
                    cache_root=tmp_path / "warm")
    for text in texts[:3]:
        text_embeddings(warmed, [text])
    text_embeddings(warmed, texts[::-2])
    image_embeddings(warmed, images[:1])
    image_embeddings(warmed, images[::-3])
    model = CountingModel(tiny_model)
    warm = Engine(model, EngineConfig(progress=False), cache_root=tmp_path / "warm")
    warm_texts, warm_images = text_embeddings(warm, texts), image_embeddings(warm, images)
    assert 0 < model.texts_encoded < len(texts) and 0 < model.images_encoded < len(images)  # the cache served some
    assert np.array_equal(warm_texts, cold_texts) and np.array_equal(warm_images, cold_images)


def test_interrupted_run_resumes_from_cache(tiny_model, bench_data, tmp_path):
    config = EngineConfig(image_batch_size=2, shard_size=2, progress=False)
    interrupted = CountingModel(tiny_model, fail_after_image_batches=2)
    with pytest.raises(KeyboardInterrupt):
        image_to_text(Engine(interrupted, config, cache_root=tmp_path), bench_data.items)
    assert interrupted.images_encoded == 4
    resumed = CountingModel(tiny_model)
    image_to_text(Engine(resumed, config, cache_root=tmp_path), bench_data.items)
    assert resumed.images_encoded == len(bench_data.images) - 4


def _image(path: Path, color) -> Path:
    Image.new("RGB", (48, 48), color).save(path)
    return path


def test_ties_count_as_wrong_and_are_counted(tiny_model, tmp_path):
    img = _image(tmp_path / "a.png", (200, 30, 30))
    items = [
        # identical captions: an exact tie
        ImageToTextItem("t/0", "t", img, ("a red circle.", "a red circle.")),
        # the tokenizer lowercases and drops the case difference: same tokens, an exact tie too
        ImageToTextItem("t/1", "t", img, ("A RED CIRCLE.", "a red circle.")),
        ImageToTextItem("u/0", "u", img, ("a red circle.", "a blue square above a green star.")),
    ]
    result = image_to_text(Engine(tiny_model, EngineConfig(progress=False), cache_root=tmp_path / "c"), items)
    assert [o.tie for o in result.outcomes] == [True, True, False]
    assert [o.correct for o in result.outcomes][:2] == [False, False]
    groups = result.by_group()
    assert groups["t"].ties == 2 and groups["t"].correct == 0 and groups["t"].n == 2
    assert result.ties == 2
    assert per_item_decisions(tiny_model, items)[:2] == [0, 0]


def test_strict_rule():
    assert STRICT.decide(np.array([0.3, 0.2, 0.1])) == (True, False)
    assert STRICT.decide(np.array([0.3, 0.3])) == (False, True)
    assert STRICT.decide(np.array([0.2, 0.3, 0.1])) == (False, False)


def test_text_to_image_choice(tiny_model, tmp_path):
    red, blue = _image(tmp_path / "red.png", (220, 40, 40)), _image(tmp_path / "blue.png", (40, 80, 220))
    items = [TextToImageItem("x/0", "x", "a caption", (red, blue)), TextToImageItem("x/1", "x", "a caption", (blue, red))]
    result = text_to_image(Engine(tiny_model, EngineConfig(progress=False), cache_root=tmp_path / "c"), items)
    # the same two images in swapped order: exactly one of the two items can be correct (or both tie)
    a, b = result.outcomes
    assert a.scores == tuple(reversed(b.scores))
    assert (a.correct, b.correct) in ((True, False), (False, True)) or (a.tie and b.tie)


def test_missing_and_unreadable_images_name_file_and_example(tiny_model, tmp_path):
    missing = tmp_path / "missing.jpg"
    with pytest.raises(DatasetError, match=r"missing\.jpg.*ex/7"):
        image_to_text(Engine(tiny_model, EngineConfig(progress=False), cache_root=tmp_path / "c"),
            [ImageToTextItem("ex/7", "g", missing, ("a", "b"), origin="ex/7")])
    corrupt = tmp_path / "corrupt.jpg"
    corrupt.write_bytes(b"not a jpeg at all")
    with pytest.raises(DatasetError, match=r"corrupt\.jpg.*file\.json#3"):
        image_to_text(Engine(tiny_model, EngineConfig(progress=False), cache_root=tmp_path / "c"),
            [ImageToTextItem("ex/3", "g", corrupt, ("a", "b"), origin="file.json#3")])


def test_transformed_images_are_encoded_from_the_transformed_tensor_and_keyed_apart(tiny_model, bench_data, tmp_path):
    """An ImageRef's transform runs on the preprocessed tensor (nothing is written to disk); its embedding is cached
    under the file's hash plus the transform's identity, apart from the plain image's."""
    path = bench_data.images[0]
    shuffle = GridShuffle(3, 3, seed=1)
    engine = Engine(tiny_model, EngineConfig(progress=False), cache_root=tmp_path / "c")
    before = set(path.parent.iterdir())
    plain, shuffled, again = image_embeddings(engine, [path, ImageRef(path, shuffle), ImageRef(path, shuffle)])
    assert set(path.parent.iterdir()) == before
    key = engine.image_keys([ImageRef(path)], {})[0]
    pixels = shuffle(tiny_model.load_image(path), key)
    direct = tiny_model.encode_images(pixels.expand(MIN_BATCH_ROWS, *pixels.shape))[0].numpy()  # the engine's floor
    assert np.array_equal(shuffled, direct) and np.array_equal(shuffled, again)
    assert not np.allclose(plain, shuffled)
    keys = engine.image_keys([ImageRef(path), ImageRef(path, shuffle), ImageRef(path, GridShuffle(3, 3, seed=2))], {})
    assert len(set(keys)) == 3
    model = CountingModel(tiny_model)
    image_embeddings(Engine(model, EngineConfig(progress=False), cache_root=tmp_path / "c"), [ImageRef(path, shuffle)])
    assert model.images_encoded == 0  # cached under (content, transform)


def test_grid_shuffle_permutes_cells_deterministically_per_image():
    pixels = torch.arange(3 * 8 * 9, dtype=torch.float32).reshape(3, 8, 9)
    out = GridShuffle(2, 3, seed=0)(pixels, "a" * 64)
    assert torch.equal(out, GridShuffle(2, 3, seed=0)(pixels, "a" * 64))
    assert not torch.equal(out, pixels)
    cells = lambda t: sorted(t[:, r * 4:(r + 1) * 4, c * 3:(c + 1) * 3].flatten().tolist() for r in range(2) for c in range(3))
    assert cells(out) == cells(pixels)  # the same cells, moved
    odd = torch.arange(1, 2 * 7 * 7 + 1, dtype=torch.float32).reshape(2, 7, 7)
    shuffled = GridShuffle(3, 3, seed=0)(odd, "c" * 64)
    assert not shuffled[:, 6:, :].any() and not shuffled[:, :, 6:].any()  # the remainder is zeroed, as ARO's fold
    with pytest.raises(ValueError):
        GridShuffle(1, 1)


def test_decoding_workers_and_parallel_tokenising_change_nothing(tiny_model, bench_data, tmp_path, monkeypatch):
    """The GPU path (decoding workers handing over small batches regrouped into encoding batches; tokenising in
    forked processes) gives the same keys and embeddings, bit for bit, as the single-process path."""
    import common.evaluation.engine as engine_module

    monkeypatch.setattr(engine_module, "TOKENIZE_CHUNK", 8)  # several chunks even for this small set
    serial = Engine(tiny_model, EngineConfig(image_batch_size=5, num_workers=0, progress=False), cache_root=tmp_path / "a")
    parallel = Engine(tiny_model, EngineConfig(image_batch_size=5, decode_batch_size=2, num_workers=2, progress=False),
                      cache_root=tmp_path / "b")
    assert torch.equal(parallel._tokenize(bench_data.texts), tiny_model.tokenize(bench_data.texts))
    a = serial.embed(((p, "x") for p in bench_data.images), bench_data.texts)
    b = parallel.embed(((p, "x") for p in bench_data.images), bench_data.texts)
    assert np.array_equal(a.image_matrix, b.image_matrix) and np.array_equal(a.text_matrix, b.text_matrix)


def test_regroup_keeps_order_and_sizes():
    from common.evaluation.engine import _regroup

    parts = [torch.arange(i, i + n) for i, n in ((0, 3), (3, 3), (6, 1), (7, 4))]
    out = list(_regroup(iter(parts), 4))
    assert [len(t) for t in out] == [4, 4, 3] and torch.equal(torch.cat(out), torch.arange(11))


def test_bf16_is_for_cuda_and_cached_apart(tiny_model, tmp_path):
    with pytest.raises(ValueError, match="CUDA"):
        Engine(tiny_model, EngineConfig(precision="bf16"), cache_root=tmp_path)
    assert EngineConfig().workers_for("cpu") == 0 and EngineConfig().workers_for("cuda") >= 1
    assert EngineConfig(num_workers=3).workers_for("cpu") == 3


# ----------------------------------------------------------------------------------------------------------------
# an embedding cache that cannot be written: one warning naming VLC_CACHE, the run goes on uncached (issue 35)
# ----------------------------------------------------------------------------------------------------------------
def _cache_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "common.evaluation.cache" and r.levelname == "WARNING"]


def test_a_cache_folder_that_is_a_file_is_one_warning_naming_vlc_cache(tiny_model, bench_data, tmp_path, monkeypatch,
                                                                        caplog):
    reference = image_to_text(Engine(tiny_model, EngineConfig(progress=False), cache_root=tmp_path / "good"),
                              bench_data.items)
    not_a_folder = tmp_path / "cache-file"
    not_a_folder.write_text("a file where the cache folder should be\n")
    monkeypatch.setenv("VLC_CACHE", str(not_a_folder))
    with caplog.at_level(logging.WARNING, logger="common.evaluation.cache"):
        result = image_to_text(Engine(tiny_model, EngineConfig(progress=False, shard_size=4)), bench_data.items)
    assert [o.scores for o in result.outcomes] == [o.scores for o in reference.outcomes]
    warnings = _cache_warnings(caplog)
    assert len(warnings) == 1, warnings
    assert "VLC_CACHE" in warnings[0] and str(not_a_folder) in warnings[0] and "\n" not in warnings[0]
    assert not_a_folder.read_text() == "a file where the cache folder should be\n"


def test_a_full_disk_under_the_cache_is_one_warning_and_the_run_goes_on(tiny_model, bench_data, tmp_path,
                                                                       monkeypatch, caplog):
    import common.evaluation.cache

    reference = image_to_text(Engine(tiny_model, EngineConfig(progress=False), cache_root=tmp_path / "good"),
                              bench_data.items)

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(common.evaluation.cache.np, "savez", full)
    with caplog.at_level(logging.WARNING, logger="common.evaluation.cache"):
        result = image_to_text(Engine(tiny_model, EngineConfig(progress=False, shard_size=4),
                                      cache_root=tmp_path / "full"), bench_data.items)
    assert [o.scores for o in result.outcomes] == [o.scores for o in reference.outcomes]
    warnings = _cache_warnings(caplog)
    assert len(warnings) == 1 and "VLC_CACHE" in warnings[0] and "No space left" in warnings[0], warnings
    assert not list((tmp_path / "full").rglob("*.npz")) and not list((tmp_path / "full").rglob("*.tmp"))


def test_a_bad_image_decoded_by_a_worker_process_is_still_one_line(tiny_model, tmp_path):
    """On a GPU the images are decoded by worker processes; torch re-raises a worker's exception with the worker's
    traceback in its message, which would make the error line a page. The engine hands the message over as it is."""
    corrupt = tmp_path / "corrupt.jpg"
    corrupt.write_bytes(b"not a jpeg at all")
    good = _image(tmp_path / "good.png", (10, 20, 30))
    items = [ImageToTextItem("ex/1", "g", good, ("a", "b"), origin="file.json#1"),
             ImageToTextItem("ex/3", "g", corrupt, ("a", "b"), origin="file.json#3")]
    engine = Engine(tiny_model, EngineConfig(num_workers=2, decode_batch_size=1, progress=False),
                    cache_root=tmp_path / "c")
    with pytest.raises(DatasetError) as info:
        image_to_text(engine, items)
    message = str(info.value)
    assert "\n" not in message and "Traceback" not in message, message
    assert message.startswith(f"unreadable image {corrupt} (used by file.json#3): "), message


# ----------------------------------------------------------------------------------------------------------------
# fp16 (issue 31): weights cast as OpenAI's clip.load casts them on CUDA, scores rounded to half precision, ties counted
# ----------------------------------------------------------------------------------------------------------------
def test_fp16_casts_weights_as_clip_load_does_and_is_cached_apart(tiny_model, bench_data, tmp_path):
    """clip.load's convert_weights: Conv/Linear/attention weights and the projections in fp16; LayerNorm and the
    embeddings stay fp32 (LayerNorm computes in fp32). The fp32 model itself is untouched; fp16 embeddings are cached
    under their own key, never served to an fp32 engine."""
    from open_clip.transformer import LayerNormFp32

    fp32 = Engine(tiny_model, EngineConfig(progress=False), cache_root=tmp_path)
    fp16 = Engine(tiny_model, EngineConfig(progress=False, precision="fp16"), cache_root=tmp_path)
    net = fp16.model.model
    assert net.visual.conv1.weight.dtype == torch.float16 and net.visual.proj.dtype == torch.float16
    assert net.text_projection.dtype == torch.float16
    assert net.transformer.resblocks[0].attn.in_proj_weight.dtype == torch.float16
    assert net.transformer.resblocks[0].mlp.c_fc.weight.dtype == torch.float16
    assert isinstance(net.ln_final, LayerNormFp32) and net.ln_final.weight.dtype == torch.float32
    assert net.token_embedding.weight.dtype == torch.float32 and net.positional_embedding.dtype == torch.float32
    assert tiny_model.model.visual.conv1.weight.dtype == torch.float32  # the fp32 model is not cast in place
    assert fp16.identity == fp32.identity  # the same weights: one fingerprint, results attributed alike
    assert fp16.image_cache.directory != fp32.image_cache.directory
    assert fp16.image_cache.directory.parent.name == f"{tiny_model.fingerprint}-{ENCODING}-fp16"
    items = bench_data.items[:12]
    r32, r16 = image_to_text(fp32, items), image_to_text(fp16, items)
    s32 = np.array([o.scores for o in r32.outcomes])
    s16 = np.array([o.scores for o in r16.outcomes])
    assert np.array_equal(s16, s16.astype(np.float16).astype(np.float64))  # every score is a half-precision number
    assert not np.array_equal(s32, s32.astype(np.float16).astype(np.float64))
    assert np.abs(s16 - s32).max() < 2e-2
    again = image_to_text(Engine(tiny_model, EngineConfig(progress=False), cache_root=tmp_path), items)
    assert [o.scores for o in again.outcomes] == [o.scores for o in r32.outcomes]  # fp32 read back as fp32


class _FixedModel:
    """A stand-in with chosen embeddings: one image (0.6, 0.8); texts a (the image's direction), b (turned by 0.01
    rad: cosine 0.99995) and c (cosine 0.6). ``at_precision`` rounds the embeddings to fp16: b's float64 product then
    even exceeds a's by 1e-4, and only the half-precision rounding of the scores makes them the tie they are in an
    fp16 matrix product."""

    name, fingerprint = "fixed/stand-in", "fixed"
    TURNED = float(np.arctan2(0.8, 0.6) + 0.01)
    VECTORS = {"a": (0.6, 0.8), "b": (float(np.cos(TURNED)), float(np.sin(TURNED))), "c": (1.0, 0.0)}

    def __init__(self, dtype=torch.float32):
        self.dtype = dtype

    def at_precision(self, precision: str) -> "_FixedModel":
        assert precision == "fp16"
        return _FixedModel(torch.float16)

    def load_image(self, path: Path) -> torch.Tensor:
        return torch.zeros(1)

    def tokenize(self, texts):
        return torch.tensor([[ord(t)] for t in texts])

    def encode_images(self, pixels: torch.Tensor) -> torch.Tensor:
        return torch.tensor([[0.6, 0.8]] * len(pixels)).to(self.dtype).float()

    def encode_tokens(self, tokens: torch.Tensor) -> torch.Tensor:
        return torch.tensor([self.VECTORS[chr(int(t[0]))] for t in tokens]).to(self.dtype).float()


def test_fp16_scores_tie_where_fp32_does_not_and_each_rule_decides(tmp_path):
    """Independent reference: the cosines by hand (fp32: 1 > 0.99995; fp16: both round to 1.0)."""
    from common.evaluation.scoring.selection import ARGMAX

    img = _image(tmp_path / "a.png", (10, 10, 10))
    items = [ImageToTextItem("x/0", "x", img, ("b", "a")),   # the true caption second: a tie is wrong under ARGMAX
             ImageToTextItem("x/1", "x", img, ("a", "b")),   # first: a tie is right under ARGMAX, wrong under STRICT
             ImageToTextItem("x/2", "x", img, ("a", "c"))]   # no tie at either precision
    runs = {}
    for precision in ("fp32", "fp16"):
        engine = Engine(_FixedModel(), EngineConfig(progress=False, precision=precision, num_workers=0),
                        cache_root=tmp_path / "cache")
        runs[precision] = {rule.name: image_to_text(engine, items, rule) for rule in (STRICT, ARGMAX)}
    assert [o.tie for o in runs["fp32"]["strict"].outcomes] == [False, False, False]
    assert [o.tie for o in runs["fp16"]["strict"].outcomes] == [True, True, False]
    assert runs["fp16"]["strict"].ties == 2 and runs["fp32"]["strict"].ties == 0
    assert [o.correct for o in runs["fp32"]["argmax"].outcomes] == [False, True, True]
    assert [o.correct for o in runs["fp16"]["argmax"].outcomes] == [True, True, True]   # ARO's Order rule: ties right
    assert [o.correct for o in runs["fp16"]["strict"].outcomes] == [False, False, True]  # strict: ties wrong
    assert runs["fp16"]["strict"].outcomes[0].scores == (1.0, 1.0)


def test_fp16_retrieval_counts_half_precision_ties(tmp_path):
    """Retrieval's similarities are rounded too: a wrong caption 0.01 rad away ties the right one in fp16."""
    from common.evaluation.scoring import retrieval
    from common.files.tasks import RetrievalSet

    img = _image(tmp_path / "a.png", (10, 10, 10))
    img2 = _image(tmp_path / "b.png", (20, 10, 10))
    gallery = RetrievalSet("g", (img, img2), ("a", "b"), (0, 1))
    ties = {}
    for precision in ("fp32", "fp16"):
        engine = Engine(_FixedModel(), EngineConfig(progress=False, precision=precision, num_workers=0),
                        cache_root=tmp_path / "cache")
        result = retrieval.evaluate(engine, gallery)
        ties[precision] = result.i2t_ties
    assert ties == {"fp32": 0, "fp16": 2}


def test_fp16_needs_a_model_with_a_half_precision_path(tmp_path):
    from common.errors import WorkspaceError

    class NoHalf:
        name, fingerprint, device = "hf/stand-in", "x", "cpu"

    with pytest.raises(WorkspaceError, match=r"'hf/stand-in' has no fp16 path.*fp32 or bf16"):
        Engine(NoHalf(), EngineConfig(precision="fp16"), cache_root=tmp_path)


def test_an_image_file_is_read_once_for_its_hash_and_its_decoding(tmp_path):
    """``_hash_file`` reads the bytes once; its sha256 and decoding identity are those of the file on disk."""
    from common.evaluation.engine import _hash_file
    from common.files.image_transforms import decoding_identity
    from common.files.io import sha256_file

    rgb, wide = tmp_path / "rgb.png", tmp_path / "wide.png"
    Image.new("RGB", (8, 8), (10, 20, 30)).save(rgb)
    Image.fromarray(np.full((8, 8), 40000, dtype=np.uint16)).save(wide)
    for path in (rgb, wide):
        assert _hash_file(path) == (sha256_file(path), decoding_identity(path), None)
    assert _hash_file(wide)[1] is not None  # 16-bit: keyed apart from an RGB decoding
    digest, decoding, error = _hash_file(tmp_path / "absent.png")
    assert digest is None and decoding is None and isinstance(error, FileNotFoundError)
