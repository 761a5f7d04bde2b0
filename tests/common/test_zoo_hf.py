"""The zoo's Hugging Face backend (common/zoo/hf.py) and ITM selection (common/evaluation/scoring/matching.py).

No download: tiny BLIP and FLAVA models (hidden size 32, one layer, 32x32 images in 16x16 patches) are randomly
initialised here with a WordPiece vocabulary written by the test, and saved with ``save_pretrained``; the zoo loads
them from that directory. Every score is checked against transformers' own forward pass.
"""
from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

transformers = pytest.importorskip("transformers")

from common import zoo  # noqa: E402
from common.evaluation.engine import Engine, EngineConfig  # noqa: E402
from common.evaluation.scoring import matching, selection  # noqa: E402
from common.evaluation.scoring.selection import ARGMAX, STRICT  # noqa: E402
from common.files.tasks import DatasetError, ImageRef, ImageToTextItem  # noqa: E402
from common.zoo import ModelSpec, ModelUnavailable, create_model, get_spec, specs as zoo_specs  # noqa: E402
from common.zoo.hf import HFModel, create_hf_model  # noqa: E402
from hf_support import TEXTS, VOCAB, save_blip as _save_blip, save_flava as _save_flava  # noqa: E402


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hf")
    images = []
    rng = np.random.default_rng(0)
    for i in range(3):
        path = root / f"img{i}.png"
        Image.fromarray(rng.integers(0, 256, (40, 48, 3), dtype=np.uint8)).save(path)
        images.append(path)
    return {"blip": _save_blip(root), "blip-other": _save_blip(root, seed=1), "flava": _save_flava(root),
            "root": root, "images": images}


def _spec(arch: str, path: Path | str, name: str | None = None, backend: str = "transformers") -> ModelSpec:
    return ModelSpec(name=name or f"test/{arch}", arch=arch, family="test", label=arch, backend=backend,
                     pretrained=str(path))


@pytest.fixture(scope="module")
def blip(saved) -> HFModel:
    return create_hf_model(_spec("blip", saved["blip"]))


@pytest.fixture(scope="module")
def flava(saved) -> HFModel:
    return create_hf_model(_spec("flava", saved["flava"]))


def _pil(paths):
    return [Image.open(p).convert("RGB") for p in paths]


# --------------------------------------------------------------------------------------------------
# contrastive (ITC) embeddings equal transformers' own contrastive scores
# --------------------------------------------------------------------------------------------------
def test_blip_embeddings_are_transformers_itc(blip, saved):
    pixels = torch.stack([blip.load_image(p) for p in saved["images"]])
    reference = blip.processor(images=_pil(saved["images"]), text=TEXTS, padding="max_length", max_length=35,
                               return_tensors="pt")
    assert torch.equal(pixels, reference["pixel_values"])
    tokens = blip.tokenize(TEXTS)
    assert tokens.shape == (len(TEXTS), 35) and torch.equal(tokens, reference["input_ids"])
    images, texts = blip.encode_images(pixels), blip.encode_tokens(tokens)
    assert torch.allclose(images.norm(dim=-1), torch.ones(3)) and torch.allclose(texts.norm(dim=-1), torch.ones(4))
    with torch.no_grad():
        itc = blip.model(input_ids=reference["input_ids"], attention_mask=reference["attention_mask"],
                         pixel_values=reference["pixel_values"], use_itm_head=False).itm_score
    assert torch.allclose(images @ texts.T, itc, atol=1e-5)


def test_flava_embeddings_are_transformers_itc(flava, saved):
    paths = saved["images"][:2]
    pixels = torch.stack([flava.load_image(p) for p in paths])
    reference = flava.processor(images=_pil(paths), text=TEXTS[:2], padding="max_length", max_length=77,
                                return_tensors="pt")
    assert torch.equal(pixels, reference["pixel_values"])
    images, texts = flava.encode_images(pixels), flava.encode_texts(TEXTS[:2])
    assert torch.allclose(images.norm(dim=-1), torch.ones(2)) and torch.allclose(texts.norm(dim=-1), torch.ones(2))
    with torch.no_grad():
        out = flava.model(input_ids=reference["input_ids"], input_ids_masked=reference["input_ids"],
                          attention_mask=reference["attention_mask"], pixel_values=reference["pixel_values"],
                          return_loss=False)
    assert torch.allclose(images @ texts.T, out.contrastive_logits_per_image / flava.model.flava.logit_scale.exp(), atol=1e-5)


def test_engine_and_contrastive_selection_run_on_hf_models(blip, saved, tmp_path):
    """Fixed-width token rows: the engine stacks rows tokenised apart and hashes them."""
    item = ImageToTextItem("i0", "g", saved["images"][0], tuple(TEXTS))
    result = selection.image_to_text(Engine(blip, EngineConfig(progress=False), cache_root=tmp_path), [item])
    expected = blip.encode_texts(TEXTS) @ blip.encode_images(blip.load_image(saved["images"][0])[None])[0]
    assert np.allclose(result.outcomes[0].scores, expected.numpy(), atol=1e-6)
    assert result.fingerprint == blip.fingerprint


# --------------------------------------------------------------------------------------------------
# image-text matching (ITM) equals transformers' ITM head
# --------------------------------------------------------------------------------------------------
def _blip_itm(model: HFModel, paths, texts, first_token: int | None = None) -> torch.Tensor:
    inputs = model.processor(images=_pil(paths), text=texts, padding="max_length", max_length=35, return_tensors="pt")
    if first_token is not None:
        inputs["input_ids"][:, 0] = first_token
    with torch.no_grad():
        logits = model.model(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"],
                             pixel_values=inputs["pixel_values"], use_itm_head=True).itm_score
    return logits


def test_blip_match_scores_are_the_itm_softmax(blip, saved):
    paths = [saved["images"][0], saved["images"][0], saved["images"][1], saved["images"][2]]  # a repeated image
    pixels = torch.stack([blip.load_image(p) for p in paths])
    logits = _blip_itm(blip, paths, TEXTS)
    assert torch.allclose(blip.itm_logits(pixels, TEXTS), logits, atol=1e-5)
    scores = blip.match_scores(pixels, TEXTS)
    assert scores.shape == (4,) and torch.allclose(scores, torch.softmax(logits, -1)[:, 1], atol=1e-6)
    # ARO's BLIP ranking: the match logit plus the contrastive cosine
    cosine = (blip.encode_images(pixels) * blip.encode_texts(TEXTS)).sum(-1)
    assert torch.allclose(blip.pair_scores(pixels, TEXTS, "itm_logit+itc"), logits[:, 1] + cosine, atol=1e-5)
    with pytest.raises(ValueError, match="unknown pair score"):
        blip.pair_scores(pixels, TEXTS, "itc")
    with pytest.raises(ValueError, match="pairs"):
        blip.match_scores(pixels, TEXTS[:3])


def test_blip_itm_with_the_original_enc_token(saved):
    """The original BLIP code starts ITM inputs with [ENC]; transformers keeps [CLS]. Both are available."""
    model = create_hf_model(_spec("blip", saved["blip"]), itm_start_token="[ENC]")
    paths = saved["images"][:2]
    pixels = torch.stack([model.load_image(p) for p in paths])
    logits = _blip_itm(model, paths, TEXTS[:2], first_token=VOCAB.index("[ENC]"))
    assert torch.allclose(model.itm_logits(pixels, TEXTS[:2]), logits, atol=1e-5)
    plain = create_hf_model(_spec("blip", saved["blip"]))
    assert model.fingerprint != plain.fingerprint
    with pytest.raises(ValueError, match="not in its vocabulary"):
        create_hf_model(_spec("blip", saved["blip"]), itm_start_token="[NOPE]")


def test_flava_match_scores_are_the_pretraining_itm_softmax(flava, saved):
    paths = [saved["images"][0], saved["images"][0], saved["images"][1]]
    texts = TEXTS[:3]
    pixels = torch.stack([flava.load_image(p) for p in paths])
    inputs = flava.processor(images=_pil(paths), text=texts, padding="max_length", max_length=77, return_tensors="pt")
    with torch.no_grad():  # ARO's FlavaWrapper call: unmasked text, no masked patches
        logits = flava.model(input_ids=inputs["input_ids"], input_ids_masked=inputs["input_ids"],
                             attention_mask=inputs["attention_mask"], pixel_values=inputs["pixel_values"],
                             return_loss=False).itm_logits
    assert torch.allclose(flava.itm_logits(pixels, texts), logits, atol=1e-5)
    assert torch.allclose(flava.match_scores(pixels, texts), torch.softmax(logits, -1)[:, 1], atol=1e-6)


def test_flava_itm_attending_padding_as_aro_ran_it(saved):
    """Before transformers 4.39 (#29446) FLAVA's multimodal encoder saw every one of the 77 positions, padding
    included (the text tower masked it): ARO's FLAVA numbers. ``itm_attends_padding`` reproduces that."""
    flava = create_hf_model(_spec("flava", saved["flava"]), itm_attends_padding=True)
    paths, texts = saved["images"][:2], TEXTS[:2]
    pixels = torch.stack([flava.load_image(p) for p in paths])
    inputs = flava.processor(images=_pil(paths), text=texts, padding="max_length", max_length=77, return_tensors="pt")
    net = flava.model.flava
    with torch.no_grad():
        out = net(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"],
                  pixel_values=inputs["pixel_values"], skip_multimodal_encoder=True)
        joint = torch.cat([net.image_to_mm_projection(out.image_output.hidden_states[-1]),
                           net.text_to_mm_projection(out.text_output.hidden_states[-1])], dim=1)
        logits = flava.model.itm_head(net.multimodal_model(joint).last_hidden_state)
    assert torch.allclose(flava.itm_logits(pixels, texts), logits, atol=1e-5)
    masked = create_hf_model(_spec("flava", saved["flava"]))
    assert not torch.allclose(masked.itm_logits(pixels, texts), logits, atol=1e-3)  # the padding matters
    assert masked.fingerprint != flava.fingerprint
    assert torch.equal(masked.encode_images(pixels), flava.encode_images(pixels))  # contrastive scores unchanged
    with pytest.raises(ValueError, match="FLAVA"):
        create_hf_model(_spec("blip", saved["blip"]), itm_attends_padding=True)


# --------------------------------------------------------------------------------------------------
# matching.image_to_text
# --------------------------------------------------------------------------------------------------
class _WordMatcher:
    """A stand-in cross-encoder: a pair scores the share of the caption's words found in the image's file name
    (the "image" is that name's letters, as pixel values); it records the batches it was given."""

    name, fingerprint = "stub", "f" * 32

    def __init__(self):
        self.batches: list[int] = []
        self.loaded: list[Path] = []

    def load_image(self, path: Path) -> torch.Tensor:
        self.loaded.append(Path(path))
        if "broken" in path.name:
            raise OSError("truncated file")
        name = path.stem.ljust(40)
        return torch.tensor([float(ord(c)) for c in name])

    def match_scores(self, pixels: torch.Tensor, texts) -> torch.Tensor:
        self.batches.append(len(texts))
        out = []
        for row, text in zip(pixels, texts):
            image_words = set("".join(chr(int(v)) for v in row).strip().split("_"))
            words = text.split()
            out.append(sum(w in image_words for w in words) / len(words))
        return torch.tensor(out)


def _files(root: Path, *stems: str) -> list[Path]:
    paths = []
    for stem in stems:
        (root / f"{stem}.png").write_bytes(stem.encode())
        paths.append(root / f"{stem}.png")
    return paths


def test_matching_decides_items_with_the_rule(tmp_path):
    red, blue = _files(tmp_path, "red_circle", "blue_square")
    items = [
        ImageToTextItem("win", "g1", red, ("red circle", "blue circle", "red square")),
        ImageToTextItem("lose", "g1", blue, ("red square", "blue square")),
        ImageToTextItem("tie", "g2", red, ("red circle", "circle red")),  # same words: equal scores
    ]
    model = _WordMatcher()
    result = matching.image_to_text(model, items, STRICT, batch_size=4)
    assert result.task == "image_to_text_itm" and result.rule == "strict"
    assert (result.model, result.fingerprint) == ("stub", "f" * 32)
    assert [o.item_id for o in result.outcomes] == ["win", "lose", "tie"]
    assert result.outcomes[0].scores == (1.0, 0.5, 0.5) and result.outcomes[0].correct
    assert not result.outcomes[1].correct
    assert result.outcomes[2].tie and not result.outcomes[2].correct
    assert matching.image_to_text(_WordMatcher(), items, ARGMAX).outcomes[2].correct  # argmax: a tie wins
    assert model.batches == [4, 3]  # 7 pairs in batches of at most 4, across item boundaries
    assert model.loaded == [red, blue, red]  # each item's image once for its K captions
    assert result.by_group()["g1"].correct == 1


def test_matching_applies_image_transforms_and_names_bad_images(tmp_path):
    class Reverse:
        identity = "reverse"

        def __init__(self):
            self.keys = []

        def __call__(self, pixels, content_key):
            self.keys.append(content_key)
            return pixels.flip(0)

    (path,) = _files(tmp_path, "red_circle")
    reverse = Reverse()
    item = ImageToTextItem("t", "g", ImageRef(path, reverse), ("red circle", "blue square"))
    result = matching.image_to_text(_WordMatcher(), [item])
    assert result.outcomes[0].scores == (0.0, 0.0)  # the reversed name matches no word
    from common.files.io import sha256_file

    assert reverse.keys == [sha256_file(path)]  # seeded like the engine: the file's sha256

    class Failing(Reverse):
        def __call__(self, pixels, content_key):
            raise RuntimeError("expects 3 x H x W")

    bad = ImageToTextItem("t", "g", ImageRef(path, Failing()), ("a", "b"), origin="file.json:7")
    with pytest.raises(DatasetError, match="file.json:7.*cannot be applied"):
        matching.image_to_text(_WordMatcher(), [bad])
    (broken,) = _files(tmp_path, "broken")
    with pytest.raises(DatasetError, match="broken.png.*used by b1"):
        matching.image_to_text(_WordMatcher(), [ImageToTextItem("b1", "g", broken, ("a", "b"))])
    with pytest.raises(DatasetError, match="no items"):
        matching.image_to_text(_WordMatcher(), [])
    with pytest.raises(ValueError, match="only ITM"):
        matching.image_to_text(_WordMatcher(), [item], score="itm_logit+itc")


def test_matching_with_a_real_itm_head(blip, saved):
    items = [ImageToTextItem("a", "g", saved["images"][0], tuple(TEXTS)),
             ImageToTextItem("b", "g", saved["images"][1], tuple(TEXTS[:2]))]
    result = matching.image_to_text(blip, items, ARGMAX, batch_size=3)
    for item, outcome in zip(items, result.outcomes):
        pixels = blip.load_image(item.image)[None].expand(len(item.captions), -1, -1, -1)
        expected = blip.match_scores(pixels, item.captions).double().numpy()
        assert np.allclose(outcome.scores, expected, atol=1e-6)
        assert outcome.correct == bool(expected[0] >= expected[1:].max())
    aro = matching.image_to_text(blip, items, ARGMAX, score="itm_logit+itc")
    assert aro.task == "image_to_text_itm_logit+itc"


# --------------------------------------------------------------------------------------------------
# building: the registry, unavailable weights, fingerprints
# --------------------------------------------------------------------------------------------------
def test_registry_entries_and_dispatch(saved, monkeypatch, capsys):
    blip_spec, flava_spec, xvlm_spec = get_spec("blip/itm-base-coco"), get_spec("flava/full"), get_spec("xvlm/coco")
    assert (blip_spec.backend, blip_spec.arch, blip_spec.pretrained) == (
        "transformers", "blip", "Salesforce/blip-itm-base-coco")
    assert (flava_spec.backend, flava_spec.arch, flava_spec.pretrained) == ("transformers", "flava", "facebook/flava-full")
    assert xvlm_spec.backend == "xvlm"
    for spec in (blip_spec, flava_spec, xvlm_spec):
        assert zoo.activation_mismatch(spec) is None  # open_clip's activation check does not apply
    assert "huggingface.co/Salesforce/blip-itm-base-coco" in zoo.factory._how_to_get(blip_spec)
    local = dataclasses.replace(blip_spec, pretrained=str(saved["blip"]))
    monkeypatch.setattr(zoo_specs, "get_spec", lambda name: local if name == blip_spec.name else get_spec(name))
    model = create_model(blip_spec.name)
    assert isinstance(model, HFModel) and model.name == "blip/itm-base-coco"
    from common.cli import main

    assert main(["zoo", "list"]) == 0
    assert "transformers:Salesforce/blip-itm-base-coco" in capsys.readouterr().out


def test_xvlm_is_unavailable_with_a_clear_message():
    with pytest.raises(ModelUnavailable, match=r"xvlm/coco.*not part of Hugging Face transformers.*zengyan-97/X-VLM"):
        create_model("xvlm/coco")
    with pytest.raises(ModelUnavailable, match="zengyan-97/X-VLM"):
        create_hf_model(_spec("xvlm", "somewhere"))


def test_offline_and_not_cached_is_unavailable_at_once(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    started = time.perf_counter()
    with pytest.raises(ModelUnavailable) as exc:
        create_hf_model(get_spec("blip/itm-base-coco"), cache_dir=str(tmp_path / "hub"))
    assert time.perf_counter() - started < 5
    msg = str(exc.value)
    for needle in ("blip/itm-base-coco", "Salesforce/blip-itm-base-coco", "HF_HUB_OFFLINE=1",
                   "python -m common zoo check blip/itm-base-coco", "HF_HOME", str(tmp_path / "hub")):
        assert needle in msg, (needle, msg)


def test_missing_transformers_names_the_extra(monkeypatch, saved):
    monkeypatch.setitem(sys.modules, "transformers", None)  # `import transformers` raises ImportError
    with pytest.raises(ModelUnavailable, match=r"test/blip.*transformers.*pip install -e '\.\[hf\]'"):
        create_hf_model(_spec("blip", saved["blip"]))


def test_missing_directory_or_weights_is_unavailable(saved, tmp_path):
    with pytest.raises(ModelUnavailable, match="not found"):
        create_hf_model(_spec("blip", tmp_path / "nowhere"))
    import shutil

    from safetensors.torch import load_file, save_file

    partial = tmp_path / "partial"
    shutil.copytree(saved["blip"], partial)
    weights = load_file(str(partial / "model.safetensors"))
    save_file({k: v for k, v in weights.items() if not k.startswith("itm_head.")}, str(partial / "model.safetensors"),
              metadata={"format": "pt"})
    with pytest.raises(ModelUnavailable, match="lacks 2 weights.*itm_head"):  # never a random ITM head
        create_hf_model(_spec("blip", partial))
    with pytest.raises(ModelUnavailable, match="arch"):
        create_hf_model(_spec("clip", saved["blip"]))


def test_fingerprint_follows_the_weights(blip, saved):
    again = create_hf_model(_spec("blip", saved["blip"], name="test/other-name"))
    assert again.fingerprint == blip.fingerprint  # weights and preprocessing, not the name
    assert create_hf_model(_spec("blip", saved["blip-other"])).fingerprint != blip.fingerprint
    with torch.no_grad():
        again.model.itm_head.bias[0] += 1e-3
    from common.zoo.hf import fingerprint_hf_model

    itm = "None:masks-padding"
    blip.processor(text=TEXTS, padding="longest", max_length=5, truncation=True)  # calls set the tokenizer's state
    assert fingerprint_hf_model("blip", blip.model, blip.processor, blip.max_tokens, itm) == blip.fingerprint
    assert fingerprint_hf_model("blip", again.model, again.processor, again.max_tokens, itm) != blip.fingerprint
    assert fingerprint_hf_model("blip", blip.model, blip.processor, 20, itm) != blip.fingerprint  # padding width
