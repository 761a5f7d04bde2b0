"""BiVLC's full-profile training (``sets_full``, ``train full``, ``detectors full``) on tiny files in the released
layouts written here (COCO's captions_train2017.json and JPEGs, TROHN-Text/Img parquet shards with train and validation
splits, generated images as {bytes, path} structs): the sets, the batches, the validation scores against a brute-force
count, 2-step runs of a random ``mini-vit-xs`` on the CPU through the shared trainer (fine-tunes and detectors: frozen
tower, head saved where ``papers.bivlc.tables`` reads it), the jobs against what the former ``finetune_full``
handed the trainer, and the refusals."""
from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from PIL import Image
from safetensors.torch import load_file

from common.files.tasks import DatasetError
from common.paths import ROOT
from common.training import FromScratch
from common.training.checkpoint import seed_everything
from common.training.files import FileImages
from common.training.job import run_job
from common.training.model_init import normalizer
from common.training.recipes import load_recipe
from common.zoo.trained import tokenizer_for
from papers.bivlc import detectors as df, sets_full as sf, train as tf
from papers.bivlc.runs import RUNS, embed_dim_of, recipe, run_spec

ARCH = "mini-vit-xs"
SIZE = 48
COCO_IDS = [9, 25, 30, 42, 77, 81]
CAPTIONS = [(9, " a red bus\n"), (9, "a bus on a road"), (25, "a dog on grass"), (30, "two cats on a bed"),
            (42, "a man with a kite"), (77, "a bowl of fruit"), (81, "a train at a station"), (25, "a brown dog"),
            (30, "a cat asleep"), (42, "a kite in the sky")]
TROHN = [  # (split, coco id, caption, negative caption, generated colour)
    ("train", 9, "a red bus", "a blue bus", (10, 10, 240)),
    ("train", 25, "a dog on grass", "a cat on grass", (240, 10, 10)),
    ("train", 30, "two cats on a bed", "two cats under a bed", (10, 240, 10)),
    ("train", 42, "a man with a kite", "a man without a kite", (240, 240, 10)),
    ("train", 77, "a bowl of fruit", "a bowl of bread", (10, 240, 240)),
    ("validation", 81, "a train at a station", "a bus at a station", (240, 10, 240)),
    ("validation", 9, "a bus on a road", "a road on a bus", (120, 120, 120)),
    ("validation", 25, "a brown dog", "a white dog", (60, 200, 90)),
]


def jpeg(colour, size=(56, 40)) -> bytes:
    buf = io.BytesIO()
    pixels = np.zeros((size[1], size[0], 3), np.uint8) + np.array(colour, np.uint8)
    pixels[4:20, 6:30] = 255 - np.array(colour, np.uint8)
    Image.fromarray(pixels).save(buf, "JPEG" if size != (48, 48) else "PNG")
    return buf.getvalue()


def write_trohn(root: Path, name: str, with_images: bool) -> Path:
    snapshot = root / name
    (snapshot / "data").mkdir(parents=True)
    image_type = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    cols = [("image_id", pa.string()), ("caption", pa.string()), ("negative_caption", pa.string())]
    if with_images:
        cols.append(("negative_image", image_type))
    schema = pa.schema(cols)
    for split in sf.SPLITS:
        rows = [{"image_id": "%012d.jpg" % i, "caption": c, "negative_caption": n,
                 **({"negative_image": {"bytes": jpeg(g, (48, 48)), "path": None}} if with_images else {})}
                for s, i, c, n, g in TROHN if s == split]
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), snapshot / "data" / f"{split}-00000-of-00001.parquet")
    return snapshot


@pytest.fixture(scope="module")
def data_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("data")
    captions = root / sf.COCO_CAPTIONS
    captions.parent.mkdir(parents=True)
    captions.write_text(json.dumps({"annotations": [{"id": k, "image_id": i, "caption": c}
                                                    for k, (i, c) in enumerate(CAPTIONS)]}))
    images = root / sf.COCO_IMAGES
    images.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for i in COCO_IDS:
        (images / ("%012d.jpg" % i)).write_bytes(jpeg(tuple(int(x) for x in rng.integers(0, 255, 3))))
    write_trohn(root / "bivlc", "TROHN-Text", False)
    write_trohn(root / "bivlc", "TROHN-Img", True)
    return root


@pytest.fixture(scope="module")
def sets(data_root, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("sets")
    for dataset in sf.DATASETS:
        sf.build_set(dataset, data_root, out / dataset, seed=42)
    return {d: out / d for d in sf.DATASETS}


def params(run: str, batch: int) -> dict:
    """``params.yaml bivlc.full.finetune`` for a tiny run: one epoch, ``batch`` samples a step, no resume states."""
    return {"base": "unused", "image_size": SIZE, "seed": 42, "lr": 1e-3, "epochs": 1, "warmup_steps": 1,
            "weight_decay": 0.1, "checkpoint_every": 0, "batch_size": {run: batch}}


def detector_section(**changes) -> dict:
    """``params.yaml bivlc.full.detectors`` for a tiny run: a constant rate, no decay, no resume states."""
    return {"lr": 1e-2, "batch_size": 4, "seed": 42, "image_size": SIZE, "warmup_steps": 0, "weight_decay": 0.0,
            "checkpoint_every": 0, "encoders": {"clip": "unused"}, **changes}


def test_coco_split_is_datasets_train_test_split():
    train, test = sf.coco_split(10, 42)
    assert len(test) == 2 and len(train) == 8 and sorted([*train, *test]) == list(range(10))
    perm = np.random.default_rng(42).permutation(10)
    assert list(test) == list(perm[:2]) and list(train) == list(perm[2:])
    assert len(sf.coco_split(11, 0)[1]) == 3  # ceil(0.2 * 11)


def test_sets_hold_every_row_in_its_split(sets, data_root):
    coco = sf.load_rows(sets["coco"])
    assert [(r.image, r.caption) for r in coco] == [("%012d.jpg" % i, c.strip().replace("\n", " "))
                                                    for i, c in CAPTIONS]
    _, val = sf.coco_split(len(CAPTIONS), 42)
    assert [k for k, r in enumerate(coco) if r.split == "validation"] == sorted(val)
    assert coco[0].caption == "a red bus" and all(r.negative == "" == r.negative_image for r in coco)
    text = sf.load_rows(sets["trohn-text"])
    assert [(r.split, r.image, r.caption, r.negative) for r in text] == [
        (s, "%012d.jpg" % i, c, n) for s, i, c, n, _ in TROHN]
    img = sf.load_rows(sets["trohn-img"])
    for r, (_, _, _, _, colour) in zip(img, TROHN):
        path = sets["trohn-img"] / r.negative_image
        assert path.is_file() and r.negative_image.startswith("images/")
        with Image.open(path) as im:
            assert tuple(np.asarray(im.convert("RGB"))[40, 40]) == colour
    manifest = json.loads((sets["trohn-img"] / "manifest.json").read_text())
    assert manifest["rows"] == {"train": 5, "validation": 3} and len(manifest["sha256"]) == 2


def test_set_refusals_name_file_and_row(data_root, tmp_path):
    with pytest.raises(sf.BivlcFinetuneFullError, match="fetch bivlc/TROHN-Img"):
        sf.build_set("trohn-img", tmp_path, tmp_path / "out")
    snapshot = write_trohn(tmp_path, "bad", True)
    table = pq.read_table(snapshot / "data" / "train-00000-of-00001.parquet").to_pylist()
    table[1]["negative_caption"] = " "
    pq.write_table(pa.Table.from_pylist(table), snapshot / "data" / "train-00000-of-00001.parquet")
    with pytest.raises(DatasetError, match=r"train-00000-of-00001.parquet: row 1: column 'negative_caption'"):
        sf.build_set("trohn-img", data_root, tmp_path / "out2", snapshot=snapshot)
    assert not (tmp_path / "out2" / "rows.jsonl").exists()
    missing = tmp_path / "root"
    (missing / sf.COCO_CAPTIONS).parent.mkdir(parents=True)
    (missing / sf.COCO_CAPTIONS).write_text(json.dumps({"annotations": [{"image_id": 5, "caption": "x"}]}))
    with pytest.raises(DatasetError, match="000000000005.jpg: missing"):
        sf.build_set("coco", missing, tmp_path / "out3")


def test_batches_lay_out_segments_as_the_losses_expect(sets, data_root):
    tokenize = tokenizer_for(ARCH)
    rows = [r for r in sf.load_rows(sets["trohn-img"]) if r.split == "train"]
    b = tf.full_batches("trohn-img", rows, SIZE, data_root / sf.COCO_IMAGES, sets["trohn-img"], tokenize)
    batch = b.batch(42, 0, 2)
    assert batch["images"].shape == (2, 2, 3, SIZE, SIZE) and batch["texts"].shape[:2] == (2, 2)
    idx = b.draws(42, 0, 2)
    for k, i in enumerate(idx):
        assert torch.equal(batch["images"][k, 1], b.images.get(np.array([b.row_negative_image[i]]))[0])
        assert torch.equal(batch["texts"][k, 1], tokenize([rows[i].negative])[0])
    t = tf.full_batches("trohn-text", [r for r in sf.load_rows(sets["trohn-text"]) if r.split == "train"], SIZE,
                       data_root / sf.COCO_IMAGES, sets["trohn-text"], tokenize).batch(42, 0, 2)
    assert t["images"].shape == (2, 1, 3, SIZE, SIZE) and t["texts"].shape[:2] == (2, 2)
    d = df.full_batches("image", rows, SIZE, data_root / sf.COCO_IMAGES, sets["trohn-img"], None)
    batch = d.batch(42, 0, 4)
    assert batch["images"].shape == (4, 1, 3, SIZE, SIZE) and batch["labels"].tolist() == [0, 0, 1, 1]
    assert d.steps_per_epoch(4) == 2 and d.batch(42, 0, 4, slice(1, 3))["labels"].tolist() == [0, 1]
    assert len(d.draws(42, 0, 4)) == 2  # a step of 4 inputs is 2 rows, each holding its natural and synthetic input


def brute_force_in_batch(model, rows, run, data_root, set_dir, chunk, mean, std) -> float:
    """The authors' validation loop written out: per chunk, image->text and text->image argmax accuracy."""
    tokenize = tokenizer_for(ARCH)
    scores = []
    for start in range(0, len(rows), chunk):
        part = rows[start:start + chunk]
        paths = [data_root / sf.COCO_IMAGES / r.image for r in part]
        if run == "trohn-img":
            paths += [set_dir / r.negative_image for r in part]
        images = FileImages(tuple(paths), SIZE).get(np.arange(len(paths)))
        texts = [r.caption for r in part] + ([r.negative for r in part] if run != "clip-coco" else [])
        with torch.no_grad():
            img = model.encode_image(((images.float() / 255) - mean) / std, normalize=True)
            txt = model.encode_text(tokenize(texts), normalize=True)
        logits_im = (img @ txt.T).numpy()
        logits_text = logits_im.T[:len(img)]
        acc_im = np.mean([np.argmax(logits_im[i]) == i for i in range(len(img))])
        acc_text = np.mean([np.argmax(logits_text[i]) == i for i in range(len(img))])
        scores.append((acc_im + acc_text) / 2)
    return float(np.mean(scores))


@pytest.mark.parametrize("run,batch", [("clip-coco", 4), ("trohn-text", 2), ("trohn-img", 2)])
def test_a_run_trains_and_keeps_its_validated_weights(run, batch, sets, data_root, tmp_path):
    torch.manual_seed(0)
    set_dir = sets[run_spec(run).dataset]
    rows = sf.load_rows(set_dir)
    out = tmp_path / f"{run}.safetensors"
    job = tf.full_job(run, rows, params(run, batch), data_root / sf.COCO_IMAGES, set_dir, recipe=tf.recipe(run),
                      init=FromScratch(ARCH), steps=2)
    result = run_job(job, out)
    assert len(result.losses) == 2 and all(np.isfinite(result.losses))
    assert out.is_file() and result.best_weights.is_file() and len(result.validation) == 1
    # the validation score is the authors' in-batch accuracy of the final weights
    built = FromScratch(ARCH).build()
    model = built.model.eval()
    model.load_state_dict(load_file(str(result.best_weights)))
    mean, std = normalizer(built.transform)
    val = [r for r in rows if r.split == "validation"]
    expected = brute_force_in_batch(model, val, run, data_root, set_dir, batch, mean, std)
    assert result.best_score == pytest.approx(expected, abs=1e-6)


def test_a_detector_trains_only_its_head_and_full_reads_it(sets, data_root, tmp_path):
    from papers.bivlc.detector_heads import load_head, probabilities

    set_dir = sets["trohn-img"]
    rows = sf.load_rows(set_dir)
    p = detector_section(batch_size=2)
    init = FromScratch(ARCH)
    out = tmp_path / "det-clip-text.safetensors"
    result = run_job(df.full_job("clip", "text", rows, p, init, data_root / sf.COCO_IMAGES, set_dir,
                                 steps=2), out)
    seed_everything(42)  # the trainer builds the model right after seeding with the run's seed
    before = init.build().model.state_dict()
    after = load_file(str(out))
    assert set(after) == set(before) and all(torch.equal(before[k], after[k]) for k in after)  # frozen
    head_file = tmp_path / "det-clip-text.best.loss.safetensors"
    head = load_head(head_file, "text")
    assert head.linear.in_features == embed_dim_of(ARCH) and not head.tower_state
    assert not torch.equal(head.linear.weight, torch.zeros_like(head.linear.weight))
    # validation = the authors' np.mean(val_accuracy): per batch of 2 rows (their naturals, then their synthetics) the
    # share classified at 0.5 on the raw text output, averaged over the batches (3 rows: batches of 2 and 1)
    model = init.build().model.eval()
    model.load_state_dict(after)
    val = [r for r in rows if r.split == "validation"]
    tokenize = tokenizer_for(ARCH)
    batch_accuracies = []
    for chunk in (val[:2], val[2:]):
        with torch.no_grad():
            feats = model.encode_text(tokenize([r.caption for r in chunk] + [r.negative for r in chunk]))
        probs = probabilities(head, feats.numpy())
        labels = [0] * len(chunk) + [1] * len(chunk)
        batch_accuracies.append(np.mean([(q > 0.5) == bool(y) for q, y in zip(probs, labels)]))
    assert result.best_score == pytest.approx(np.mean(batch_accuracies))
    image = run_job(df.full_job("clip", "image", rows, p, init, data_root / sf.COCO_IMAGES, set_dir,
                                steps=1), tmp_path / "det-clip-image.safetensors")
    assert image.best_weights.is_file() and (tmp_path / "det-clip-image.best.loss.safetensors").is_file()


def test_a_detector_is_the_authors_training_loop(sets, data_root, tmp_path):
    """The job, run by the shared trainer, gives the head the authors' loop gives (the text head's class,
    ``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_text_classifier.py:22-33`` "x = self.text_encoder.encode_text(x)";
    its frozen encoder, ``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_text_classifier.py:84-87``
    "param.requires_grad = False"; its loop, ``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_text_classifier.py:101-128``
    "optimizer = Adam(model.parameters(), lr=0.001)"): every CLIP weight frozen, ``classifier(encode_text(x))`` on the
    raw output, ``BCELoss()(sigmoid(logits), label)``, ``Adam(params, lr)`` at a constant rate, the same batches (each
    row's natural then synthetic input). Four steps: two epochs of 2 rows a step over 5 train rows."""
    from common.training.checkpoint import load_weights
    from papers.bivlc.losses import DetectorLoss

    set_dir = sets["trohn-img"]
    rows = sf.load_rows(set_dir)
    p = detector_section(batch_size=2)
    init = FromScratch(ARCH)
    job = df.full_job("clip", "text", rows, p, init, data_root / sf.COCO_IMAGES, set_dir, steps=4)
    run_job(job, tmp_path / "det.safetensors")
    got = load_weights(tmp_path / "det.loss.safetensors")

    seed_everything(42)  # the trainer seeds, builds the model, then the loss (whose head draws its initial weights)
    model = init.build().model.eval()
    head = DetectorLoss(embed_dim_of(ARCH), "text").head
    for q in model.parameters():
        q.requires_grad_(False)
    optimizer = torch.optim.Adam(head.parameters(), lr=1e-2)
    criterion = torch.nn.BCELoss()
    for step in range(4):
        batch = job.batches.batch(42, step, 4)
        prob = torch.sigmoid(head(model.encode_text(batch["texts"][:, 0]))).squeeze(-1)
        loss = criterion(prob, batch["labels"])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert torch.allclose(got["head.weight"], head.weight.detach(), atol=1e-5, rtol=0)
    assert torch.allclose(got["head.bias"], head.bias.detach(), atol=1e-5, rtol=0)


def test_rows_are_read_through_the_typed_reader(sets, tmp_path):
    """``rows.jsonl``: COCO and TROHN-Text rows keep their empty negative (image); a bad line names the file and
    the line; a missing set names the stage that writes it."""
    from common.errors import WorkspaceError

    lines = (sets["coco"] / "rows.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["negative"] == ""  # as the set stage writes it
    for bad, says in ((dict(json.loads(lines[0]), split="test"), "'split' is 'test'"),
                      (dict(json.loads(lines[0]), negative=3), "'negative' is 3"),
                      (dict(json.loads(lines[0]), caption=""), "'caption' is ''")):
        (tmp_path / "rows.jsonl").write_text(lines[0] + "\n" + json.dumps(bad) + "\n")
        with pytest.raises(DatasetError, match=rf"rows.jsonl: line 2: {says}"):
            sf.load_rows(tmp_path)
    with pytest.raises(WorkspaceError, match=r"missing; run its finetune-full-set stage"):
        sf.load_rows(tmp_path / "nowhere")


FULL_LOSS = {"clip-coco": "common.training.losses.ClipLoss", "trohn-text": "papers.bivlc.losses.TrohnTextLoss",
             "trohn-img": "papers.bivlc.losses.TrohnImgLoss"}


@pytest.mark.parametrize("run, batch, train_rows, val_rows", [("clip-coco", 4, 8, 2), ("trohn-text", 2, 5, 3),
                                                              ("trohn-img", 2, 5, 3)])
@pytest.mark.parametrize("steps", [None, 5])
def test_each_run_is_the_job_the_former_train_full_run_built(run, batch, train_rows, val_rows, steps, sets,
                                                             data_root):
    """What ``papers.bivlc.finetune_full.train_full_run`` handed the trainer, written out: epochs x (train rows //
    batch) steps validated after every epoch (``steps``: that many, validated once at the end), the provenance (run,
    dataset, steps per epoch, epochs, then the caller's keys), the batches, the loss, the validation's chunks."""
    from common.training import TrainConfig
    from common.training.files import FileCaptionBatches
    from common.training.job import describe_loss

    section = {**params(run, batch), "epochs": 3, "checkpoint_every": 500}
    set_dir = sets[run_spec(run).dataset]
    init = FromScratch(ARCH)
    job = tf.full_job(run, sf.load_rows(set_dir), section, data_root / sf.COCO_IMAGES, set_dir,
                      recipe=tf.recipe(run), init=init, steps=steps,
                      provenance={"profile": "full", "set_manifest_sha256": "abc", "cpu_profile": "pinned"})
    per_epoch = train_rows // batch
    total = steps or 3 * per_epoch
    recipe = load_recipe(ROOT / "papers" / "bivlc" / "recipes.toml", run)
    assert job.config == TrainConfig(steps=total, batch_size=batch, lr=1e-3, warmup_steps=1, weight_decay=0.1,
                                     seed=42, precision="fp32", checkpoint_every=500,
                                     validate_every=0 if steps else per_epoch, recipe=recipe)
    # the run's own recipe: the authors' decay rule (embeddings decayed:
    # IMirandaM/BiVLC@84f0d175 src/CLIP_fine_tuning/CLIP_fine_tuning.py:68-79 "p.ndim < 2 or") and no clamp
    # (IMirandaM/BiVLC@84f0d175 src/CLIP_fine_tuning/CLIP_fine_tuning.py:136-138 "loss.backward() optimizer.step()");
    # the run's numbers that are not the authors' are its recorded deviations
    assert (recipe.name, recipe.decay_rule, recipe.clamp_logit_scale) == (run, "open_clip_names", False)
    assert job.describe()["config"]["recipe"]["deviations"] == {
        "lr": {"authors": 1e-6, "run": 1e-3}, "warmup_steps": {"authors": 50, "run": 1},
        "batch_size": {"authors": 400 if run == "clip-coco" else 200, "run": batch}}
    assert list(job.provenance.items()) == [
        ("run", run), ("dataset", run_spec(run).dataset), ("steps_per_epoch", per_epoch),
        ("epochs", total / per_epoch), ("profile", "full"), ("set_manifest_sha256", "abc"), ("cpu_profile", "pinned")]
    dataset = run_spec(run).dataset
    images = ["image", "negative_image"] if run == "trohn-img" else ["image"]
    texts = ["caption"] if run == "clip-coco" else ["caption", "negative"]
    assert list(job.batches.describe().items()) == [("name", f"bivlc-full-{dataset}"), ("rows", train_rows),
                                                    ("images", images), ("dataset", dataset), ("texts", texts)]
    assert type(job.batches) is (tf.PairedFileBatches if run == "trohn-img" else FileCaptionBatches)
    assert describe_loss(job.loss) == {"class": FULL_LOSS[run], "keywords": {}}
    assert job.init is init and job.module == "papers.bivlc.train" and job.name == f"bivlc-full-{run}"
    assert job.config.checkpoint_every == 500 and job.resume
    assert (job.validate.rows, job.validate.samples) == (val_rows, batch)


def test_the_run_commands_read_the_stage_and_the_set(sets, data_root, monkeypatch):
    """``run <run>`` and ``run det-<encoder>-<tower>``: the stage's section, the set (its manifest's sha256), the COCO
    images under ``--data``, ``--steps``; the provenance keys in the former order, the CPU profile last."""
    import argparse

    from common.files.io import sha256_file
    from common.training import FromZoo

    finetune = {**params("trohn-text", 2), "epochs": 3}
    detectors = detector_section(encoders={"clip": "zoo/clip", "trohn-img": "zoo/trohn-img"})
    stages = []
    monkeypatch.setattr("common.pipeline.params.stage_params", lambda stage, **_: stages.append(stage) or {
        "bivlc": {"full": {"finetune": finetune, "detectors": detectors}}})
    seen = {}
    monkeypatch.setattr(tf, "full_job", lambda *args, **kwargs: seen.update(args=args, kwargs=kwargs) or "job")
    monkeypatch.setattr(df, "full_job", lambda *args, **kwargs: seen.update(args=args, kwargs=kwargs) or "det")
    args = argparse.Namespace(profile="full", run="trohn-text", set=sets["trohn-text"], data=data_root, steps=3)
    monkeypatch.setenv("DVC_STAGE", "papers/bivlc/dvc.yaml:finetune-full@trohn-text")  # as `dvc repro` sets it
    assert tf.build(args, None, {"cpu_profile": "pinned"}) == "job"
    assert stages[-1] == "papers/bivlc/dvc.yaml:finetune-full@trohn-text"
    assert seen["args"][0] == "trohn-text" and seen["args"][2] == finetune
    assert seen["kwargs"]["recipe"] == tf.recipe("trohn-text")
    assert seen["args"][3:] == (data_root / sf.COCO_IMAGES, sets["trohn-text"]) and seen["kwargs"]["steps"] == 3
    assert list(seen["kwargs"]["provenance"].items()) == [
        ("profile", "full"), ("set_manifest_sha256", sha256_file(sets["trohn-text"] / "manifest.json")),
        ("cpu_profile", "pinned")]
    args = argparse.Namespace(profile="full", run="det-trohn-img-image", set=sets["trohn-img"], data=data_root,
                              steps=None)
    monkeypatch.setenv("DVC_STAGE", "papers/bivlc/dvc.yaml:detectors-full-trohn-img@image")
    assert df.build(args, None, {}) == "det"
    assert stages[-1] == "papers/bivlc/dvc.yaml:detectors-full-trohn-img@image"
    encoder, tower, _, section, init, coco, set_dir = seen["args"]
    assert (encoder, tower, init, coco, set_dir) == ("trohn-img", "image", FromZoo("zoo/trohn-img"),
                                                  data_root / sf.COCO_IMAGES, sets["trohn-img"])
    assert section == detectors and seen["kwargs"]["steps"] is None
    assert list(seen["kwargs"]["provenance"].items()) == [
        ("profile", "full"), ("encoder", "zoo/trohn-img"),
        ("set_manifest_sha256", sha256_file(sets["trohn-img"] / "manifest.json"))]


@pytest.mark.parametrize("tower, epochs", [("image", 1), ("text", 10)])
def test_each_detector_is_the_job_the_former_train_detector_built(tower, epochs, sets, data_root):
    """What ``papers.bivlc.finetune_full.train_detector`` handed the trainer: the tower's epochs over TROHN-Img's
    train rows (two inputs per row), no warmup, no weight decay, validated after every epoch with the head the
    trainer optimises, provenance (tower, steps per epoch, epochs, then the caller's keys), no resume."""
    from common.training import TrainConfig
    from papers.bivlc.losses import DetectorLoss

    set_dir = sets["trohn-img"]
    p = detector_section()
    job = df.full_job("clip", tower, sf.load_rows(set_dir), p, FromScratch(ARCH),
                      data_root / sf.COCO_IMAGES, set_dir,
                      provenance={"profile": "full", "encoder": "unused", "set_manifest_sha256": "abc"})
    per_epoch = 5 // 4  # 4 rows (8 inputs) a step, as the authors' DataLoader(batch_size=400) of rows
    assert job.config == TrainConfig(steps=epochs * per_epoch, batch_size=8, lr=1e-2, warmup_steps=0,
                                     weight_decay=0.0, seed=42, validate_every=per_epoch,
                                     recipe=recipe("detectors"))
    assert list(job.provenance.items()) == [("tower", tower), ("steps_per_epoch", per_epoch), ("epochs", float(epochs)),
                                            ("profile", "full"), ("encoder", "unused"), ("set_manifest_sha256", "abc")]
    assert job.batches.describe() == {"name": f"bivlc-full-{tower}-detector", "key": f"{tower}s", "rows": 5}
    loss = job.loss(world=None)
    assert type(loss) is DetectorLoss and loss.describe() == {"name": "DetectorLoss", "tower": tower, "embed_dim": 64,
                                                              "features": "raw"}
    assert job.validate.held.loss is loss and job.validate.rows == 4 and len(job.validate.batches.natural) == 3
    assert not job.resume and job.config.checkpoint_every == 0 and job.name == f"bivlc-full-det-clip-{tower}"


def test_run_names_and_params():
    assert df.parse_detector("det-trohn-img-image", {"clip": "a", "trohn-img": "b"}) == ("trohn-img", "image")
    with pytest.raises(sf.BivlcFinetuneFullError, match="det-clip-text"):
        df.parse_detector("det-clip-audio", {"clip": "a"})
    with pytest.raises(KeyError, match="unknown BiVLC run 'negclip'.*clip-coco"):
        run_spec("negclip")
    section = {"batch_size": {"clip-coco": 400, "trohn-text": 200, "trohn-img": 200}}
    assert [tf.run_batch_size(section, run) for run in ("clip-coco", "trohn-img")] == [400, 200]
    assert tf.run_batch_size({"batch_size": 64}, "trohn-img") == 64


def test_zoo_entries_name_the_released_and_rerun_models():
    from common.zoo import get_spec

    for name, file in (("bivlc/clip-coco", "best_CLIP_COCO_9.pt"), ("bivlc/clip-trohn-text",
                                                                    "best_CLIP_TROHN-Text_9.pt"),
                       ("bivlc/clip-trohn-img", "best_CLIP_TROHN-Img_9.pt")):
        spec = get_spec(name)
        assert spec.arch == "ViT-B-32-quickgelu" and spec.checkpoint.endswith(file)
    for run in RUNS:
        spec = get_spec(f"bivlc/full-{run}")
        assert spec.checkpoint == f"build:full/bivlc/models/{run}.best.safetensors"


@pytest.mark.parametrize("augmentation, crop", [("center_crop", None), ("random_resized_crop", (0.9, 1.0))])
def test_a_run_s_training_images_crop_as_its_recipe_says(augmentation, crop, sets, data_root):
    """The training batches take the recipe's crop (``Recipe.train_crop_scale``), as the other papers' do; BiVLC's
    own recipes name the centre crop, so their runs are unchanged."""
    from dataclasses import replace

    recipe = tf.recipe("trohn-img")
    assert recipe.augmentation == "center_crop" and recipe.train_crop_scale is None
    job = tf.full_job("trohn-img", sf.load_rows(sets["trohn-img"]), params("trohn-img", 2),
                      data_root / sf.COCO_IMAGES, sets["trohn-img"],
                      recipe=replace(recipe, augmentation=augmentation, crop_scale=crop), init=FromScratch(ARCH),
                      steps=1)
    assert job.batches.images.crop_scale == crop


def test_a_detector_refuses_a_recipe_that_crops(sets, data_root, monkeypatch):
    """The detectors' batches always take the centre crop (the authors' preprocess): a recipe asking for another
    augmentation is one line, not a record that says what the images did not get."""
    from dataclasses import replace

    monkeypatch.setattr(df, "recipe", lambda name: replace(recipe(name), augmentation="random_resized_crop",
                                                         crop_scale=(0.9, 1.0)))
    p = detector_section()
    with pytest.raises(sf.BivlcFinetuneFullError, match="random_resized_crop") as info:
        df.full_job("clip", "image", sf.load_rows(sets["trohn-img"]), p, FromScratch(ARCH),
                    data_root / sf.COCO_IMAGES, sets["trohn-img"])
    assert "\n" not in str(info.value)
