"""BiVLC in the rehearsal (``tests/rehearsal/papers/bivlc.py``): its stand-ins are what the full stages' readers accept
(BiVLC's snapshot with the real benchmark text, TROHN's snapshots, COCO 2017 train), the split's size is the one
params state (the released 2,933 refuse a stand-in), and the full profile's hooks keep a real run's defaults."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from common.files.tasks import DatasetError
from common.registry.fetch import fetch
from common.registry.markers import SNAPSHOT_MARKER
from common.registry.sources import get_source
from papers.bivlc import sets_full, tables
from tests.rehearsal import standins
from tests.rehearsal.papers import bivlc as rehearsal
from tests.rehearsal.standins import StandInError


@pytest.fixture(scope="module")
def prepared(tmp_path_factory, released_env, monkeypatch_module) -> tuple[Path, list[str]]:
    """The paper's stand-ins in a fresh data root (the released head files' towers from a tiny architecture, so
    that the module stays fast), the released CSVs real from the mirror."""
    monkeypatch_module.setattr(rehearsal, "released_heads", lambda *a, **k: [])
    root = tmp_path_factory.mktemp("rehearsal_data")
    keys = rehearsal.prepare(root, lambda key: fetch(key, data_root=root, progress=False))
    for key in keys:
        fetch(key, data_root=root, progress=False)
    return root, keys


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def test_the_snapshots_are_what_the_downloader_returns_offline(prepared):
    root, keys = prepared
    assert keys == ["coco/annotations_trainval2017.zip", "coco/train2017.zip"]  # DVC data deps: fetched first
    for key in ("bivlc/BiVLC", "bivlc/TROHN-Text", "bivlc/TROHN-Img"):
        folder = get_source(key).dest_path(root)
        marker = json.loads((folder / SNAPSHOT_MARKER).read_text())
        assert marker["repo_id"] == get_source(key).repo_id and marker["repo_type"] == "dataset"
        assert fetch(key, data_root=root) == folder  # no network: the marker vouches for the folder


def test_the_bivlc_standin_holds_the_real_text_of_every_category(prepared, tmp_path):
    root, _ = prepared
    data = tables.load_bivlc(root / "bivlc" / "BiVLC", tmp_path / "images", expected=None)
    assert data.counts() == {c: rehearsal.PER_CATEGORY for c in tables.CATEGORIES}
    assert len(data.files) == 2  # two shards, read in name order
    with open(fetch(rehearsal.RELEASED_RESULTS, data_root=root), newline="", encoding="utf-8") as fh:
        first = next(csv.DictReader(fh))
    assert data.items[0].captions == (first["caption"], first["negative_caption"])  # the benchmark's own text
    assert all(Path(p).is_file() for it in data.items for p in it.images)
    assert len(data.capped(1).items) == len(tables.CATEGORIES)


def test_the_split_must_hold_the_instances_params_state(prepared, tmp_path, monkeypatch):
    """The stage checks the size ``bivlc.full.n_instances`` states: the released 2,933 refuse the stand-in; the
    stand-in's own (the rehearsal's ``params``) accept it, and ``full_inputs.cap`` instances per category are
    scored."""
    root, _ = prepared
    seen = {}

    def evaluate(inputs, *args, **kwargs):
        seen["n"] = len(inputs.items)
        return {"table2": tmp_path / "t2", "summary": tmp_path / "s"}

    monkeypatch.setattr(tables, "evaluate_tables", evaluate)
    (tmp_path / "t2").write_text("")
    (tmp_path / "s").write_text("{}")  # the summary the stage prints (common.pipeline.cli.print_written)
    args = ["--profile", "full", "--data", str(root / "bivlc" / "BiVLC"), "--images", str(tmp_path / "img"),
            "--no-sugarcrepe", "--out", str(tmp_path / "out"), "--device", "cpu"]

    def stage_section(n_instances, inputs_section):
        section = {"models": {"clip": "openai/ViT-B-32"}, "skip_unavailable": False, "detector_rows": {},
                   "n_instances": n_instances}
        return lambda name, stage=None: ({"engine": {}, "bivlc": {"full": section}, "full_inputs": inputs_section},
                                         section)

    monkeypatch.setattr(tables, "own_section", stage_section(2933, {"cap": None}))
    with pytest.raises(DatasetError, match=r"14 instances in the test split, expected 2933 \(params.yaml "
                                           r"bivlc.full.n_instances\)"):
        tables.main(args)
    assert not seen
    stated = {"bivlc": {"full": {"models": {}, "detector_rows": {}}}}
    rehearsal.params(stated)
    monkeypatch.setattr(tables, "own_section", stage_section(stated["bivlc"]["full"]["n_instances"], {"cap": 1}))
    tables.main(args)
    assert seen["n"] == len(tables.CATEGORIES)


def test_the_standins_make_every_training_set(prepared, tmp_path):
    root, _ = prepared
    for dataset in sets_full.DATASETS:
        manifest = sets_full.build_set(dataset, root, tmp_path / dataset, seed=42)
        assert min(manifest["rows"].values()) >= 4  # a batch of the rehearsal's 4 in both splits
    rows = sets_full.load_rows(tmp_path / "trohn-img")
    assert manifest["rows"] == {"train": rehearsal.TROHN_TRAIN, "validation": rehearsal.TROHN_VALIDATION}
    assert all((tmp_path / "trohn-img" / r.negative_image).is_file() for r in rows)


def test_a_row_of_other_columns_is_refused(tmp_path):
    with pytest.raises(StandInError, match="columns"):
        standins.hf_dataset_snapshot("bivlc/TROHN-Text", tmp_path, {"train": [{"caption": "a dog"}]},
                                     {"image_id": standins.HF_STRING, "caption": standins.HF_STRING})
    with pytest.raises(StandInError, match="not a Hugging Face dataset"):
        standins.hf_dataset_snapshot("bivlc/hf/imirandam/CLIP_COCO", tmp_path, {}, {})


def test_the_released_heads_standin_is_read_as_released_with_its_tower(tmp_path):
    """The authors' head layout (classifier + the frozen tower under image_encoder./text_encoder.): load_head finds
    the head and a tower equal to the encoder it was written from."""
    import torch

    from papers.bivlc.detector_heads import load_head, tower_agreement
    from tests.rehearsal.models import random_openclip

    net = random_openclip("mini-vit-xs", seed=3)
    state = net.state_dict()
    for tower in ("image", "text"):
        path = tmp_path / f"best_{tower}.pt"
        torch.save({"epoch": 0, "model_state_dict": rehearsal.released_head_state(tower, state, 1),
                    "optimizer_state_dict": {}, "loss": 0.0}, path)
        head = load_head(path, tower)
        agreement = tower_agreement(head, net)
        assert head.linear.in_features == state["text_projection"].shape[1]
        assert agreement["tensors"] > 0 and agreement["differing"] == 0 and agreement["missing"] == 0


def test_the_rehearsal_keeps_one_row_per_loader_path():
    from common.paths import ROOT
    from common.pipeline.params import read_params
    from common.zoo import get_spec
    from tests.rehearsal.params import rehearsal_params

    params = rehearsal_params(read_params(ROOT / "params.yaml"), ["bivlc"])
    full = params["bivlc"]["full"]
    assert list(full["models"]) == list(rehearsal.KEPT_ROWS)
    assert list(full["detector_rows"]) == list(rehearsal.KEPT_DETECTOR_ROWS)
    assert full["finetune"]["device"] == "cpu" and full["finetune"]["gpus"] == 2
    names = rehearsal.models(params)
    assert names == ["openai/ViT-B-32", "bivlc/clip-trohn-img"]  # the build: re-trainings are the pipeline's own
    assert get_spec(names[0]).pretrained == "openai"
    assert get_spec(names[1]).checkpoint.startswith("data:") and names[1] in rehearsal.CHECKPOINT_LAYOUTS


def test_the_full_stages_hooks_default_to_a_real_run():
    """The fine-tunes' and detectors' device is a parameter (cuda unless a rehearsal says cpu); tables-full and the
    audit read the rehearsal section, off in the workspace; finetune-full-set depends on the COCO images it checks."""
    import yaml

    from common.paths import ROOT
    from common.pipeline.params import stage_params

    stages = yaml.safe_load((ROOT / "papers/bivlc/dvc.yaml").read_text())["stages"]
    for stage in ("finetune-full", "detectors-full-clip", "detectors-full-trohn-img"):
        cmd = " ".join(stages[stage]["do"]["cmd"].split())
        assert "--device ${bivlc.full.finetune.device}" in cmd and "cuda" not in cmd
    assert "data/coco/train2017" in stages["finetune-full-set"]["do"]["deps"]
    assert stage_params("papers/bivlc/dvc.yaml:detectors-full-clip@image")["bivlc"]["full"]["finetune"] == {
        "gpus": 1, "device": "cuda"}
    assert stage_params("papers/bivlc/dvc.yaml:audit") == {"profile": "mini", "full_inputs": {"cap": None}}
    assert stage_params("papers/bivlc/dvc.yaml:tables-full")["full_inputs"] == {"cap": None}
    assert stage_params("papers/bivlc/dvc.yaml:tables-full")["bivlc"]["full"]["n_instances"] == 2933
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    assert params["bivlc"]["full"]["finetune"]["device"] == "cuda"


def test_correlation_leaves_out_a_cell_the_paper_did_not_measure(tmp_path):
    """Found on ARO's rehearsed full metrics (VG-Relation NaN: no relation reaches the macro average's case threshold):
    a NaN metric or an empty cell is "not measured" (listed in ``unmeasured``), not an error; text still is one."""
    from papers.bivlc import correlation as corr

    metrics = tmp_path / "aro" / "full" / "metrics"
    metrics.mkdir(parents=True)
    (metrics / "openai__ViT-B-32.json").write_text('{"VG-Relation": NaN, "VG-Attribution": 0.6, "COCO-PRC": 0.5}')
    (metrics / "aro__negclip.json").write_text('{"VG-Relation": 0.8, "VG-Attribution": 0.6, "COCO-PRC": 0.7}')
    table2 = tmp_path / "bivlc" / "full" / "table2.csv"
    table2.parent.mkdir(parents=True)
    table2.write_text("model,sugarcrepe,I2T,T2I,group\nopenai/ViT-B-32,,1,1,1.0\naro/negclip,70.0,2,2,2.0\n")
    benchmarks = [b for b in corr.BENCHMARKS if b.paper in ("aro", "bivlc")]
    view = corr.collect(benchmarks, "full", tmp_path)
    assert view.scores["aro:VG-Relation"] == {"aro/negclip": 0.8}
    assert view.scores["aro:COCO-Order"] == {"openai/ViT-B-32": 0.5, "aro/negclip": 0.7}
    assert view.scores["bivlc:SugarCrepe"] == {"aro/negclip": 70.0}
    assert any("openai/ViT-B-32 (aro:VG-Relation)" in u for u in view.unmeasured)
    assert any("openai/ViT-B-32 (bivlc:SugarCrepe)" in u for u in view.unmeasured)
    table2.write_text("model,sugarcrepe,I2T,T2I,group\nopenai/ViT-B-32,n/a,1,1,1.0\n")
    with pytest.raises(corr.CorrelationInputError, match="not a number"):
        corr.collect(benchmarks, "full", tmp_path)


def test_the_tables_context_names_a_released_head_by_its_data_path(tmp_path, monkeypatch):
    """Found in the rehearsal's context.json: a released head was named by this machine's absolute path."""
    monkeypatch.setenv("VLC_DATA", str(tmp_path / "data"))
    head = tables.head_path("data:weights/hf/imirandam/CLIP_Detector/best_image_VIT-B-32_0.pt")
    assert head.is_absolute()
    assert tables.shown_path(head) == "data:weights/hf/imirandam/CLIP_Detector/best_image_VIT-B-32_0.pt"
    given = "build/full/bivlc/models/h.safetensors"
    assert tables.shown_path(Path(given)) == given
