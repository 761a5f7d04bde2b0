"""The rehearsal's pieces (``tests.rehearsal``): its params, stand-ins the real readers accept, model stand-ins in
each release's layout, the refusal of stand-ins for pinned sources, and the audit's marker."""
from __future__ import annotations

import json
import math
import threading
import zipfile
from pathlib import Path

import pytest
import yaml

from common.audit.core import REHEARSAL, VERDICTS, Recomputed, VerdictCounts, audit_rows
from common.errors import WorkspaceError
from common.pipeline.inputs import full_inputs, step_budget
from common.pipeline.params import ParamsError, read_params
from common.plugins import paper_dir, paper_names
from common.registry.errors import ChecksumError
from common.registry.fetch import fetch
from common.registry.lock import ChecksumLock
from common.registry.sources import get_source
from common.reporting.published import PublishedCell
from tests.rehearsal import standins
from tests.rehearsal.papers import StandIns, has_standins, rehearsed_papers, standins as standins_of
from tests.rehearsal.params import BATCH, PROCESSES, rehearsal_params

PINNED = "hard_positives/data/vl_checklist_attributes.json"


# ------------------------------------------------------------------------------------------------------------------
# each paper's stand-ins
# ------------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("paper", paper_names())
def test_every_paper_has_stand_ins_beside_the_tests_that_satisfy_the_protocol(paper):
    """A paper's stand-ins are test code: ``tests/rehearsal/papers/<paper>.py``, never ``papers/<paper>/``."""
    assert not (paper_dir(paper) / "rehearsal.py").exists(), f"papers/{paper}/rehearsal.py: move it beside the tests"
    assert has_standins(paper), f"no tests/rehearsal/papers/{paper}.py: the rehearsal would skip {paper}"
    module = standins_of(paper)
    lacking = [m for m in dir(StandIns) if not m.startswith("_") and not hasattr(module, m)]
    assert isinstance(module, StandIns), f"tests/rehearsal/papers/{paper}.py lacks {lacking}"


def test_a_paper_without_stand_ins_is_not_rehearsed(monkeypatch):
    import tests.rehearsal.papers as registry

    monkeypatch.setattr(registry.plugins, "paper_names", lambda: ["aro", "no_such_paper"])
    assert rehearsed_papers() == ["aro"] and not has_standins("no_such_paper")


# ------------------------------------------------------------------------------------------------------------------
# params
# ------------------------------------------------------------------------------------------------------------------
def test_the_rehearsal_params_are_the_full_profile_shrunk_to_the_cpu_and_valid(tmp_path):
    from common.paths import ROOT

    real = read_params(ROOT / "params.yaml")
    assert real["full_inputs"] == {"cap": None}  # the workspace's: all of the files
    assert real["aro"]["full"]["finetune"]["max_steps"] is None  # the recipe's epochs
    params = rehearsal_params(real, ["hard_positives"], cap=3)
    assert params["profile"] == "full" and params["full_inputs"] == {"cap": 3}
    assert not full_inputs(params).comparable
    # a fine-tune trains cap rows' worth of steps (one at BATCH = 4), wherever its section is
    assert params["aro"]["full"]["finetune"]["max_steps"] == params["sugarcrepe"]["negclip_full"]["max_steps"] == 1
    assert step_budget(params["aro"]["full"]["finetune"]) == 1
    finetune = params["hard_positives"]["full"]["finetune"]
    assert (finetune["device"], finetune["precision"], finetune["gpus"], finetune["epochs"],
            finetune["batch_size"]) == ("cpu", "fp32", PROCESSES, 1, BATCH)
    assert finetune["batch_size"] % finetune["gpus"] == 0  # the trainer splits a global batch over the processes
    assert params["aro"]["full"]["finetune"]["precision"] == "fp32" and params["hard_positives"]["real_text"][
        "n_resamples"] < real["hard_positives"]["real_text"]["n_resamples"]
    assert set(params["hard_positives"]["full"]["models"]) == {"base", "crepe-swap"}  # the paper's own cut
    assert real["hard_positives"]["full"]["finetune"]["device"] == "cuda"  # the input is not changed
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    assert read_params(path)["full_inputs"]["cap"] == 3


# ------------------------------------------------------------------------------------------------------------------
# stand-ins and pins
# ------------------------------------------------------------------------------------------------------------------
def test_a_standin_cannot_satisfy_a_pinned_sha256(tmp_path):
    assert get_source(PINNED).sha256 is not None
    with pytest.raises(standins.StandInError, match="pins its sha256"):
        standins.place(PINNED, tmp_path, b"[]")
    assert not (tmp_path / get_source(PINNED).dest).exists()
    # and bytes put there by other means are refused by the downloader, whatever the data root's lock says
    dest = get_source(PINNED).dest_path(tmp_path)
    dest.parent.mkdir(parents=True)
    dest.write_text("[]")
    with pytest.raises(ChecksumError, match="registry sha256"):
        fetch(PINNED, data_root=tmp_path, mirror=False, progress=False)
    assert ChecksumLock(tmp_path).get(get_source(PINNED)) is None


def test_the_copys_registry_states_the_md5_of_each_standin_where_it_states_a_publishers(tmp_path):
    """``state_md5s``: the copy's sources.toml gets the stand-in's md5 in place of the published one, which
    ``check_md5`` then accepts there; the workspace's registry, and every entry without a stand-in, are untouched."""
    from common.paths import ROOT
    from common.registry.fetch import check_md5, md5_file
    from common.registry.sources import load_registry

    key, other = "aro/cifar/cifar-10-binary.tar.gz", "aro/cifar/cifar-100-binary.tar.gz"
    workspace, data_root = tmp_path / "ws", tmp_path / "ws" / "data"
    for name in ("common/registry/sources.toml", *(p.relative_to(ROOT).as_posix()
                                                     for p in (ROOT / "papers").glob("*/sources.toml"))):
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_bytes((ROOT / name).read_bytes())
    standin = standins.place(key, data_root, b"not the published tarball")
    with pytest.raises(ChecksumError, match=f"the registry states {get_source(key).md5}"):
        check_md5(key, standin)  # the workspace's registry: the published md5
    assert standins.state_md5s(workspace, data_root) == [key]
    copy = load_registry(workspace / "papers/aro/sources.toml")
    assert copy[key].md5 == md5_file(standin) and copy[other].md5 == get_source(other).md5
    check_md5(copy[key], standin)
    assert get_source(key).md5 != md5_file(standin)  # the workspace's own registry is not the copy's
    conclip = "papers/conclip/sources.toml"  # no stand-in of its entries here
    assert (workspace / conclip).read_bytes() == (ROOT / conclip).read_bytes()
    assert standins.state_md5s(workspace, data_root) == []  # stated once: nothing left to restate


def test_coco_standins_are_fetched_extracted_and_read_as_coco(tmp_path):
    from papers.hard_positives.finetune_rows import IMAGES
    from papers.hard_positives.finetune_sets_full import CAPTIONS, read_coco_captions

    keys = standins.coco_train2017(tmp_path, standins.coco_captions(images=3))
    for key in keys:
        fetch(key, data_root=tmp_path, mirror=False, progress=False)  # trusted on first use, in this data root
        assert ChecksumLock(tmp_path).get(get_source(key)) is not None
    pairs = read_coco_captions(tmp_path / CAPTIONS, tmp_path / IMAGES)
    assert len(pairs) == 6 and pairs[0] == ("000000000001.jpg", standins.COCO_LIKE_CAPTIONS[0])
    assert (tmp_path / IMAGES / "000000000003.jpg").read_bytes() == standins.coco_image_bytes(3)


def test_visual_genome_and_aro_image_zips_in_upstream_layout(tmp_path):
    from common.files.visual_genome import VG_IMAGE_SOURCES, resolve_vg_image, vg_image_folders, vg_image_root

    standins.visual_genome_images(tmp_path, ["data/VG_100K/1.jpg", "data/VG_100K_2/2.jpg", "VG_100K/3.jpg"])
    fetched = lambda key: fetch(key, data_root=tmp_path, mirror=False, progress=False)  # noqa: E731
    folders = vg_image_folders(fetched)
    assert resolve_vg_image(folders, "data/VG_100K_2/2.jpg", "x").is_file()
    assert (folders["VG_100K"] / "3.jpg").is_file() and set(folders) == set(VG_IMAGE_SOURCES)
    with pytest.raises(standins.StandInError, match="not \\[data/\\]<folder>/<file>"):
        standins.visual_genome_images(tmp_path, ["images/4.jpg"])

    records = [{"image_path": "7.jpg", "bbox_x": 30, "bbox_y": 2.5, "bbox_w": 20, "bbox_h": 40}]
    sizes = standins.box_sizes(records)
    assert sizes == {"7.jpg": (51, 44)}
    standins.aro_images(tmp_path, sizes)
    standins.aro_images(tmp_path, {"8.jpg": (32, 24)})  # another paper's images join the same archive
    from PIL import Image

    root = vg_image_root(fetched(standins.ARO_IMAGES))
    with Image.open(root / "7.jpg") as im:
        assert im.size == (51, 44)
    assert (root / "8.jpg").is_file()
    with pytest.raises(standins.StandInError, match="written twice with different bytes"):
        standins.aro_images(tmp_path, {"8.jpg": (40, 30)})


def test_coco2014_and_cifar_standins_keep_the_upstream_names(tmp_path):
    import tarfile

    assert standins.coco2014_file_name("val2014", 42) == "COCO_val2014_000000000042.jpg"
    with pytest.raises(standins.StandInError, match="not a COCO train2014 file name"):
        standins.coco2014_images(tmp_path, "train2014", ["COCO_val2014_000000000042.jpg"])
    tarball = standins.cifar_binary_tarball("aro/cifar/cifar-10-binary.tar.gz", tmp_path, "cifar-10", [0, 2],
                                            [standins.CIFAR10_CLASSES])
    with tarfile.open(tarball) as tf:
        assert len(tf.extractfile("cifar-10-batches-bin/test_batch.bin").read()) == 2 * 3073
        assert "cifar-10-batches-bin/data_batch_5.bin" in tf.getnames()
    with pytest.raises(standins.StandInError, match="label 4 outside the 4 names"):
        standins.cifar_binary_tarball("aro/cifar/cifar-100-binary.tar.gz", tmp_path, "cifar-100", [4],
                                      [standins.CIFAR100_COARSE, standins.CIFAR100_FINE])


def test_a_zip_member_may_not_escape_its_archive():
    with pytest.raises(standins.StandInError, match="escape"):
        standins.zip_bytes({"../x.jpg": b""})
    with zipfile.ZipFile(__import__("io").BytesIO(standins.zip_bytes({"b": b"2", "a": b"1"}))) as archive:
        assert archive.namelist() == ["a", "b"]


# ------------------------------------------------------------------------------------------------------------------
# models
# ------------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", ["state_dict", "model", "model_state_dict", "plain"])
def test_a_data_checkpoint_in_each_release_layout_loads_strictly(layout, tmp_path, monkeypatch):
    import torch

    from common.zoo.openclip import load_state_dict, random_model
    from common.zoo.specs import ModelSpec
    from tests.rehearsal import models

    spec = ModelSpec(name="test/release", arch="mini-vit-xs", family="test", label="test", checkpoint="data:weights/test/release.pt")
    monkeypatch.setattr(models, "get_spec", lambda name: spec)
    path = models.write_checkpoint(tmp_path, "test/release", layout, seed=3)
    assert path == tmp_path / "weights/test/release.pt"
    saved = torch.load(path, map_location="cpu", weights_only=True)
    if layout == "state_dict":
        assert all(k.startswith("module.") for k in saved["state_dict"])  # open_clip's trainer under DDP
    elif layout != "plain":
        assert set(saved) == {"epoch", layout}
    model = random_model("mini-vit-xs", seed=0).model
    load_state_dict(model, path, "test/release")
    expected = models.random_openclip("mini-vit-xs", seed=3).state_dict()
    assert all(torch.equal(model.state_dict()[k], v) for k, v in expected.items())


def test_a_checkpoint_standin_refuses_a_pinned_source_and_a_build_checkpoint(monkeypatch, tmp_path):
    from common.zoo.specs import ModelSpec
    from tests.rehearsal import models

    monkeypatch.setattr(models, "get_spec", lambda name: ModelSpec(
        name="x/y", arch="mini-vit-xs", family="test", label="test", checkpoint="data:weights/x.pt", source=PINNED))
    with pytest.raises(standins.StandInError, match="pins sha256"):
        models.write_checkpoint(tmp_path, "x/y")
    monkeypatch.setattr(models, "get_spec", lambda name: ModelSpec(
        name="x/y", arch="mini-vit-xs", family="test", label="test", checkpoint="build:full/x.safetensors"))
    with pytest.raises(standins.StandInError, match="not a data: file"):
        models.write_checkpoint(tmp_path, "x/y")


def test_the_base_model_loads_offline_from_a_standin_hub_cache(tmp_path, monkeypatch):
    """``openai/ViT-B-32`` (open_clip tag 'openai'): random ViT-B-32-quickgelu where open_clip's pretrained table
    sends the hub (timm/vit_base_patch32_clip_224.openai), loaded by the zoo offline as the real weights are."""
    from common.zoo import create_model
    from tests.rehearsal import models

    assert models.hub_location("ViT-B-32-quickgelu", "openai") == ("timm/vit_base_patch32_clip_224.openai",
                                                                   "open_clip_model.safetensors")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import huggingface_hub.constants as hub_constants

    monkeypatch.setattr(hub_constants, "HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    path = models.write_pretrained(tmp_path / "hf", "openai/ViT-B-32")
    assert path.parts[-5:-2] == ("hub", "models--timm--vit_base_patch32_clip_224.openai", "snapshots")
    assert (path.parents[2] / "refs" / "main").read_text() == models.REVISION
    model = create_model("openai/ViT-B-32", device="cpu")
    assert model.spec.arch == "ViT-B-32-quickgelu"
    reference = models.random_openclip("ViT-B-32-quickgelu", seed=0).state_dict()
    import torch

    loaded = model.model.state_dict()["visual.proj"]
    # the random weights, held at half-precision values as OpenAI's release is (models.openai_release_values)
    assert torch.equal(loaded, reference["visual.proj"].half().float())
    assert not torch.equal(loaded, reference["visual.proj"])


# ------------------------------------------------------------------------------------------------------------------
# audit
# ------------------------------------------------------------------------------------------------------------------
def _cell(row: str, value: float = 50.0) -> PublishedCell:
    return PublishedCell(paper="p", table="T", row=row, column="c", value=value, unit="percent", status="ok",
                         raw=str(value), note="", line=2, text=str(value))


def test_a_rehearsal_marks_its_standin_numbers_not_comparable():
    cells = [_cell("run"), _cell("released"), _cell("paper")]
    recs = [Recomputed("p", "T", "run", "c", 0.5, "fraction", "results/p/full/t.csv", "full", "default"),
            Recomputed("p", "T", "released", "c", 50.0, "percent", "unpinned/file.csv", "released"),
            Recomputed("p", "T", "paper", "c", 50.0, "percent", "claims", "paper", "claim")]
    real = audit_rows("p", cells, [], recs)
    assert {r.row: r.verdict for r in real} == {"run": "reproduced", "released": "reproduced", "paper": "reproduced"}
    assert set(VerdictCounts.of(real).counts) == set(VERDICTS)  # a real audit's metrics: no rehearsal key

    rows = audit_rows("p", cells, [], recs, rehearsal=lambda rec: rec.profile in ("full", "released"))
    by_row = {r.row: r for r in rows}
    assert by_row["run"].verdict == REHEARSAL and by_row["run"].recomputed == 50.0  # shown, in the published unit
    assert by_row["run"].difference is None and by_row["run"].tolerance is None  # never compared
    assert by_row["released"].verdict == REHEARSAL and by_row["paper"].verdict == "reproduced"
    assert VerdictCounts.of(rows).counts[REHEARSAL] == 2
    nan = Recomputed("p", "T", "run", "c", math.nan, "fraction", "x", "full")
    assert audit_rows("p", [_cell("run")], [], [nan], rehearsal=lambda rec: True)[0].recomputed is None


def test_standin_sources_in_a_rehearsal_are_runs_and_unpinned_released_files():
    from common.audit import standin

    run = Recomputed("p", "T", "r", "c", 1.0, "percent", "results/x.csv", "full")
    pinned = Recomputed("p", "T", "r", "c", 1.0, "percent", PINNED, "released")
    unpinned = Recomputed("p", "T", "r", "c", 1.0, "percent", "hard_positives/data/visual_genome_attribution.json",
                          "released")
    claim = Recomputed("p", "claims", "r", "value", 1.0, "percent", "claims", "paper", "claim")
    assert [standin(r) for r in (run, pinned, unpinned, claim)] == [True, False, True, False]


def test_a_rehearsal_audit_report_says_so(tmp_path):
    from common.audit.report import markdown, write_audit

    cells = [_cell("run")]
    recs = [Recomputed("p", "T", "run", "c", 40.0, "percent", "results/p/full/t.csv", "full", "default")]
    rows = audit_rows("p", cells, [], recs, rehearsal=lambda rec: True)
    text = markdown("p", rows, "full", info={})
    assert "**REHEARSAL**" in text and f"| {REHEARSAL} | 1 |" in text and "## Rehearsal (not comparable) (1)" in text
    assert "REHEARSAL" not in markdown("p", audit_rows("p", cells, [], recs), "full", info={})
    paths = write_audit("p", rows, tmp_path, "full", claims=[])
    assert json.loads(Path(paths["metrics"]).read_text())[REHEARSAL] == 1
    assert "rehearsal: not comparable" in Path(paths["csv"]).read_text()


def test_an_audit_stage_that_does_not_declare_the_inputs_refuses_to_run_on_stand_ins(monkeypatch):
    import common.audit as audit
    import common.pipeline.params as params

    standins = {"profile": "full", "full_inputs": {"cap": 4}}  # a capped run: a rehearsal's on stand-ins
    monkeypatch.setattr(params, "stage_params", lambda stage, **_: {"profile": "full"})
    monkeypatch.setattr(params, "read_params", lambda: standins)
    with pytest.raises(WorkspaceError, match="does not declare full_inputs"):
        audit.stage_main("hard_positives", [])
    seen = {}
    monkeypatch.setattr(audit, "main", lambda paper, argv, recompute, figures, profile, comparable: seen.update(
        profile=profile, comparable=comparable) or 0)
    monkeypatch.setattr(params, "stage_params", lambda stage, **_: standins)
    assert audit.stage_main("hard_positives", []) == 0 and seen == {"profile": "full", "comparable": False}
    whole = {"profile": "full", "full_inputs": {"cap": None}}
    monkeypatch.setattr(params, "stage_params", lambda stage, **_: whole)
    assert audit.stage_main("hard_positives", []) == 0 and seen == {"profile": "full", "comparable": True}


# ------------------------------------------------------------------------------------------------------------------
# the runner's own pieces
# ------------------------------------------------------------------------------------------------------------------
def test_the_copy_is_never_made_over_a_folder_that_is_not_a_rehearsals(tmp_path):
    from tests.rehearsal.run import RehearsalError, prepare

    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "keep.txt").write_text("mine")
    with pytest.raises(RehearsalError, match="not a rehearsal's copy"):
        prepare(tmp_path / "ws", ["hard_positives"], tmp_path, 4)
    assert (tmp_path / "ws" / "keep.txt").read_text() == "mine"


def test_a_paper_without_rehearsal_module_is_named(monkeypatch):
    from tests.rehearsal import run

    monkeypatch.setattr(run, "has_standins", lambda paper: False)
    with pytest.raises(run.RehearsalError, match="papers/aro has no tests/rehearsal/papers/aro.py"):
        run._module("aro")


def test_the_copy_env_has_its_own_roots_and_an_offline_hub(tmp_path, monkeypatch):
    from tests.rehearsal.run import rehearsal_env

    monkeypatch.setenv("VLC_DATA", "/somewhere/real")
    env = rehearsal_env(tmp_path / "ws", tmp_path / "mirror")
    assert "VLC_DATA" not in env and "VLC_BUILD" not in env and "VLC_CACHE" not in env
    assert env["HF_HUB_OFFLINE"] == "1" and env["HF_HOME"].startswith(str(tmp_path / "ws"))
    assert env["VLC_MIRROR"] == str(tmp_path / "mirror")


def test_the_stage_count_is_the_nodes_of_the_papers_dag(monkeypatch, tmp_path):
    import subprocess

    from tests.rehearsal import run

    dot = ('strict digraph  {\n"data.dvc";\n"papers/p/dvc.yaml:a";\n"papers/p/dvc.yaml:b@x";\n"papers/p";\n'
           '"data.dvc" -> "papers/p/dvc.yaml:a";\n'
           '"papers/p/dvc.yaml:a" -> "papers/p/dvc.yaml:b@x";\n"papers/p/dvc.yaml:b@x" -> "papers/p";\n}\n')
    monkeypatch.setattr(run, "dvc", lambda ws, env, *args: subprocess.CompletedProcess(args, 0, dot, ""))
    assert run.stage_count(tmp_path, {}, "p") == 3  # data.dvc's outputs are verified, not run: no stage
    assert "data.dvc" in run.dag_nodes(tmp_path, {}, "p")
    outcome = run.Outcome("p", 2, 3, 10.0, 0, "log", {"papers/p/dvc.yaml:a": 2.0, "papers/p/dvc.yaml:b@x": 8.0})
    assert outcome.line() == "papers/p: 2 of 3 stages ran, 10 s: INCOMPLETE (1 not run; " \
                             "log log)" and not outcome.complete
    assert outcome.slowest(1) == "b@x 8 s"
    shared = run.Outcome("p", 2, 3, 10.0, 0, "log", earlier=1)
    assert shared.complete and shared.line() == "papers/p: 2 of 3 stages ran (and 1 for the papers before it), 10 s: ok"
    assert not run.Outcome("p", 3, 3, 1.0, 1, "p.log").complete


def test_the_papers_a_pipeline_walks_are_its_stages_owners():
    from tests.rehearsal.run import stage_owners

    stages = ["audit/cross_paper", "papers/sugarcrepe/dvc.yaml:full-set", "papers/conclip/dvc.yaml:tables-full",
              "papers/conclip/dvc.yaml:audit", "papers/conclip"]
    assert stage_owners(stages) == ["sugarcrepe", "conclip"]
    assert stage_owners(["dvc.yaml:papers/aro", "audit/cross_paper"]) == []


def test_real_data_is_never_touched_and_never_read_by_a_rehearsal(tmp_path, monkeypatch):
    """With real data present (``VLC_DATA``, its checksum lock), a rehearsal writes its stand-ins only in its copy's
    data root, leaves the real files and lock byte for byte as they were, and its stages never see the real root."""
    import hashlib

    from common.paths import mirror_root
    from papers.hard_positives import sets_full
    from tests.rehearsal import models as standin_models, run, space

    mirror = mirror_root() or (Path(__file__).resolve().parents[3] / "shared" / "mirror")
    if not mirror.is_dir():
        pytest.skip(f"no mirror at {mirror}")
    real = tmp_path / "real-data"
    swap = sets_full.SWAP_FILES[0]
    real_swap = get_source(swap).dest_path(real)
    real_swap.parent.mkdir(parents=True)
    real_swap.write_text('[{"the": "real file"}]')
    ChecksumLock(real).record(get_source(swap), hashlib.sha256(real_swap.read_bytes()).hexdigest(),
                              real_swap.stat().st_size)
    before = {p: p.read_bytes() for p in real.rglob("*") if p.is_file()}
    monkeypatch.setenv("VLC_DATA", str(real))

    def tiny(folder, name, *args, **kwargs):  # the models' writers are tested above; here only where things go
        target = Path(folder) / "standin-models" / name.replace("/", "_")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"weights")
        return target

    monkeypatch.setattr(standin_models, "write_pretrained", tiny)
    monkeypatch.setattr(standin_models, "write_checkpoint", tiny)
    monkeypatch.setattr(space, "check_room", lambda *args, **kwargs: 0)  # nothing at real size is written here
    workspace = tmp_path / "rehearsal" / "ws"
    env = run.prepare(workspace, ["hard_positives"], mirror, 2, log=lambda line: None)
    assert {p: p.read_bytes() for p in real.rglob("*") if p.is_file()} == before
    assert "VLC_DATA" not in env and "VLC_BUILD" not in env
    copy_swap = get_source(swap).dest_path(workspace / "data")
    assert copy_swap.read_bytes() != real_swap.read_bytes()  # the stand-in, in the copy
    assert ChecksumLock(workspace / "data").get(get_source(swap)) != ChecksumLock(real).get(get_source(swap))
    real_swap.write_bytes(copy_swap.read_bytes())  # a stand-in carried into the real root is refused there
    with pytest.raises(ChecksumError):
        fetch(swap, data_root=real, mirror=None, progress=False)


def test_a_rehearsals_finetune_trains_cap_rows_worth_of_steps():
    from tests.rehearsal.params import fine_tune_steps

    assert fine_tune_steps(4, batch_size=4) == 1 and fine_tune_steps(4, batch_size=3) == 2
    assert rehearsal_params({"x": {"max_steps": None}}, [], cap=9)["x"]["max_steps"] == 3  # BATCH = 4


def test_the_rehearsal_reads_the_claims_scorecards_in_its_copy(tmp_path):
    """The step after the card: ``python -m common docs claims --line`` where the copy is (here, this workspace)."""
    import os

    from common.paths import ROOT
    from tests.rehearsal import run

    outcome = run.scorecard_lines(ROOT, dict(os.environ), ["bivlc", "conclip"], tmp_path)
    log = (tmp_path / "claims.log").read_text(encoding="utf-8")
    assert outcome.complete and outcome.log == str(tmp_path / "claims.log")
    assert log.startswith("claims bivlc: 2 headline claims;") and "\nclaims conclip: " in log
    broken = run.scorecard_lines(ROOT, dict(os.environ), ["no-such-paper"], tmp_path)
    assert not broken.complete


# ------------------------------------------------------------------------------------------------------------------
# disk room
# ------------------------------------------------------------------------------------------------------------------
def test_a_standins_size_is_known_without_building_its_weights(tmp_path, monkeypatch):
    """``space.model_bytes`` (the architecture on the meta device) is the size of the state dict a stand-in
    checkpoint holds, and the file written is that plus a little framing."""
    from common.zoo.specs import ModelSpec
    from tests.rehearsal import models, space

    state = models.random_openclip("mini-vit-xs").state_dict()
    assert space.model_bytes("mini-vit-xs") == sum(v.numel() * v.element_size() for v in state.values())
    monkeypatch.setattr(models, "get_spec", lambda name: ModelSpec(
        name="x/y", arch="mini-vit-xs", family="test", label="test", checkpoint="data:weights/x.pt"))
    written = models.write_checkpoint(tmp_path, "x/y", "plain").stat().st_size
    assert space.model_bytes("mini-vit-xs") <= written < 1.05 * space.model_bytes("mini-vit-xs") + 100_000


def test_a_rehearsal_without_room_stops_with_one_line_before_writing_a_standin(tmp_path, monkeypatch):
    from common.errors import expected_message
    from tests.rehearsal import models as standin_models, run, space

    written = []
    monkeypatch.setattr(standin_models, "write_pretrained", lambda *a, **k: written.append(a))
    monkeypatch.setattr(standin_models, "write_checkpoint", lambda *a, **k: written.append(a))
    monkeypatch.setattr(space, "free_bytes", lambda folder: int(1e7))  # under even the shrunk rehearsal's need
    workspace = tmp_path / "rehearsal" / "ws"
    with pytest.raises(space.NoRoomError) as caught:
        run.prepare(workspace, ["hard_positives"], tmp_path, 2, log=lambda line: None)
    message = expected_message(caught.value)
    assert message is not None and "\n" not in message
    from common.paths import ROOT
    from tests.rehearsal.params import rehearsal_params
    from tests.rehearsal.workspace import copy_bytes

    params = rehearsal_params(read_params(ROOT / "params.yaml"), run.rehearsed_papers(), 2)  # what the copy would get
    from tests.rehearsal.archs import arch_overrides, write_shrunk

    copy = copy_bytes()
    write_shrunk(tmp_path / "archs")
    with arch_overrides(tmp_path / "archs"):  # the stand-ins' sizes as the rehearsal writes them: shrunk
        need = space.needed(["hard_positives"], run._module("hard_positives").models(params)) + copy
    assert need < space.needed(["hard_positives"], run._module("hard_positives").models(params)) + copy
    assert f"{workspace}: 10.0 MB free on its disk; a rehearsal of hard_positives writes about {space.gb(need)} (the " \
           f"workspace copy, {space.gb(copy)}; " in message and "make rehearse PAPER=" in message
    assert written == [] and not workspace.exists(), "checked before the copy: nothing written, not even the copy"


def test_the_room_asked_for_is_the_stand_ins_plus_what_each_paper_measured():
    from tests.rehearsal import space

    vit = space.model_bytes("ViT-B-32-quickgelu")
    assert 600e6 < vit < 610e6  # 151 M parameters in fp32: the 605 MB the rehearsal's files take
    aro, new = space.MEASURED["aro"], space.UNMEASURED
    one = space.needed(["aro"], ["openai/ViT-B-32"])
    assert one == vit + aro.data + aro.kept + (aro.peak - aro.kept)  # what the pipeline keeps, then its peak above
    assert space.needed(["aro"], ["openai/ViT-B-32", "openai/ViT-B-32"]) == one  # a model listed twice, written once
    two = space.needed(["aro", "a-new-paper"], ["openai/ViT-B-32"])  # one after the other: the larger peak counts
    assert two == vit + aro.data + aro.kept + new.data + new.kept + max(aro.peak - aro.kept, new.peak - new.kept)
    assert set(space.MEASURED) >= {"aro", "bivlc", "conclip", "hard_positives", "sugarcrepe"}
    real = space.MEASURED_REAL_SIZES["aro"]  # --real-sizes: its own measurements
    assert space.needed(["aro"], ["openai/ViT-B-32"], space.MEASURED_REAL_SIZES) == vit + real.data + real.peak
    assert set(space.MEASURED_REAL_SIZES) == set(space.MEASURED)


def test_a_full_disk_while_a_standin_is_written_is_one_line_and_any_other_failure_is_not(tmp_path, monkeypatch):
    """torch reports a full disk as ``RuntimeError: basic_ios::clear: iostream error`` (CI, 2026-11-26): with less free
    than the checkpoint's size it becomes ``NoRoomError`` naming the file; with room, the error is a bug and stays."""
    from common.zoo.specs import ModelSpec
    from tests.rehearsal import models, space

    monkeypatch.setattr(models, "get_spec", lambda name: ModelSpec(
        name="x/y", arch="mini-vit-xs", family="test", label="test", checkpoint="data:weights/x.pt"))

    def full(state, target, layout):
        raise RuntimeError("basic_ios::clear: iostream error")

    monkeypatch.setattr(models, "_write", full)
    monkeypatch.setattr(models, "free_bytes", lambda folder: 1000)
    with pytest.raises(space.NoRoomError, match=r"weights/x\.pt: cannot write this stand-in checkpoint \(\d+\.\d MB\): "
                                                r"0\.0 MB free"):
        models.write_checkpoint(tmp_path, "x/y")
    monkeypatch.setattr(models, "free_bytes", lambda folder: int(1e12))
    with pytest.raises(RuntimeError, match="iostream"):
        models.write_checkpoint(tmp_path, "x/y")


def test_the_copys_size_counts_a_hard_linked_file_once(tmp_path):
    from tests.rehearsal import space

    (tmp_path / "a").write_bytes(b"x" * 100_000)
    alone = space.tree_bytes(tmp_path)
    (tmp_path / "b").hardlink_to(tmp_path / "a")  # DVC's cache beside the output (cache.type hardlink)
    assert space.tree_bytes(tmp_path) == alone >= 100_000


def test_a_pipelines_line_says_what_it_added_on_disk_and_its_peak(tmp_path, monkeypatch):
    from tests.rehearsal import space
    from tests.rehearsal.run import Outcome

    line = Outcome("aro", 8, 8, 673.0, 0, "aro.log", grew=int(1.23e9), peak=int(3.04e9)).line()
    assert line == "papers/aro: 8 of 8 stages ran, 673 s, +1.2 GB on disk (at most +3.0 GB while it ran): ok"
    assert "GB" not in Outcome("aro", 8, 8, 673.0, 0, "aro.log").line()
    values, served = [100, 90, 40, 70], threading.Event()  # at the start, then what the thread samples

    def free_bytes(folder):
        if values:
            return values.pop(0)
        served.set()
        return 80

    monkeypatch.setattr(space, "free_bytes", free_bytes)
    with space.FreeWatch(tmp_path, every=0.001) as watch:
        assert served.wait(60)
    assert watch.drop == 60  # from 100 down to 40, whatever it was at the end


def test_the_room_check_counts_the_copy_as_copy_workspace_writes_it(tmp_path):
    """``copy_bytes`` (asked before copying) is what ``copy_workspace`` then writes, byte for byte."""
    from tests.rehearsal.workspace import copy_bytes, copy_workspace

    dest = copy_workspace(tmp_path / "ws")
    written = sum(p.stat().st_size for p in dest.rglob("*")
                  if p.is_file() and p.relative_to(dest).parts[0] != ".git")
    assert written == copy_bytes() > 0
