"""Hard positives, the full profile's fine-tunes, on a tiny COCO 2017 layout written here: the training set (types,
what was set aside, bad records named), 2-step runs of a random ``mini-vit-xs`` on CPU through the shared trainer
(the type-only runs on their type's rows), and the entry point as a plain process."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from common.training.recipe import Schedule
from common.tasks import DatasetError
from common.training import FromScratch
from papers.hard_positives import finetune_full as ff
from papers.hard_positives.runs import RUNS

ARCH = "mini-vit-xs"
CAPTIONS = [
    "A woman standing behind a fence looking at an elephant.",
    "A red fire hydrant on a city sidewalk.",
    "A large brown dog and a small white cat on the green grass.",
    "A young boy riding a red bike down the street.",
    "A black cat sleeping on a wooden chair.",
    "An old man holding a blue umbrella in the rain.",
    "A lamp to the left of a table.",
    "A tall man and a little girl walking on the beach.",
    "A dog and a cat on a sofa.",
    "Two adult bears play fight in the water.",
    "A small bird sitting on a thin branch.",
    "A white plate and a silver fork on a wooden table.",
]
"""Image k (COCO id k + 1) has captions k and (k + 5) mod 12; """
PARAMS = ff.FullFinetuneParams(base="unused", image_size=48, seed=0,
                               schedule=Schedule(lr=1e-3, epochs=1, batch_size=2, warmup_steps=1, weight_decay=0.1))


def _coco(root: Path, annotations: list[dict] | None = None, images: int = 12) -> tuple[Path, Path]:
    image_dir = root / "train2017"
    image_dir.mkdir(parents=True, exist_ok=True)
    records = [{"id": k + 1, "file_name": f"{k + 1:012d}.jpg"} for k in range(images)]
    for k, r in enumerate(records):
        pixels = np.random.default_rng(k).integers(0, 256, (40, 56, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(image_dir / r["file_name"], quality=95)
    if annotations is None:
        annotations = [{"id": 100 + 2 * k + j, "image_id": k + 1, "caption": CAPTIONS[(k + 5 * j) % len(CAPTIONS)]
                        + ("\n" if j else "")} for k in range(images) for j in range(2)]
    path = root / "captions_train2017.json"
    path.write_text(json.dumps({"images": records, "annotations": annotations}), encoding="utf-8")
    return path, image_dir


@pytest.fixture(scope="module")
def coco(tmp_path_factory) -> tuple[Path, Path]:
    return _coco(tmp_path_factory.mktemp("coco"))


@pytest.fixture(scope="module")
def train_set(coco, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("set")
    ff.build_set(*coco, out, seed=0)
    return out


def test_the_set_pairs_each_caption_with_a_positive_and_a_negative_of_one_type(coco, train_set, tmp_path):
    manifest = json.loads((train_set / "manifest.json").read_text())
    counts = manifest["counts"]
    rows = ff.load_rows(train_set)
    assert counts["captions"] == 24 and counts["distinct_captions"] == 12
    assert counts["rows"] == len(rows) and counts["rows"] + counts["captions_without_a_type"] == 24
    assert counts["rows_by_type"] == {t: sum(r.type == t for r in rows) for t in ff.TYPES}
    assert set(counts["rows_by_type"]) == {"replace", "swap"} and all(counts["rows_by_type"].values())
    for r in rows:
        texts = {r.caption.lower(), r.positive.lower(), r.negative.lower()}
        assert len(texts) == 3 and "\n" not in r.caption
    swaps = {r.caption: r.positive for r in rows if r.type == "swap"}
    assert swaps.get("A lamp to the left of a table.") == "A table to the right of a lamp."
    assert swaps.get("A white plate and a silver fork on a wooden table.") == (
        "A silver fork and a white plate on a wooden table.")
    assert manifest["positives"]["generator"] == "papers.hard_positives.rules"
    again = tmp_path / "again"
    ff.build_set(*coco, again, seed=0)
    assert (again / "rows.jsonl").read_bytes() == (train_set / "rows.jsonl").read_bytes()


def test_a_swap_negative_that_reads_like_the_positive_is_set_aside():
    """The only two nouns of "A dog and a cat." swapped read like the reordered phrases: neither is used."""
    positives, negatives, counts = ff.perturbations(["A dog and a cat.", "A lamp to the left of a table."])
    assert positives["swap"] == [None, "A table to the right of a lamp."] and negatives["swap"][0] is None
    assert counts["positive_reads_like_negative"] == {"replace": 0, "swap": 1}


def test_bad_records_are_named(tmp_path):
    path, images = _coco(tmp_path / "a", annotations=[{"id": 7, "image_id": 99, "caption": "A cat."}], images=1)
    with pytest.raises(DatasetError, match=r"captions_train2017.json: annotations\[0\] \(id 7\): image_id 99"):
        ff.read_coco_captions(path, images)
    path, images = _coco(tmp_path / "b", annotations=[{"id": 8, "image_id": 1, "caption": "A cat on a mat."}],
                         images=1)
    (images / "000000000001.jpg").unlink()
    with pytest.raises(DatasetError, match=r"1 captioned image\(s\) not found .* '000000000001.jpg'"):
        ff.read_coco_captions(path, images)
    (tmp_path / "rows.jsonl").write_text('{"image": "x.jpg", "caption": "c", "type": "swap", "positive": "p"}\n')
    with pytest.raises(DatasetError, match=r"rows.jsonl: line 1: no 'negative'"):
        ff.load_rows(tmp_path)
    with pytest.raises(ff.FinetuneFullError, match="finetune-full-set"):
        ff.load_rows(tmp_path / "nowhere")


def test_two_step_runs_train_on_their_types_rows(coco, train_set, tmp_path):
    rows = ff.load_rows(train_set)
    init = FromScratch(ARCH)
    for run in ("hn", "hp-hn-swap"):
        result = ff.train_full_run(run, rows, PARAMS, coco[1], tmp_path / f"{run}.safetensors", init=init, steps=2,
                                   checkpoint_every=0)
        assert np.isfinite(result.final_loss)
        record = json.loads((tmp_path / f"{run}.json").read_text())
        assert record["hard_positive_weight"] == RUNS[run].hard_positive_weight
        assert record["types"] == list(RUNS[run].types)
    swap_rows = ff.run_rows("hp-hn-swap", rows)
    assert {r.type for r in swap_rows} == {"swap"} and len(swap_rows) < len(rows)
    assert len(ff.run_rows("hn", rows)) == len(rows)
    with pytest.raises(ff.FinetuneFullError, match="no rows of types"):
        ff.run_rows("hp-hn-replace", [r for r in rows if r.type == "swap"])


def test_run_entry_works_as_a_plain_process(coco, train_set, tmp_path, monkeypatch):
    """``python -m papers.hard_positives.finetune_full run`` without torchrun: a local world, weights and sidecar."""
    import common.params
    import common.reproducible
    from dataclasses import asdict

    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.setattr(common.reproducible, "reexec_pinned", lambda: None)
    section = {"base": "unused", "image_size": 48, "seed": 0, "precision": "fp32", **asdict(PARAMS.schedule)}
    monkeypatch.setattr(common.params, "stage_params",
                        lambda stage: {"hard_positives": {"full": {"finetune": section}}})
    monkeypatch.setattr(ff, "FromZoo", lambda name: FromScratch(ARCH))
    out = tmp_path / "hp-hn.safetensors"
    assert ff.main(["run", "hp-hn", "--set", str(train_set), "--images", str(coco[1]), "--out", str(out),
                    "--steps", "2"]) == 0
    record = json.loads(out.with_suffix(".json").read_text())
    assert out.is_file() and record["run"] == "hp-hn" and record["hard_negative_weight"] == 1.0


def test_both_profiles_pipelines_run_every_run():
    """The foreach lists of ``mini-finetune`` and ``finetune-full`` are ``RUNS``, in its order."""
    import yaml

    stages = yaml.safe_load((Path(__file__).parents[3] / "papers/hard_positives/dvc.yaml").read_text())["stages"]
    assert stages["mini-finetune"]["foreach"] == list(RUNS) == stages["finetune-full"]["foreach"]
