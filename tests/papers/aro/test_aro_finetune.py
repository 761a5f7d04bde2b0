"""NegCLIP / CLIP-FT data: the batch source's layout and determinism, neighbours, the TSV path, the mini set."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from common.files.tasks import DatasetError
from papers.aro.batches import FinetuneBatches, PairTable, TokenCache
from papers.aro.finetune_rows_mini import AroFinetuneError, FinetuneSplit
from papers.aro.finetune_sets_mini import FinetuneSetConfig, build_finetune_set, negatives_for
from papers.aro.images import ArrayImages
from papers.aro.negclip_tsv_full import released_rows, tsv_table
from papers.aro.neighbours_mini import nearest_images
from papers.aro.train import mini_table
from papers.aro.validation import recall_at_1


class Vocab:
    """A reversible fake tokenizer: every distinct text gets an id, written in every position of its row."""

    def __init__(self):
        self.ids: dict[str, int] = {}

    def __call__(self, texts):
        return torch.tensor([[self.ids.setdefault(t, len(self.ids) + 1)] * 4 for t in texts])

    def text(self, row: torch.Tensor) -> str:
        inverse = {v: k for k, v in self.ids.items()}
        return inverse[int(row[0])]


def toy_table(n_units: int = 12, k: int = 3) -> tuple[PairTable, ArrayImages]:
    """Unit u = image u with u % 3 + 1 captions; caption text names its row; image pixels equal the image index."""
    rng = np.random.default_rng(0)
    row_image, captions, negatives, offsets = [], [], [], [0]
    for u in range(n_units):
        for c in range(u % 3 + 1):
            r = len(captions)
            row_image.append(u)
            captions.append(f"cap {r}")
            negatives.append(tuple(f"neg {r} {j}" for j in range(r % 2 + 1)))
        offsets.append(len(captions))
    hard = np.array([rng.choice([v for v in range(n_units) if v != u], k, replace=False) for u in range(n_units)])
    pixels = torch.arange(n_units, dtype=torch.uint8).view(-1, 1, 1, 1).expand(-1, 3, 2, 2).contiguous()
    table = PairTable(np.array(row_image), tuple(captions), tuple(negatives), np.array(offsets), hard)
    return table, ArrayImages(pixels)


def test_negclip_batch_layout_and_determinism():
    table, images = toy_table()
    vocab = Vocab()
    source = FinetuneBatches(table, images, TokenCache(vocab), hard=True)
    batch = source.batch(seed=3, step=5, size=4)
    again = FinetuneBatches(table, images, TokenCache(vocab), hard=True).batch(seed=3, step=5, size=4)
    assert batch["images"].shape == (4, 2, 3, 2, 2) and batch["texts"].shape == (4, 4, 4)
    assert all(torch.equal(batch[k], again[k]) for k in batch)
    for i in range(4):
        unit, hard_unit = int(batch["images"][i, 0, 0, 0, 0]), int(batch["images"][i, 1, 0, 0, 0])
        cap, hard_cap, neg, hard_neg = (vocab.text(batch["texts"][i, s]) for s in range(4))
        row, hard_row = int(cap.split()[1]), int(hard_cap.split()[1])
        assert table.row_image[row] == unit and table.row_image[hard_row] == hard_unit  # captions of their images
        assert hard_unit in table.hard_units[unit]  # the hard image is one of the image's neighbours
        assert neg in table.negatives[row] and hard_neg in table.negatives[hard_row]
    rows = source.batch(seed=3, step=5, size=4, rows=slice(1, 3))  # a DDP rank's share is a slice of the batch
    assert all(torch.equal(rows[k], batch[k][1:3]) for k in batch)
    assert not torch.equal(source.batch(seed=4, step=5, size=4)["texts"], batch["texts"])


def test_clip_ft_sees_negclip_captions_and_epochs_are_permutations():
    table, images = toy_table()
    vocab = Vocab()
    neg = FinetuneBatches(table, images, TokenCache(vocab), hard=True)
    ft = FinetuneBatches(table, images, TokenCache(vocab), hard=False)
    seen = []
    for step in range(3):  # 12 units, batch 4: one epoch
        a, b = neg.batch(0, step, 4), ft.batch(0, step, 4)
        assert b["images"].shape == (4, 1, 3, 2, 2) and b["texts"].shape == (4, 1, 4)
        assert torch.equal(b["texts"][:, 0], a["texts"][:, 0]) and torch.equal(b["images"][:, 0], a["images"][:, 0])
        seen += [int(x) for x in a["images"][:, 0, 0, 0, 0]]
    assert sorted(seen) == list(range(12))
    with pytest.raises(ValueError, match="larger than"):
        neg.batch(0, 0, 13)


def test_nearest_images_exclude_self_and_ineligible():
    features = torch.nn.functional.normalize(torch.tensor(
        [[1.0, 0.0], [1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.95, 0.05]]), dim=1)
    out = nearest_images(features, 2, chunk=2)
    assert out.shape == (5, 2)
    assert all(i not in out[i] for i in range(5))
    assert list(out[0]) == [1, 4] and list(out[1]) == [0, 4]  # the exact duplicate first, never the image itself
    eligible = np.array([True, False, True, True, True])
    out = nearest_images(features, 2, eligible)
    assert 1 not in out and list(out[0]) == [4, 2]
    with pytest.raises(AroFinetuneError):
        nearest_images(features, 4, eligible)


def test_mini_table_drops_captions_without_negatives():
    images = np.zeros((3, 2, 2, 3), dtype=np.uint8)
    captions = [["a", "b"], ["c", "d"], ["e", "f"]]
    negatives = [[[{"text": "a'", "kind": "NN"}], []], [[], []], [[{"text": "e'", "kind": "ADJ"}],
                                                                   [{"text": "f'", "kind": "ADJ"}]]]
    split = FinetuneSplit(images, captions, negatives)
    table = mini_table(split, np.array([[2], [0], [0]]))
    assert table.captions == ("a", "e", "f") and list(table.row_image) == [0, 2, 2]
    assert list(table.unit_offsets) == [0, 1, 3] and table.hard_units.tolist() == [[1], [0]]
    with pytest.raises(AroFinetuneError, match="neighbour"):
        mini_table(split, np.array([[1], [0], [0]]))  # image 1 has no usable caption


def write_tsv(path: Path, rows: list[tuple[str, str, list[str], list[int]]]) -> Path:
    lines = ["\ttitle\tfilepath\tneg_caption\tneg_image"]
    lines += [f"{i}\t{t}\t{f}\t{n!r}\t{m!r}" for i, (t, f, n, m) in enumerate(rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_tsv_table_reads_released_layout(tmp_path):
    for k, colour in enumerate(["red", "green"]):
        Image.new("RGB", (40, 30), colour).save(tmp_path / f"COCO_train2014_{k}.jpg")
    tsv = write_tsv(tmp_path / "train.tsv", [
        ("a dog on a mat.", "coco/train2014/COCO_train2014_0.jpg", ["a mat on a dog ."], [2, 1]),
        ("a red thing.", "coco/train2014/COCO_train2014_0.jpg", ["a thing red ."], [2, 0]),
        ("a cat by a tree.", "coco/train2014/COCO_train2014_1.jpg", ["a tree by a cat .", "a cat by a tree ,"], [0, 1]),
    ])
    table, images = tsv_table(tsv, tmp_path, image_size=16)
    assert table.n_units == 3 and list(table.row_image) == [0, 0, 1]
    assert table.hard_units.tolist() == [[2, 1], [2, 0], [0, 1]]
    pixels = images.get(np.array([1, 0]))
    assert pixels.shape == (2, 3, 16, 16) and pixels.dtype == torch.uint8
    assert pixels[0, 1].float().mean() > 100 and pixels[1, 0].float().mean() > 200  # green, then red
    bad = write_tsv(tmp_path / "bad.tsv", [("x", "f.jpg", ["y"], [5])])
    with pytest.raises(DatasetError, match="bad.tsv: row 1: neg_image names row 5, which the file lacks"):
        tsv_table(bad, tmp_path, 16)
    empty = write_tsv(tmp_path / "empty.tsv", [("x", "f.jpg", [], [0])])
    with pytest.raises(DatasetError, match="empty.tsv: row 1: no negative"):
        released_rows(empty)
    assert released_rows(tsv)[2].neighbours == (0, 1)  # neg_image, read by common's reader


def test_recall_at_1_matches_brute_force_with_ties_wrong():
    rng = np.random.default_rng(1)
    images = torch.nn.functional.normalize(torch.from_numpy(rng.normal(size=(6, 4))), dim=1)
    texts = torch.nn.functional.normalize(torch.from_numpy(rng.normal(size=(12, 4))), dim=1)
    texts[3] = images[4]  # caption 3 (image 1) ties nothing but wins image 4's row: a wrong hit for image 4
    owner = np.repeat(np.arange(6), 2)
    got = recall_at_1(images, texts, owner)
    s = (images @ texts.T).numpy()
    i2t = np.mean([owner[np.argmax(s[i])] == i for i in range(6)])
    t2i = np.mean([np.argmax(s[:, j]) == owner[j] for j in range(12)])
    assert got["i2t_recall_at_1"] == pytest.approx(i2t) and got["t2i_recall_at_1"] == pytest.approx(t2i)
    tied = recall_at_1(torch.ones(2, 1), torch.ones(2, 1), np.array([0, 1]))
    assert tied["mean_recall_at_1"] == 0.0


def fake_negatives(captions, seed):
    from papers.aro.negatives import NegativeCaption

    return [[] if len(c.split()) < 4 else [NegativeCaption(" ".join(reversed(c.split())), "NN")] for c in captions]


def test_finetune_set_layout(tmp_path):
    config = FinetuneSetConfig(train_images=12, val_images=5, captions_per_image=5, image_size=48, seed=0)
    manifest = build_finetune_set(config, tmp_path, generate=fake_negatives)
    train, val = FinetuneSplit.load(tmp_path, "train"), FinetuneSplit.load(tmp_path, "val")
    assert train.images.shape == (12, 48, 48, 3) and train.images.dtype == np.uint8 and val.images.shape[0] == 5
    assert all(len(c) == 5 for c in train.captions + val.captions) and val.negatives is None
    assert not np.array_equal(train.images[:5], val.images)  # independent streams
    flat = [n for image in train.negatives for n in image]
    assert sum(1 for n in flat if n) == manifest["counts"]["train"]["captions_with_negatives"]
    assert any(not n for n in flat)  # short captions got none, and keep an empty list
    again = build_finetune_set(config, tmp_path / "again", generate=fake_negatives)
    assert again["sha256"] == manifest["sha256"]
    assert json.loads((tmp_path / "manifest.json").read_text())["config"]["train_images"] == 12
    with pytest.raises(DatasetError, match="returned"):
        negatives_for([["a b c d"]], 0, lambda caps, seed: [])
