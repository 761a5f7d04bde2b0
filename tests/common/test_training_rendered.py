"""Batch sources over rendered sets (common/training/rendered.py), a recipe section, serving a trained checkpoint."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from common.files.tasks import DatasetError
from common.training import rendered as ft
from common.training.trainer import TrainConfig, trainer_fields
from common.zoo import ModelUnavailable
from common.zoo.trained import served


def _tensors(n: int = 10, per_image: int = 3, length: int = 6, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    images = torch.randint(0, 256, (n, 3, 8, 8), dtype=torch.uint8, generator=g)
    captions, negatives, positives = (torch.randint(0, 1000, (n, per_image, length), generator=g) for _ in range(3))
    return images, captions, negatives, positives


@pytest.mark.parametrize("with_negatives", [True, False])
def test_draws_are_the_documented_pure_function_of_seed_and_step(with_negatives):
    """The draws SugarCrepe's mini NegCLIP runs trained with (moved into ``common/training/rendered.py`` from the
    module that is now ``papers/sugarcrepe/negclip_train.py``'s mini profile; their committed weights are unchanged):
    per epoch a permutation from default_rng([seed, 0, epoch]), the tail that does not fill a batch dropped, and per step
    one caption per image from default_rng([seed, 1, step])."""
    images, captions, negatives, _ = _tensors()
    ours = ft.CaptionBatches(images, captions, [negatives] if with_negatives else [], "x",
                             fields={"negatives": with_negatives})
    for seed in (0, 3):
        for step in range(12):  # 10 images in batches of 4: 2 steps per epoch, so six epochs
            epoch, j = divmod(step, 2)
            idx = np.random.default_rng([seed, 0, epoch]).permutation(10)[j * 4: (j + 1) * 4]
            pick = np.random.default_rng([seed, 1, step]).integers(0, 3, 4)
            for x, y in zip(ours.draws(seed, step, 4), (idx, pick)):
                assert np.array_equal(x, y)
            for rows in (slice(None), slice(0, 2), slice(2, 4)):
                batch = ours.batch(seed, step, 4, rows)
                i, p = torch.from_numpy(idx[rows]), torch.from_numpy(pick[rows])
                assert torch.equal(batch["images"], images[i].unsqueeze(1))
                texts = [captions[i, p]] + ([negatives[i, p]] if with_negatives else [])
                assert torch.equal(batch["texts"], torch.stack(texts, dim=1))
    assert ours.describe() == {"name": "x", "n_images": 10, "captions_per_image": 3, "negatives": with_negatives}
    assert ours.steps_per_epoch(4) == 2


def test_two_extra_segments_keep_the_draws_and_align_with_their_caption():
    images, captions, negatives, positives = _tensors()
    plain = ft.CaptionBatches(images, captions)
    both = ft.CaptionBatches(images, captions, [positives, negatives])
    for step in range(5):
        a, b = plain.batch(1, step, 4), both.batch(1, step, 4)
        assert a["texts"].shape == (4, 1, 6) and b["texts"].shape == (4, 3, 6)
        assert torch.equal(a["images"], b["images"]) and torch.equal(a["texts"][:, 0], b["texts"][:, 0])
        idx, pick = both.draws(1, step, 4)
        assert torch.equal(b["texts"][:, 1], positives[idx, pick])
        assert torch.equal(b["texts"][:, 2], negatives[idx, pick])
    assert both.describe() == {"name": "captions", "n_images": 10, "captions_per_image": 3, "extra_text_segments": 2}
    assert not torch.equal(plain.batch(0, 0, 4)["texts"], plain.batch(1, 0, 4)["texts"])  # the seed matters


def test_batches_refuse_mismatched_shapes_and_oversized_batches():
    images, captions, negatives, _ = _tensors()
    with pytest.raises(ValueError, match="extra text segment 1"):
        ft.CaptionBatches(images, captions, [negatives, negatives[:, :2]])
    with pytest.raises(ValueError, match="larger than the 10 training images"):
        ft.CaptionBatches(images, captions).batch(0, 0, 11)


def test_caption_tokens_and_the_refusal_name_the_image_and_caption():
    def tokenize(texts):  # one token per character code, padded to 8
        return torch.tensor([[ord(c) for c in t[:8]] + [0] * (8 - len(t[:8])) for t in texts])

    texts = [["a b", "c d"], ["e f", "g h"]]
    grid = ft.caption_tokens(tokenize, texts)
    assert grid.shape == (2, 2, 8) and torch.equal(grid[1, 0], tokenize(["e f"])[0])
    other = ft.caption_tokens(tokenize, [["x", "y"], ["e f", "z"]])
    with pytest.raises(DatasetError, match=r"set\.json: image 1: caption 0: its hard positive tokenizes like"):
        ft.refuse_same_tokens(grid, other, texts, "hard positive", "set.json")
    ft.refuse_same_tokens(grid, ft.caption_tokens(tokenize, [["x", "y"], ["z", "w"]]), texts, "negative", "set.json")
    with pytest.raises(ValueError, match="same number of texts"):
        ft.caption_tokens(tokenize, [["a"], ["b", "c"]])


def test_pixels_are_channels_first():
    images = np.arange(2 * 4 * 5 * 3, dtype=np.uint8).reshape(2, 4, 5, 3)
    out = ft.pixels(images)
    assert out.shape == (2, 3, 4, 5) and out.dtype == torch.uint8 and out[1, 2, 3, 4] == images[1, 3, 4, 2]


def test_train_config_reads_its_section():
    """``TrainConfig.from_params``: every hyper-parameter from the section (the mini profile's shape), none defaulted
    but precision and accum; a missing one is a ``ParamsError`` (a ``KeyError``) naming it."""
    section = {"base": "mini/xs-2k", "steps": 7, "batch_size": 4, "lr": "5e-4", "warmup_steps": 1,
               "weight_decay": 0.0, "seed": 3, "checkpoint_every": 5, "unrelated": 1}
    config = TrainConfig.from_params(section)
    assert (config.steps, config.batch_size, config.lr, config.seed, config.weight_decay) == (7, 4, 5e-4, 3, 0.0)
    assert (config.warmup_steps, config.checkpoint_every, config.precision, config.accum) == (1, 5, "fp32", 1)
    for key in ("lr", "warmup_steps", "checkpoint_every"):
        with pytest.raises(KeyError, match=key):
            TrainConfig.from_params({k: v for k, v in section.items() if k != key})


def test_train_config_from_epochs_and_shared_keys():
    """The full profile's shape: epochs x steps per epoch, a family's schedule before what every run shares, and what
    the caller decides (a swept lr, smoke steps) over both; the record keeps ``checkpoint_every`` at 0."""
    schedule = {"lr": 1e-4, "epochs": 3, "batch_size": 8, "warmup_steps": 2, "weight_decay": 0.1}
    shared = {"seed": 1, "precision": "bf16", "checkpoint_every": 500, "lr": 9.0}
    config = TrainConfig.from_params(schedule, shared, steps_per_epoch=10)
    assert (config.steps, config.lr, config.seed, config.precision, config.checkpoint_every) == (30, 1e-4, 1, "bf16", 500)
    assert TrainConfig.from_params(schedule, shared, steps_per_epoch=10, steps=None).steps == 30
    smoke = TrainConfig.from_params(schedule, shared, steps_per_epoch=10, steps=2, lr=3e-4, validate_every=1)
    assert (smoke.steps, smoke.lr, smoke.validate_every) == (2, 3e-4, 1)
    assert trainer_fields(config)["checkpoint_every"] == 0
    with pytest.raises(KeyError, match="neither steps nor epochs"):
        TrainConfig.from_params(schedule, shared)


def test_served_refuses_a_missing_checkpoint(tmp_path):
    class Entry:
        name, label, checkpoint = "paper/mini-run", "run", tmp_path / "nothing.safetensors"

    with pytest.raises(ModelUnavailable, match="nothing.safetensors: no weights for paper/mini-run"):
        served(Entry(), "mini-vit-xs")
