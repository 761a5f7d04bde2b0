"""The full profile's failure paths, under DVC in a rehearsal's copy (issue 32, "Failure paths on the way"): a stand-in
whose bytes changed after the checksum lock recorded them, a missing manual source, a half-extracted archive and a
checkpoint of another architecture each stop the stage that meets it with ONE ``error:`` line naming the file and
the fix (no traceback), and nothing runs on it: DVC stops, the stage's outputs are gone (DVC deletes them before it
runs a stage; the stage writes none), the stage stays "changed" in ``dvc status`` and a stage downstream cannot start.

Hard positives is the vehicle (its rehearsal prepares the copy: ``tests.rehearsal.run.prepare``), each case on its
cheapest stage: ``full-data`` fetches (verifies, extracts) SWAP's stand-in JSONs, Visual Genome's image zips and
ARO's manual image zip before any work; ``table1-full`` loads the ``data:`` checkpoint ``hard_positives/crepe-swap``
through the zoo. The manual sources a user fetches by hand before ``dvc repro`` (Flickr30k, CC-Neg, ImageNet; ARO's
and CoN-CLIP's stages) go through the command the README gives, ``python -m common fetch``. Each case breaks one
thing in the copy and restores it; nothing is patched inside the DVC subprocesses. The model stand-ins are left out
of the prepared copy (no case loads the base; the wrong-architecture checkpoint is a tiny open_clip config, written
where ``crepe-swap``'s ViT-B-32-quickgelu weights belong): the file stays seconds, not gigabytes.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from common.registry.errors import DownloadError
from common.registry.fetch import fetch
from common.registry.lock import ChecksumLock
from common.registry.markers import EXTRACT_MARKER
from common.registry.sources import get_source
from shared_files import MIRROR

HP = "papers/hard_positives/dvc.yaml"
FULL_DATA = f"{HP}:full-data"
TABLE1 = f"{HP}:table1-full"
SWAP_JSON = "hard_positives/data/visual_genome_attribution.json"
ARO_IMAGES = "aro/vgr_vga_images.zip"
VG_IMAGES = "visual_genome/images.zip"
CREPE_SWAP = "hard_positives/crepe-swap"
MANUAL = ("flickr30k/flickr30k-images", "conclip/ccneg/ccneg_images", "conclip/zeroshot/imagenet/val")
"""The manual sources the issue names (Flickr30k for ARO, CC-Neg and ImageNet for CoN-CLIP), absent from the ws."""


@dataclass
class Copy:
    root: Path
    env: dict[str, str]

    @property
    def data(self) -> Path:
        return self.root / "data"

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(list(args), cwd=self.root, env=self.env, capture_output=True, text=True, timeout=600)

    def dvc(self, *args: str) -> subprocess.CompletedProcess:
        return self.run(str(Path(sys.executable).with_name("dvc")), *args)

    def python(self, *args: str) -> subprocess.CompletedProcess:
        return self.run(sys.executable, *args)

    def changed(self, stage: str) -> bool:
        """Whether ``dvc status`` lists ``stage`` as to be run (its outputs missing or its lock absent/stale)."""
        done = self.dvc("status", stage)
        assert done.returncode == 0, done.stderr
        return f"{stage}:" in done.stdout

    def locked(self, stage: str) -> bool:
        """Whether the stage's ``dvc.lock`` records it (what DVC writes only after the stage succeeded)."""
        dvcfile, _, name = stage.partition(":")
        lock = self.root / Path(dvcfile).with_name("dvc.lock")
        return lock.is_file() and name in (yaml.safe_load(lock.read_text()) or {}).get("stages", {})


@pytest.fixture(scope="module")
def ws(tmp_path_factory) -> Copy:
    """One rehearsal copy for hard positives (stand-ins, the REPLACE files real from the mirror, COCO fetched); the
    model writers left out (no case loads the stand-in models)."""
    from tests.rehearsal import models as standin_models, run, space

    if not (MIRROR / "MANIFEST.tsv").is_file():
        pytest.skip(f"no mirror of the authors' released files at {MIRROR}")

    def no_model(folder, name, *args, **kwargs):
        return Path(folder)

    workspace = tmp_path_factory.mktemp("rehearsal_failures") / "ws"
    with pytest.MonkeyPatch.context() as mp:  # in this process only, while the copy is prepared
        mp.setattr(standin_models, "write_pretrained", no_model)
        mp.setattr(standin_models, "write_checkpoint", no_model)
        mp.setattr(space, "check_room", lambda *args, **kwargs: 0)  # nothing at real size is written
        env = run.prepare(workspace, ["hard_positives"], MIRROR, 2, log=lambda line: None)
    return Copy(workspace, env)


def stopped(done: subprocess.CompletedProcess, stage: str, *needles: str) -> str:
    """The one ``error:`` line of a stage DVC ran and that failed, checked to hold every needle (the file, the fix);
    no traceback, and DVC's own line saying it stopped."""
    assert done.returncode != 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert f"ERROR: failed to reproduce '{stage}'" in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    for needle in needles:
        assert needle in errors[0], (needle, errors[0])
    return errors[0]


def only_line(done: subprocess.CompletedProcess, stage: str) -> None:
    """The stage's whole report is its one error line (DVC's lines and log warnings aside: the downloader's notice that
    it trusts an unpinned file on first use, which comes only when no earlier test of this copy fetched that file)."""
    ours = [line for line in done.stderr.splitlines() if line.strip() and not line.startswith(("ERROR:", "WARNING"))
            and "no sha256 pinned in the registry; trusting on first use" not in line]
    assert len(ours) == 1, done.stderr


def nothing_downstream(ws: Copy, stage: str, outs: list[str]) -> None:
    """No output of the failed stage is left and DVC has not recorded it as done (the next ``dvc repro`` runs it
    again, and the stages after it wait)."""
    for out in outs:
        assert not (ws.root / out).exists(), out
    assert not ws.locked(stage)


# ------------------------------------------------------------------------------------------------------------------
# (1) a stand-in whose bytes changed after the copy's checksum lock recorded them
# ------------------------------------------------------------------------------------------------------------------
def test_a_standin_changed_after_its_checksum_was_recorded_stops_the_stage(ws):
    source = get_source(SWAP_JSON)
    path = fetch(SWAP_JSON, data_root=ws.data, mirror=False, progress=False)  # trusted on first use: recorded
    assert ChecksumLock(ws.data).get(source) is not None
    before = path.read_bytes()
    path.write_bytes(before.replace(b"the white cat", b"the whyte cat", 1))
    try:
        done = ws.dvc("repro", "-s", FULL_DATA)
        stopped(done, FULL_DATA, SWAP_JSON, str(path), "checksum mismatch", "delete the corrupt file", "fetch")
        only_line(done, FULL_DATA)
        nothing_downstream(ws, FULL_DATA, ["build/full/hard_positives"])
        assert ws.changed(FULL_DATA)  # as dvc status says it
        downstream = ws.dvc("repro", "-s", TABLE1)  # DVC refuses a stage whose input was never made
        assert downstream.returncode != 0 and "build/full/hard_positives" in downstream.stderr, downstream.stderr
        assert not (ws.root / "results/hard_positives/full").exists()
    finally:
        path.write_bytes(before)


# ------------------------------------------------------------------------------------------------------------------
# (2) a missing manual source
# ------------------------------------------------------------------------------------------------------------------
def test_a_missing_manual_source_stops_the_stage_naming_where_it_goes_and_how(ws, tmp_path):
    """ARO's image zip (manual; SWAP's images): neither the zip nor its extracted folder is there."""
    source = get_source(ARO_IMAGES)
    moved = []
    for path in (source.dest_path(ws.data), source.target_path(ws.data)):
        if path.exists():
            moved.append((path, shutil.move(path, tmp_path / path.name)))
    try:
        done = ws.dvc("repro", "-s", FULL_DATA)
        line = stopped(done, FULL_DATA, f"{ARO_IMAGES} must be downloaded by hand", str(source.dest_path(ws.data)),
                       f"`python -m common fetch {ARO_IMAGES}`")
        assert line.endswith(".") and "license:" in line
        assert "Steps:" in done.stderr and "gdown" in done.stderr  # the steps follow the one line, indented
        nothing_downstream(ws, FULL_DATA, ["build/full/hard_positives"])
    finally:
        for path, now in moved:
            shutil.move(now, path)


def test_the_manual_sources_the_issue_names_are_one_line_each_from_fetch(ws, capsys):
    """Flickr30k, CC-Neg's images, ImageNet's validation folder: what ``python -m common fetch KEY...`` (the README's
    step before ``dvc repro papers/aro`` or ``papers/conclip``) says when a person has not put them in place yet: the
    steps of each, then one error line naming each and what it needs (run here in-process, on the copy's data)."""
    from common.cli import main

    for key in MANUAL:
        assert not get_source(key).dest_path(ws.data).exists()
    assert main(["fetch", *MANUAL, "--data-root", str(ws.data), "--no-progress"]) == 1
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0] == err.strip().splitlines()[-1] and "Traceback" not in err, err
    assert errors[0].startswith(f"error: {len(MANUAL)} of {len(MANUAL)} target(s) failed, details above: ")
    for key in MANUAL:
        dest = get_source(key).dest_path(ws.data)
        assert f"{key} ({key} must be downloaded by hand (method 'manual') to {ws.data}" in errors[0], errors[0]
        assert f"{key}: ManualDownloadRequired: {key} must be downloaded by hand (method 'manual') to {dest}, then " \
               f"verified with `python -m common fetch {key}`" in err


def test_a_pipeline_whose_manual_input_is_missing_is_stopped_before_dvc_with_the_fetch(ws):
    """CC-Neg is a DVC dep of CoN-CLIP's full stages (``data/ccneg/...``): DVC alone would stop at it naming the file
    but not how to get it; ``python -m common data check`` (``make repro``, before ``dvc repro``) says both, on one
    line; the hard-positives pipeline, whose inputs the rehearsal fetched, passes."""
    from common.pipeline.data_dvc import DataDvcError, check_inputs

    assert check_inputs(["hard_positives"], ws.root).endswith("every fetched input its stages read is in data/")
    with pytest.raises(DataDvcError) as info:
        check_inputs(["conclip"], ws.root)
    message = str(info.value)
    assert "\n" not in message and message.startswith("dvc repro papers/conclip reads "), message
    for key in ("conclip/ccneg/ccneg_preprocessed.pt", "conclip/ccneg/ccneg_images"):
        dest = get_source(key).dest
        assert f"data/{dest} ({key}, manual)" in message, message  # sorted: CC-Neg's come first
    assert "fetch them first: `python -m common fetch " in message and "conclip/ccneg/ccneg_images" in message
    assert "a manual source prints the steps" in message


# ------------------------------------------------------------------------------------------------------------------
# (3) a half-extracted archive
# ------------------------------------------------------------------------------------------------------------------
def test_a_half_extracted_archive_stops_the_stage(ws, tmp_path):
    """Visual Genome's first image zip, extracted: (a) files gone with its marker in place (a data root copied in
    part), (b) its marker gone (an extraction by hand, or one that never finished)."""
    folder = fetch(VG_IMAGES, data_root=ws.data, mirror=False, progress=False)
    images = sorted((folder / "VG_100K").iterdir())
    assert len(images) > 100
    kept = tmp_path / "kept"
    kept.mkdir()
    half = images[len(images) // 2:]
    for image in half:
        image.rename(kept / image.name)
    try:
        done = ws.dvc("repro", "-s", FULL_DATA)
        stopped(done, FULL_DATA, f"{folder} is incomplete", f"{len(images) - len(half)} of the archive's",
                f"delete the folder at {folder} and run `python -m common fetch {VG_IMAGES}`")
        only_line(done, FULL_DATA)
        nothing_downstream(ws, FULL_DATA, ["build/full/hard_positives"])
    finally:
        for image in half:
            (kept / image.name).rename(folder / "VG_100K" / image.name)

    marker = folder / EXTRACT_MARKER  # the same fetch as the stage's above, in-process
    saved = marker.read_bytes()
    marker.unlink()
    try:
        with pytest.raises(DownloadError) as info:
            fetch(VG_IMAGES, data_root=ws.data, mirror=False, progress=False)
        message = str(info.value)
        assert "\n" not in message and f"{folder} exists but was not extracted by this tool (no {EXTRACT_MARKER}" \
            in message and f"remove it and run `python -m common fetch {VG_IMAGES}`" in message, message
    finally:
        marker.write_bytes(saved)


# ------------------------------------------------------------------------------------------------------------------
# (4) a checkpoint of another architecture
# ------------------------------------------------------------------------------------------------------------------
def test_a_checkpoint_of_another_architecture_stops_the_tables(ws):
    """``hard_positives/crepe-swap`` (a ``data:`` checkpoint) holding another open_clip architecture's weights, in the
    release's layout: the tables stage stops at its first scoring, the authors' GELU build
    (``hard_positives/crepe-swap-gelu``, ViT-B-32), and writes no table. First the repaired copy makes its set again
    (every case above restored what it broke)."""
    import torch

    from common.zoo import get_spec
    from tests.rehearsal.models import random_openclip

    done = ws.dvc("repro", "-s", FULL_DATA)
    assert done.returncode == 0, done.stderr[-3000:]
    params_path = ws.root / "params.yaml"
    params_text = params_path.read_text()
    params = yaml.safe_load(params_text)
    rows = params["hard_positives"]["full"]["models"]
    assert list(rows) == ["base", "crepe-swap"] and rows["crepe-swap"] == CREPE_SWAP
    params["hard_positives"]["full"]["models"] = {"crepe-swap": CREPE_SWAP, "base": rows["base"]}  # it comes first
    params_path.write_text(yaml.safe_dump(params, sort_keys=False))
    checkpoint = ws.data / get_spec(CREPE_SWAP).checkpoint.removeprefix("data:")
    checkpoint.parent.mkdir(parents=True, exist_ok=True)
    state = random_openclip("mini-vit-s", seed=1).state_dict()
    torch.save({"epoch": 1, "state_dict": {f"module.{k}": v for k, v in state.items()}}, checkpoint)
    runs = ws.root / "build/full/hard_positives_ft/models"
    runs.mkdir(parents=True, exist_ok=True)  # the fine-tunes' folder: the stage stops before it reads a run
    try:
        done = ws.dvc("repro", "-s", TABLE1)
        stopped(done, TABLE1, "Table 1 row 'crepe-swap'", str(checkpoint),
                "holds no ViT-B-32 weights, it was saved from another architecture",
                "`python -m common fetch hard_positives/crepe-swap.pt`")
        only_line(done, TABLE1)
        nothing_downstream(ws, TABLE1, ["results/hard_positives/full/table1.csv",
                                          "results/hard_positives/full/context.json",
                                          "results/hard_positives/full/predictions"])
        assert not (ws.root / "results/audit/hard_positives.csv").exists()
    finally:
        params_path.write_text(params_text)
        checkpoint.unlink()
        shutil.rmtree(runs)
