"""data.dvc: what it tracks agrees with the registry and the mirror's bytes, no mini stage depends on it (so
``dvc repro`` never rewrites it), and a missing, corrupt or malformed input is one line naming the file."""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml

from common.paths import ROOT
from common.pipeline import data_dvc
from common.pipeline.data_dvc import DataDvcError, TrackedInput, read_data_dvc, write_data_dvc
from common.registry.mirror import mirror_path
from common.registry.sources import default_registry
from shared_files import MIRROR


def test_every_tracked_input_is_a_pinned_registry_file_under_data():
    tracked = read_data_dvc()
    by_dest = {s.dest: s for s in default_registry().values()}
    assert len(tracked) >= 30
    for item in tracked:
        source = data_dvc.source_of(item, by_dest)
        assert source.sha256 and source.size == item.size, item.path


def test_the_recorded_md5_is_that_of_the_bytes_the_registry_pins():
    if not (MIRROR / "MANIFEST.tsv").is_file():
        pytest.skip(f"no mirror at {MIRROR}")
    by_dest = {s.dest: s for s in default_registry().values()}
    for item in read_data_dvc():
        copy = mirror_path(by_dest[item.dest].url, MIRROR)
        data = copy.read_bytes()
        assert hashlib.sha256(data).hexdigest() == by_dest[item.dest].sha256, copy
        assert hashlib.md5(data).hexdigest() == item.md5, item.path


def _stage_deps(dvc_yaml: Path) -> list[str]:
    stages = yaml.safe_load(dvc_yaml.read_text())["stages"]
    deps: list[str] = []
    for stage in stages.values():
        body = stage.get("do", stage)
        deps.extend(d if isinstance(d, str) else next(iter(d)) for d in body.get("deps", []) or [])
    return deps


def test_no_stage_reads_a_tracked_input_but_the_full_profiles_so_dvc_repro_never_rewrites_data_dvc():
    """A tracked path listed as a stage's dep would put data.dvc upstream of that stage, and ``dvc repro`` rewrites
    an upstream .dvc file whose data changed. Mini stages fetch through the downloader instead; the few full-profile
    stages that read these files run after ``make repro`` has verified them against the registry."""
    tracked = [t.path for t in read_data_dvc()]
    for dvc_yaml in [ROOT / "dvc.yaml", *sorted((ROOT / "papers").glob("*/dvc.yaml"))]:
        stages = yaml.safe_load(dvc_yaml.read_text())["stages"]
        for name, stage in stages.items():
            body = stage.get("do", stage)
            for dep in body.get("deps", []) or []:
                dep = dep if isinstance(dep, str) else next(iter(dep))
                overlaps = [t for t in tracked if t == dep or t.startswith(dep.rstrip("/") + "/")]
                if overlaps:
                    assert "full" in name or "${profile}" in str(body.get("cmd", "")), (dvc_yaml, name, overlaps)


def test_written_file_reads_back_sorted_and_keeps_dvc_format(tmp_path):
    path = tmp_path / "data.dvc"
    items = [TrackedInput("data/b/x.json", "0" * 32, 3), TrackedInput("data/a.csv", "1" * 32, 5)]
    write_data_dvc(items, path)
    assert [t.path for t in read_data_dvc(path)] == ["data/a.csv", "data/b/x.json"]
    out = yaml.safe_load(path.read_text())["outs"][0]
    assert out == {"md5": "1" * 32, "size": 5, "hash": "md5", "path": "data/a.csv"}
    assert path.read_text().startswith("#")


@pytest.mark.parametrize("text, message", [
    ("outs: [", "not valid YAML"),
    ("stages: {}\n", "top-level 'outs:'"),
    ("outs:\n- path: build/x\n  md5: " + "a" * 32 + "\n  size: 1\n", "not a file under data/"),
    ("outs:\n- path: data/x\n  md5: abc.dir\n  size: 1\n", "folders are not tracked"),
    ("outs:\n- path: data/x\n  md5: " + "a" * 32 + "\n  size: -1\n", "not a byte count"),
    ("outs:\n- path: data/x\n  md5: " + "a" * 32 + "\n  size: 1\n- path: data/x\n  md5: " + "a" * 32
     + "\n  size: 1\n", "listed twice"),
])
def test_a_malformed_data_dvc_names_the_file_and_the_record(tmp_path, text, message):
    path = tmp_path / "data.dvc"
    path.write_text(text)
    with pytest.raises(DataDvcError, match=message) as info:
        read_data_dvc(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("data", [
    b"outs: [",  # not YAML
    b"outs:\n- path: data/caf\xe9\n",  # not UTF-8
    b"outs: []\nouts: []\n",  # a key twice
    b"a: " + b"[" * 100_000 + b"]" * 100_000 + b"\n",  # nested too deeply
])
def test_a_damaged_data_dvc_says_to_restore_it_from_git(tmp_path, data):
    """Nobody edits data.dvc (``make fetch`` writes it): every fault's remedy is git's copy, not params.yaml's edits."""
    path = tmp_path / "data.dvc"
    path.write_bytes(data)
    with pytest.raises(DataDvcError) as info:
        read_data_dvc(path)
    message = str(info.value)
    assert message.startswith(str(path)) and message.endswith("; restore it: `git checkout -- data.dvc`"), message


def test_a_missing_data_dvc_says_it_is_in_git(tmp_path):
    with pytest.raises(DataDvcError, match=r"data\.dvc: missing; it is in git: `git checkout -- data\.dvc`$"):
        read_data_dvc(tmp_path / "data.dvc")


def test_status_is_one_line_naming_what_is_missing_or_changed_and_the_command(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "good.txt").write_bytes(b"good")
    (data / "bad.txt").write_bytes(b"corrupt")
    items = [TrackedInput("data/good.txt", hashlib.md5(b"good").hexdigest(), 4),
             TrackedInput("data/bad.txt", hashlib.md5(b"right").hexdigest(), 5),
             TrackedInput("data/gone.txt", hashlib.md5(b"gone").hexdigest(), 4)]
    assert data_dvc.problems(items, tmp_path) == {"missing": ["data/gone.txt"], "changed": ["data/bad.txt"]}
    line = data_dvc.status_line(items, tmp_path)
    assert "\n" not in line and "make fetch" in line
    assert "1 of 3 inputs not fetched yet (e.g. data/gone.txt)" in line and "data/bad.txt" in line
    up = data_dvc.status_line(items[:1], tmp_path)
    assert up == "data.dvc: up to date (1 fetched inputs under data/)"


def test_fetch_refuses_a_data_dvc_record_that_disagrees_with_the_registry(tmp_path, monkeypatch):
    if not (MIRROR / "MANIFEST.tsv").is_file():
        pytest.skip(f"no mirror at {MIRROR}")
    first = read_data_dvc()[0]
    wrong = tmp_path / "data.dvc"
    write_data_dvc([TrackedInput(first.path, "f" * 32, first.size)], wrong)
    monkeypatch.setattr(data_dvc, "DATA_DVC", wrong)
    monkeypatch.setattr(data_dvc, "_tracked_root", lambda: tmp_path / "data")
    monkeypatch.setenv("VLC_MIRROR", str(MIRROR))
    with pytest.raises(DataDvcError, match="data.dvc and the registry disagree") as info:
        data_dvc.fetch_tracked()
    assert first.path in str(info.value)
