"""The tiny NegCLIP release (a TSV and its images) that the sweep's and the job builder's tests share."""
from __future__ import annotations

import pytest
from PIL import Image

from tests.papers.aro.test_aro_finetune import write_tsv

COLOURS = ["red", "green", "blue", "yellow", "white", "black"]


@pytest.fixture
def tiny_release(tmp_path):
    for k, colour in enumerate(COLOURS):
        Image.new("RGB", (60, 50), colour).save(tmp_path / f"COCO_train2014_{k}.jpg")
    rows = [(f"a {c} square left of a {d} circle.", f"coco/train2014/COCO_train2014_{k}.jpg",
             [f"a {d} circle left of a {c} square .", f"a {c} circle left of a {d} square ."],
             [(k + 1) % 6, (k + 2) % 6, (k + 3) % 6])
            for k, (c, d) in enumerate(zip(COLOURS, COLOURS[1:] + COLOURS[:1]))]
    return write_tsv(tmp_path / "train_neg_clip.tsv", rows), tmp_path
