"""Behaviour of the download registry (the package common/registry/) and of the registry file itself.

No network: sources are served from a fake mirror or a local http.server the tests build in tmp_path.
The last tests read the real mirror at <repo root>/../shared/mirror and skip when it is absent.
"""
from __future__ import annotations

import argparse
import csv
import functools
import hashlib
import http.server
import json
import logging
import shutil
import threading
import zipfile
from pathlib import Path, PurePosixPath
from typing import Iterator

import pytest

from common.errors import SettingError, UnknownName
from common.registry import cli as registry_cli, fetch as fetching, sources as registry_sources
from common.registry.errors import (
    ChecksumError, DownloadError, IncompleteExtractionError, ManualDownloadRequired, RegistryError, UnsafeArchiveError)
from common.registry.fetch import fetch, fetch_group
from common.registry.markers import EXTRACT_MARKER, LOCK_NAME
from common.registry.mirror import mirror_path
from common.registry.sources import Source, default_registry, get_source, load_registry, sources_in_group

REPO_ROOT = Path(__file__).resolve().parents[1]
from shared_files import MIRROR as SHARED_MIRROR  # noqa: E402

MANIFEST = SHARED_MIRROR / "MANIFEST.tsv"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Never pick up the developer's data root or mirror."""
    monkeypatch.delenv("VLC_MIRROR", raising=False)
    monkeypatch.delenv("VLC_DATA", raising=False)


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail loudly if anything tries the network."""

    def refuse(url: str, *args: object, **kwargs: object) -> None:
        raise AssertionError(f"unexpected network access to {url}")

    monkeypatch.setattr(fetching, "http_download", refuse)


def leftovers(folder: Path) -> list[str]:
    """Temporary files/folders the downloader might have left behind."""
    if not folder.exists():
        return []
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".") and p.name != LOCK_NAME)


URL = "https://raw.githubusercontent.com/owner/repo/0123abc/data/file.json"
PAYLOAD = b'{"hello": "world"}\n'


def put_in_mirror(mirror: Path, url: str, data: bytes) -> Path:
    path = mirror / url.split("://", 1)[1]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def http_source(url: str = URL, data: bytes | None = PAYLOAD, **kw: object) -> Source:
    fields: dict = {"key": "test/file.json", "group": "test", "method": "http", "dest": "test/file.json",
                    "license": "MIT", "url": url}
    if data is not None:
        fields["sha256"] = sha(data)
        fields["size"] = len(data)
    fields.update(kw)
    return Source(**fields)


# ------------------------------------------------------------------------------------------------------------
# Mirror
# ------------------------------------------------------------------------------------------------------------
def test_mirror_path_is_url_without_scheme(tmp_path: Path) -> None:
    assert mirror_path(URL, tmp_path) == tmp_path / "raw.githubusercontent.com/owner/repo/0123abc/data/file.json"
    assert mirror_path("http://images.cocodataset.org/zips/val2017.zip", tmp_path) == (
        tmp_path / "images.cocodataset.org" / "zips" / "val2017.zip"
    )


@pytest.mark.parametrize("bad", [
    "https://example.org/a/../../etc/passwd",
    "https://example.org/a/%2e%2e/b",
    "https://example.org/a/file.json?x=../../y",
    "https://example.org/a/file.json#frag",
    "https://example.org/a//b",
    "ftp://example.org/a",
    "https://user@example.org/a",
    "https://example.org/",
])
def test_mirror_path_refuses_escaping_urls(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError):
        mirror_path(bad, tmp_path)


def test_fetch_from_fake_mirror_lands_identical_bytes(tmp_path: Path, no_network: None) -> None:
    mirror, data_root = tmp_path / "mirror", tmp_path / "data"
    put_in_mirror(mirror, URL, PAYLOAD)
    out = fetch(http_source(), data_root=data_root, mirror=mirror, progress=False)
    assert out == data_root / "test" / "file.json"
    assert out.read_bytes() == PAYLOAD
    assert leftovers(out.parent) == []
    assert not (data_root / LOCK_NAME).exists(), "pinned sources need no trust-on-first-use record"


def test_mirror_defaults_to_vlc_mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_network: None) -> None:
    mirror = tmp_path / "mirror"
    put_in_mirror(mirror, URL, PAYLOAD)
    monkeypatch.setenv("VLC_MIRROR", str(mirror))
    monkeypatch.setenv("VLC_DATA", str(tmp_path / "data"))
    assert fetch(http_source(), progress=False).read_bytes() == PAYLOAD


def test_checksum_mismatch_from_mirror_places_nothing(tmp_path: Path, no_network: None) -> None:
    mirror, data_root = tmp_path / "mirror", tmp_path / "data"
    mirrored = put_in_mirror(mirror, URL, b"tampered bytes\n")
    source = http_source()
    with pytest.raises(ChecksumError) as info:
        fetch(source, data_root=data_root, mirror=mirror, progress=False)
    message = str(info.value)
    assert source.key in message
    assert str(mirrored) in message
    assert source.sha256 in message and sha(b"tampered bytes\n") in message
    dest = data_root / "test" / "file.json"
    assert not dest.exists()
    assert leftovers(dest.parent) == []


def test_size_mismatch_is_refused(tmp_path: Path, no_network: None) -> None:
    mirror = tmp_path / "mirror"
    put_in_mirror(mirror, URL, PAYLOAD)
    source = http_source(data=None, size=len(PAYLOAD) + 1)
    with pytest.raises(ChecksumError, match="size mismatch"):
        fetch(source, data_root=tmp_path / "data", mirror=mirror, progress=False)
    assert not (tmp_path / "data" / "test" / "file.json").exists()


# ------------------------------------------------------------------------------------------------------------
# HTTP
# ------------------------------------------------------------------------------------------------------------
class _Handler(http.server.SimpleHTTPRequestHandler):
    user_agents: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        type(self).user_agents.append(self.headers.get("User-Agent", ""))
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - silence the test output
        pass


@pytest.fixture
def http_root(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A local HTTP server on 127.0.0.1 serving a tmp folder; yields (base URL, folder)."""
    served = tmp_path / "served"
    served.mkdir()
    _Handler.user_agents = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Handler, directory=str(served)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", served
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_http_download_verifies_and_places(tmp_path: Path, http_root: tuple[str, Path]) -> None:
    base, served = http_root
    data = bytes(range(256)) * 5000  # > 1 MiB chunk, to exercise streaming
    (served / "blob.bin").write_bytes(data)
    source = http_source(url=f"{base}/blob.bin", data=data, dest="http/blob.bin", key="http/blob.bin")
    out = fetch(source, data_root=tmp_path / "data", mirror=False, progress=True)
    assert out.read_bytes() == data
    assert leftovers(out.parent) == []
    assert _Handler.user_agents and _Handler.user_agents[0].startswith("vlc-workspace/")


def test_http_checksum_mismatch_names_url(tmp_path: Path, http_root: tuple[str, Path]) -> None:
    base, served = http_root
    (served / "blob.bin").write_bytes(b"not what the registry pinned")
    source = http_source(url=f"{base}/blob.bin", dest="http/blob.bin")
    with pytest.raises(ChecksumError) as info:
        fetch(source, data_root=tmp_path / "data", mirror=False, progress=False)
    assert f"{base}/blob.bin" in str(info.value)
    assert not (tmp_path / "data" / "http" / "blob.bin").exists()
    assert leftovers(tmp_path / "data" / "http") == []


def test_http_404_raises_download_error_naming_url_and_mirror(tmp_path: Path, http_root: tuple[str, Path]) -> None:
    base, _ = http_root
    url = f"{base}/missing.json"
    mirror = tmp_path / "empty-mirror"
    mirror.mkdir()
    source = http_source(url=url)
    with pytest.raises(DownloadError) as info:
        fetch(source, data_root=tmp_path / "data", mirror=mirror, progress=False)
    message = str(info.value)
    assert not isinstance(info.value, ChecksumError)
    assert url in message and "404" in message and source.key in message
    assert str(mirror_path(url, mirror)) in message, "the mirror path tried must be named"
    assert not (tmp_path / "data" / "test" / "file.json").exists()
    assert leftovers(tmp_path / "data" / "test") == []


def test_mirror_is_preferred_over_http(tmp_path: Path, http_root: tuple[str, Path]) -> None:
    base, served = http_root
    url = f"{base}/file.json"
    (served / "file.json").write_bytes(PAYLOAD)
    mirror = tmp_path / "mirror"
    put_in_mirror(mirror, url, PAYLOAD)
    fetch(http_source(url=url), data_root=tmp_path / "data", mirror=mirror, progress=False)
    assert _Handler.user_agents == [], "the server must not be asked when the mirror has the file"


# ------------------------------------------------------------------------------------------------------------
# Already present, force
# ------------------------------------------------------------------------------------------------------------
def test_present_verified_file_is_not_fetched_again(tmp_path: Path, no_network: None) -> None:
    mirror, data_root = tmp_path / "mirror", tmp_path / "data"
    put_in_mirror(mirror, URL, PAYLOAD)
    first = fetch(http_source(), data_root=data_root, mirror=mirror, progress=False)
    mtime = first.stat().st_mtime_ns
    (mirror / URL.split("://", 1)[1]).unlink()  # mirror gone; network refused by the fixture
    second = fetch(http_source(), data_root=data_root, mirror=mirror, progress=False)
    assert second == first and second.read_bytes() == PAYLOAD
    assert second.stat().st_mtime_ns == mtime


def test_corrupt_present_file_is_refused_then_repaired_with_force(tmp_path: Path, no_network: None) -> None:
    mirror, data_root = tmp_path / "mirror", tmp_path / "data"
    put_in_mirror(mirror, URL, PAYLOAD)
    dest = data_root / "test" / "file.json"
    dest.parent.mkdir(parents=True)
    dest.write_bytes(b"corrupt")
    with pytest.raises(ChecksumError, match="already at"):
        fetch(http_source(), data_root=data_root, mirror=mirror, progress=False)
    assert dest.read_bytes() == b"corrupt", "a refused check must not touch the file"
    fetch(http_source(), data_root=data_root, mirror=mirror, progress=False, force=True)
    assert dest.read_bytes() == PAYLOAD


# ------------------------------------------------------------------------------------------------------------
# Trust on first use
# ------------------------------------------------------------------------------------------------------------
def test_trust_on_first_use_records_then_refuses_tampering(
    tmp_path: Path, no_network: None, caplog: pytest.LogCaptureFixture
) -> None:
    mirror, data_root = tmp_path / "mirror", tmp_path / "data"
    mirrored = put_in_mirror(mirror, URL, PAYLOAD)
    source = http_source(data=None)  # no sha256 in the registry
    with caplog.at_level(logging.WARNING, logger="common.registry.lock"):
        dest = fetch(source, data_root=data_root, mirror=mirror, progress=False)
    assert "trusting on first use" in caplog.text
    lock = json.loads((data_root / LOCK_NAME).read_text())
    assert lock["sources"][source.key]["sha256"] == sha(PAYLOAD)
    assert lock["sources"][source.key]["url"] == URL
    assert leftovers(data_root) == [] or all(n.endswith(".flock") for n in leftovers(data_root))

    # A present file that changed afterwards is refused.
    dest.write_bytes(b"tampered\n")
    with pytest.raises(ChecksumError) as info:
        fetch(source, data_root=data_root, mirror=mirror, progress=False)
    assert LOCK_NAME in str(info.value) and sha(PAYLOAD) in str(info.value)

    # Upstream (here: the mirror) changing is refused too, and nothing is placed.
    dest.unlink()
    mirrored.write_bytes(b"a different upstream version\n")
    with pytest.raises(ChecksumError):
        fetch(source, data_root=data_root, mirror=mirror, progress=False)
    assert not dest.exists()
    assert leftovers(dest.parent) == []


# ------------------------------------------------------------------------------------------------------------
# Zip archives
# ------------------------------------------------------------------------------------------------------------
ZIP_URL = "http://images.example.org/zips/images.zip"


def make_zip(path: Path, members: dict[str, bytes]) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path.read_bytes()


def zip_source(data: bytes | None, **kw: object) -> Source:
    fields: dict = {"key": "images/images.zip", "group": "test", "method": "http", "dest": "images/images.zip",
                    "license": "MIT", "url": ZIP_URL, "archive": "zip"}
    if data is not None:
        fields["sha256"] = sha(data)
    fields.update(kw)
    return Source(**fields)


def test_zip_is_extracted_with_marker_and_reused(tmp_path: Path, no_network: None) -> None:
    mirror, data_root = tmp_path / "mirror", tmp_path / "data"
    zpath = mirror / "images.example.org/zips/images.zip"
    data = make_zip(zpath, {"images/a.jpg": b"A", "images/sub/b.jpg": b"B"})
    out = fetch(zip_source(data), data_root=data_root, mirror=mirror, progress=False)
    assert out == data_root / "images" / "images"
    assert (out / "images" / "a.jpg").read_bytes() == b"A"
    assert (out / "images" / "sub" / "b.jpg").read_bytes() == b"B"
    marker = json.loads((out / EXTRACT_MARKER).read_text())
    assert marker["archive_sha256"] == sha(data)
    assert (data_root / "images" / "images.zip").read_bytes() == data, "the archive is kept by default"
    assert leftovers(data_root / "images") == []
    zpath.unlink()
    marker_mtime = (out / EXTRACT_MARKER).stat().st_mtime_ns
    assert fetch(zip_source(data), data_root=data_root, mirror=mirror, progress=False) == out
    assert (out / EXTRACT_MARKER).stat().st_mtime_ns == marker_mtime, "not extracted again"


def test_zip_can_be_deleted_after_extraction(tmp_path: Path, no_network: None) -> None:
    mirror, data_root = tmp_path / "mirror", tmp_path / "data"
    data = make_zip(mirror / "images.example.org/zips/images.zip", {"x.txt": b"x"})
    out = fetch(zip_source(data), data_root=data_root, mirror=mirror, progress=False, keep_archive=False)
    assert (out / "x.txt").read_bytes() == b"x"
    assert not (data_root / "images" / "images.zip").exists()
    (mirror / "images.example.org/zips/images.zip").unlink()
    assert fetch(zip_source(data), data_root=data_root, mirror=mirror, progress=False) == out


def test_folder_not_extracted_by_the_tool_is_not_trusted(tmp_path: Path, no_network: None) -> None:
    mirror, data_root = tmp_path / "mirror", tmp_path / "data"
    data = make_zip(mirror / "images.example.org/zips/images.zip", {"x.txt": b"x"})
    (data_root / "images" / "images").mkdir(parents=True)
    with pytest.raises(DownloadError, match="not extracted by this tool"):
        fetch(zip_source(data), data_root=data_root, mirror=mirror, progress=False)
    out = fetch(zip_source(data), data_root=data_root, mirror=mirror, progress=False, force=True)
    assert (out / "x.txt").read_bytes() == b"x"


@pytest.mark.parametrize("marker_counts", ["files", "members only (an older marker)"])
def test_a_half_extracted_folder_is_refused_until_extracted_again(tmp_path: Path, no_network: None,
                                                                  marker_counts: str) -> None:
    """Files gone from an extracted folder whose marker is in place (a data root copied in part to another machine,
    files deleted since): fetch says so on one line naming the folder and the fix, and re-extracts with --force."""
    mirror, data_root = tmp_path / "mirror", tmp_path / "data"
    data = make_zip(mirror / "images.example.org/zips/images.zip",
                    {"images/a.jpg": b"A", "images/sub/b.jpg": b"B", "images/c.jpg": b"C"})
    out = fetch(zip_source(data), data_root=data_root, mirror=mirror, progress=False)
    marker = out / EXTRACT_MARKER
    recorded = json.loads(marker.read_text())
    assert recorded["files"] == 3
    if marker_counts != "files":
        del recorded["files"]
        marker.write_text(json.dumps(recorded))
    shutil.rmtree(out / "images" / "sub")  # an older marker's count of members (folders too) catches this much
    (out / "images" / "a.jpg").unlink()
    with pytest.raises(IncompleteExtractionError) as info:
        fetch(zip_source(data), data_root=data_root, mirror=mirror, progress=False)
    message = str(info.value)
    assert "\n" not in message and f"{out} is incomplete" in message, message
    assert f"delete the folder at {out} and run `python -m common fetch {zip_source(data).key}`" in message
    assert fetch(zip_source(data), data_root=data_root, mirror=mirror, progress=False, force=True) == out
    assert (out / "images" / "sub" / "b.jpg").read_bytes() == b"B"
    (out / "images" / "extra.jpg").write_bytes(b"E")  # a file added by hand is no shortfall
    assert fetch(zip_source(data), data_root=data_root, mirror=mirror, progress=False) == out


def test_extracted_folder_from_another_archive_is_refused(tmp_path: Path, no_network: None) -> None:
    mirror, data_root = tmp_path / "mirror", tmp_path / "data"
    data = make_zip(mirror / "images.example.org/zips/images.zip", {"x.txt": b"x"})
    out = fetch(zip_source(data), data_root=data_root, mirror=mirror, progress=False)
    other = zip_source(b"some other archive")
    with pytest.raises(ChecksumError):
        fetch(other, data_root=data_root, mirror=mirror, progress=False)
    assert (out / "x.txt").exists()


@pytest.mark.parametrize("evil", ["../evil.txt", "ok/../../evil.txt", "/abs/evil.txt"])
def test_zip_slip_is_refused(tmp_path: Path, no_network: None, evil: str) -> None:
    mirror, data_root = tmp_path / "mirror", tmp_path / "data"
    data = make_zip(mirror / "images.example.org/zips/images.zip", {"fine.txt": b"ok", evil: b"pwned"})
    with pytest.raises(UnsafeArchiveError) as info:
        fetch(zip_source(data), data_root=data_root, mirror=mirror, progress=False)
    assert evil in str(info.value)
    assert isinstance(info.value, DownloadError)
    assert not (data_root / "images" / "images").exists()
    assert not (data_root / "evil.txt").exists() and not (data_root / "images" / "evil.txt").exists()
    assert not list(tmp_path.rglob("evil.txt"))
    assert leftovers(data_root / "images") == [], "the staging folder must be removed"


# ------------------------------------------------------------------------------------------------------------
# Manual sources
# ------------------------------------------------------------------------------------------------------------
def manual_source(**kw: object) -> Source:
    fields: dict = {"key": "manual/thing.pt", "group": "test", "method": "manual", "dest": "manual/thing.pt",
                    "license": "see upstream",
                    "instructions": "Open https://drive.example.org/abc in a browser and save it as {dest}."}
    fields.update(kw)
    return Source(**fields)


def test_manual_source_missing_explains_what_to_do(tmp_path: Path, no_network: None) -> None:
    data_root = tmp_path / "data"
    with pytest.raises(ManualDownloadRequired) as info:
        fetch(manual_source(), data_root=data_root)
    message = str(info.value)
    dest = data_root / "manual" / "thing.pt"
    assert "https://drive.example.org/abc" in message
    assert f"save it as {dest}" in message, "{dest} in the instructions is replaced by the exact path"
    assert str(dest) in message and "manual/thing.pt" in message
    first = message.splitlines()[0]  # a stage's one error line: the file and the fix, without the steps below it
    assert f"must be downloaded by hand (method 'manual') to {dest}, then verified with `python -m common fetch " \
           f"manual/thing.pt`" in first, first


def test_manual_file_placed_by_hand_is_accepted_and_locked(tmp_path: Path, no_network: None) -> None:
    data_root = tmp_path / "data"
    dest = data_root / "manual" / "thing.pt"
    dest.parent.mkdir(parents=True)
    dest.write_bytes(b"weights")
    assert fetch(manual_source(), data_root=data_root) == dest
    lock = json.loads((data_root / LOCK_NAME).read_text())
    assert lock["sources"]["manual/thing.pt"]["sha256"] == sha(b"weights")
    dest.write_bytes(b"other weights")
    with pytest.raises(ChecksumError):
        fetch(manual_source(), data_root=data_root)


def test_manual_file_with_pinned_sha_is_verified(tmp_path: Path, no_network: None) -> None:
    data_root = tmp_path / "data"
    dest = data_root / "manual" / "thing.pt"
    dest.parent.mkdir(parents=True)
    dest.write_bytes(b"wrong")
    with pytest.raises(ChecksumError):
        fetch(manual_source(sha256=sha(b"right")), data_root=data_root)
    dest.write_bytes(b"right")
    assert fetch(manual_source(sha256=sha(b"right")), data_root=data_root) == dest


def test_manual_folder_and_manual_archive(tmp_path: Path, no_network: None) -> None:
    data_root = tmp_path / "data"
    folder = manual_source(key="manual/images", dest="manual/images")
    with pytest.raises(ManualDownloadRequired):
        fetch(folder, data_root=data_root)
    (data_root / "manual" / "images").mkdir(parents=True)
    with pytest.raises(ManualDownloadRequired, match="is empty"):  # an empty folder is not a finished download
        fetch(folder, data_root=data_root)
    (data_root / "manual" / "images" / "1.jpg").write_bytes(b"jpeg")
    assert fetch(folder, data_root=data_root) == data_root / "manual" / "images"

    archive = manual_source(key="manual/pack.zip", dest="manual/pack.zip", archive="zip")
    with pytest.raises(ManualDownloadRequired):
        fetch(archive, data_root=data_root)
    make_zip(data_root / "manual" / "pack.zip", {"inside.txt": b"in"})
    out = fetch(archive, data_root=data_root)
    assert (out / "inside.txt").read_bytes() == b"in"


# ------------------------------------------------------------------------------------------------------------
# Hugging Face
# ------------------------------------------------------------------------------------------------------------
def hf_source() -> Source:
    return Source(key="hf/org/model", group="test", method="hf_model", dest="weights/hf/org/model",
                  license="MIT", repo_id="org/model", allow_patterns=("*.json",))


def test_hf_failure_explains_it_needs_internet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hub = pytest.importorskip("huggingface_hub")

    def offline(**kwargs: object) -> str:
        raise OSError("offline")

    monkeypatch.setattr(hub, "snapshot_download", offline)
    with pytest.raises(DownloadError) as info:
        fetch(hf_source(), data_root=tmp_path / "data")
    message = str(info.value)
    assert "org/model" in message and "internet" in message and "HF_HUB_OFFLINE" in message
    assert "python -m common fetch hf/org/model" in message


def test_hf_snapshot_is_called_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hub = pytest.importorskip("huggingface_hub")
    calls: list[dict] = []

    def fake(**kwargs: object) -> str:
        calls.append(kwargs)
        local = Path(str(kwargs["local_dir"]))
        (local / "config.json").write_text("{}")
        return str(local)

    monkeypatch.setattr(hub, "snapshot_download", fake)
    data_root = tmp_path / "data"
    out = fetch(hf_source(), data_root=data_root)
    assert out == data_root / "weights" / "hf" / "org" / "model" and (out / "config.json").exists()
    assert calls[0]["repo_id"] == "org/model" and calls[0]["repo_type"] == "model"
    assert calls[0]["allow_patterns"] == ["*.json"]
    assert fetch(hf_source(), data_root=data_root) == out
    assert len(calls) == 1, "a completed snapshot is not downloaded again"


# ------------------------------------------------------------------------------------------------------------
# Groups
# ------------------------------------------------------------------------------------------------------------
def test_fetch_group_fetches_what_it_can_and_reports_the_rest(tmp_path: Path, no_network: None) -> None:
    mirror, data_root = tmp_path / "mirror", tmp_path / "data"
    put_in_mirror(mirror, URL, PAYLOAD)
    registry = {s.key: s for s in (http_source(), manual_source())}
    assert [s.key for s in sources_in_group("test", registry)] == ["test/file.json", "manual/thing.pt"]
    with pytest.raises(DownloadError) as info:
        fetch_group("test", registry=registry, data_root=data_root, mirror=mirror, progress=False)
    assert "manual/thing.pt" in str(info.value) and "drive.example.org" in str(info.value)
    assert (data_root / "test" / "file.json").read_bytes() == PAYLOAD
    with pytest.raises(RegistryError, match="unknown group"):
        sources_in_group("nope", registry)


# ------------------------------------------------------------------------------------------------------------
# Registry validation
# ------------------------------------------------------------------------------------------------------------
GOOD_ENTRY = """
[[source]]
key = "{key}"
group = "g"
method = "http"
url = "https://example.org/{key}"
license = "MIT"
dest = "{dest}"
{extra}
"""


def write_registry(tmp_path: Path, *entries: str) -> Path:
    path = tmp_path / "sources.toml"
    path.write_text("version = 1\n" + "".join(entries))
    return path


def entry(key: str = "a.json", dest: str | None = None, extra: str = "") -> str:
    return GOOD_ENTRY.format(key=key, dest=dest or key, extra=extra)


def test_valid_small_registry_loads(tmp_path: Path) -> None:
    reg = load_registry(write_registry(tmp_path, entry("a.json"), entry("b.json", extra=f'sha256 = "{"0" * 64}"')))
    assert list(reg) == ["a.json", "b.json"] and reg["b.json"].sha256 == "0" * 64


@pytest.mark.parametrize("entries, needle", [
    ((entry("bad", extra='sha256 = "abc123"'),), "sha256"),
    ((entry("bad", extra=f'sha256 = "{"A" * 64}"'),), "sha256"),
    ((entry("bad"), entry("bad", dest="other")), "duplicate key"),
    ((entry("bad", dest="../outside.json"),), "escapes"),
    ((entry("bad", dest="a/../../outside.json"),), "escapes"),
    ((entry("bad", dest="/etc/passwd"),), "relative"),
    ((entry("ok"), entry("bad", dest="ok")), "collides"),
    ((entry("bad", extra='archive = "zip"'),), "'.zip'"),
    ((entry("bad", extra='colour = "red"'),), "unknown field"),
    (('\n[[source]]\nkey = "bad"\ngroup = "g"\nmethod = "http"\nlicense = "MIT"\ndest = "x"\n',), "needs a url"),
    (('\n[[source]]\nkey = "bad"\ngroup = "g"\nmethod = "manual"\nlicense = "MIT"\ndest = "x"\n',), "instructions"),
    (('\n[[source]]\nkey = "bad"\ngroup = "g"\nmethod = "ftp"\nlicense = "MIT"\ndest = "x"\n',), "unknown method"),
    (('\n[[source]]\nkey = "bad"\ngroup = "g"\nmethod = "hf_model"\nlicense = "MIT"\ndest = "x"\n',), "repo_id"),
])
def test_registry_errors_name_file_and_key(tmp_path: Path, entries: tuple[str, ...], needle: str) -> None:
    path = write_registry(tmp_path, *entries)
    with pytest.raises(RegistryError) as info:
        load_registry(path)
    message = str(info.value)
    assert str(path) in message
    assert "'bad'" in message
    assert needle in message


def test_source_built_in_code_is_validated(tmp_path: Path) -> None:
    with pytest.raises(RegistryError, match="escapes"):
        fetch(http_source(dest="../../x.json"), data_root=tmp_path / "data", mirror=False)
    assert not (tmp_path / "x.json").exists()


# ------------------------------------------------------------------------------------------------------------
# The real registry
# ------------------------------------------------------------------------------------------------------------
def test_real_registry_loads_with_expected_groups() -> None:
    reg = default_registry()
    groups = registry_sources.groups(reg)
    for group in ("sugarcrepe", "sugarcrepe-unrefined", "sugarcrepe-gpt4v", "coco-val2017", "aro", "negclip",
                  "hard_positives", "bivlc", "bivlc-released", "openclip-results", "openclip-models", "ccneg",
                  "conclip", "bivlc-models", "flickr30k"):
        assert group in groups, group
    assert groups["sugarcrepe"] == 7 and groups["sugarcrepe-gpt4v"] == 14 and groups["openclip-models"] == 17
    methods = {s.method for s in reg.values()}
    assert methods == {"http", "hf_dataset", "hf_model", "manual"}
    assert reg["coco/val2017.zip"].archive == "zip" and reg["coco/val2017.zip"].sha256 is None
    for source in reg.values():
        if source.method == "manual":
            assert source.instructions and len(source.instructions) > 80, source.key


HASHED_FROM_A_SNAPSHOT = {
    "code/IMirandaM/BiVLC/src/CLIP_fine_tuning/CLIP_utils.py": (
        "22b383b736b5ecb408aa12090cfc5a09d9ce2546eb66869738bf3896e9b5f32d",
        "git show 84f0d1751e7212d97cdeaeb01353862c09908bcb:src/CLIP_fine_tuning/CLIP_utils.py | sha256sum, on a "
        "snapshot of github.com/IMirandaM/BiVLC (2026-11-29); the file is not in the shared mirror"),
}
"""Released files hashed from the repository itself at the pinned commit (the raw URL serves that blob's bytes), for
files the mirror does not hold: key -> (sha256, how it was computed)."""


def test_real_registry_pins_only_known_hashes() -> None:
    """Every pinned sha256 comes from MANIFEST.tsv, from the URL itself (OpenAI CDN) or from the released repository at
    its pinned commit (``HASHED_FROM_A_SNAPSHOT``, each with how); none is invented."""
    manifest_sha = {row["sha256"] for row in read_manifest()} if MANIFEST.exists() else None
    for source in default_registry().values():
        if source.sha256 is None:
            continue
        if source.key in HASHED_FROM_A_SNAPSHOT:
            assert source.sha256 == HASHED_FROM_A_SNAPSHOT[source.key][0], source.key
            assert source.url and HASHED_FROM_A_SNAPSHOT[source.key][1].split()[2].split(":")[0] in source.url
            continue
        from_url = source.url is not None and source.sha256 in source.url.split("/")
        if manifest_sha is None:
            assert from_url or "raw.githubusercontent.com" in (source.url or ""), source.key
        else:
            assert from_url or source.sha256 in manifest_sha, source.key


def read_manifest() -> list[dict[str, str]]:
    with open(MANIFEST, newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


@pytest.mark.skipif(not MANIFEST.exists(), reason="shared mirror not present")
def test_real_registry_matches_mirror_manifest() -> None:
    manifest = {row["url"]: row for row in read_manifest()}
    reg = default_registry()
    by_url = {s.url: s for s in reg.values() if s.method == "http"}
    missing = sorted(set(manifest) - set(by_url))
    assert not missing, f"MANIFEST.tsv URLs not in the registry: {missing}"
    for url, source in by_url.items():
        if url in manifest:
            row = manifest[url]
            assert source.sha256 == row["sha256"], source.key
            assert source.size == int(row["bytes"]), source.key
            assert source.license == row["license"], source.key
            assert mirror_path(url, SHARED_MIRROR).is_file(), source.key


@pytest.mark.skipif(not MANIFEST.exists(), reason="shared mirror not present")
def test_real_mirror_fetch_swap_obj(tmp_path: Path, no_network: None) -> None:
    out = fetch("sugarcrepe/data/swap_obj.json", data_root=tmp_path / "data", mirror=SHARED_MIRROR, progress=False)
    assert out == tmp_path / "data" / "sugarcrepe" / "data" / "swap_obj.json"
    assert len(json.loads(out.read_text())) == 245


# ------------------------------------------------------------------------------------------------------------
# CLI
# ------------------------------------------------------------------------------------------------------------
def cli(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m common")
    sub = parser.add_subparsers(dest="command", required=True)
    registry_cli.register_cli(sub)
    return parser.parse_args(argv)


def test_cli_sources_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = cli(["sources", "--group", "sugarcrepe", "--json", "--data-root", str(tmp_path)])
    assert args.func is registry_cli.run_sources
    assert args.func(args) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 7
    assert all(r["sha256_pinned"] and not r["present"] and r["license"] == "MIT" for r in rows)
    assert {"key", "method", "size", "present", "sha256"} <= set(rows[0])


def test_cli_sources_table_lists_everything(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    args = cli(["sources", "--data-root", str(tmp_path)])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "sugarcrepe/data/add_att.json" in out and "pinned" in out and "manual" in out
    assert len(out.strip().splitlines()) == len(default_registry()) + 1


@pytest.mark.skipif(not MANIFEST.exists(), reason="shared mirror not present")
def test_cli_fetch(tmp_path: Path, capsys: pytest.CaptureFixture[str], no_network: None) -> None:
    args = cli(["fetch", "sugarcrepe/data/swap_obj.json", "openclip-results", "--data-root", str(tmp_path),
                "--mirror", str(SHARED_MIRROR), "--no-progress"])
    assert args.func is registry_cli.run_fetch
    assert args.func(args) == 0
    printed = capsys.readouterr().out.split()
    assert len(printed) == 4 and all(Path(p).is_file() for p in printed)
    with pytest.raises(UnknownName, match="unknown source key or group 'sugarcrepe/data/swap_objj.json'"):
        args = cli(["fetch", "sugarcrepe/data/swap_objj.json", "--data-root", str(tmp_path)])
        args.func(args)


def test_zoo_download_sources_exist_in_registry() -> None:
    """Models whose checkpoint is a download name a registry key whose dest is that checkpoint (or, for a Hugging
    Face model snapshot, the folder holding it: BiVLC's released fine-tunes)."""
    from common.zoo import registry

    reg = default_registry()
    checked = 0
    for spec in registry().values():
        if not spec.source:
            continue
        assert spec.source in reg, f"zoo model {spec.name!r} names unknown source {spec.source!r}"
        if spec.checkpoint and spec.checkpoint.startswith("data:"):
            source, checkpoint = reg[spec.source], PurePosixPath(spec.checkpoint[len("data:"):])
            dest = PurePosixPath(source.dest)
            assert checkpoint == dest or (source.method == "hf_model" and dest in checkpoint.parents), spec.name
        checked += 1
    assert checked >= 1  # NegCLIP at least


def test_each_key_lives_in_its_owners_file_or_the_shared_one(tmp_path: Path) -> None:
    """A paper's keys sit in papers/<paper>/sources.toml, or in the shared file when several papers use them; a lookup
    by key finds each there; the merged registry refuses a key in another paper's file."""
    from common import plugins

    reg = default_registry()
    assert get_source("aro/negclip/negclip.pth").dest == "weights/negclip/negclip.pth"
    assert get_source("coco/val2017.zip").key == "coco/val2017.zip"
    shared = load_registry(registry_sources.REGISTRY_PATH)
    for key in reg:
        owner = plugins.owner(key)
        expected = plugins.owned_file(key, "sources.toml", registry_sources.REGISTRY_PATH)
        assert key in shared or key in load_registry(expected), (key, owner)
        assert get_source(key) == reg[key]
    stray = write_registry(tmp_path, entry("aro/stray.json"))
    with pytest.raises(RegistryError, match="belongs in"):
        registry_sources._check_owners([stray])


def test_entries_several_papers_use_are_in_the_shared_file() -> None:
    """The download entries other papers' stages read (ARO's NegCLIP files and VG images, the VL-CheckList files with
    their original captions) are in the shared file, under the releasing paper's key."""
    shared = load_registry(registry_sources.REGISTRY_PATH)
    for key in ("aro/negclip/negclip.pth", "aro/negclip/valid_neg_clip.tsv", "aro/negclip/train_neg_clip.tsv",
                "aro/vgr_vga_images.zip", "hard_positives/data/vl_checklist_attributes.json",
                "hard_positives/data/vl_checklist_relations.json"):
        assert key in shared, key
    assert len(sources_in_group("negclip")) == 3 and {s.key for s in sources_in_group("aro")} >= {
        "aro/visual_genome_relation.json", "aro/vgr_vga_images.zip"}  # a group may span files


@pytest.fixture
def two_papers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path, Path]]:
    """A workspace of two papers, alpha and beta (each with a sources.toml), and a shared registry file."""
    from common import plugins

    papers = tmp_path / "papers"
    for paper in ("alpha", "beta"):
        (papers / paper).mkdir(parents=True)
        (papers / paper / "__init__.py").write_text("")
    shared = tmp_path / "shared" / "sources.toml"
    shared.parent.mkdir()
    monkeypatch.setattr(plugins, "PAPERS_DIR", papers)
    monkeypatch.setattr(registry_sources, "REGISTRY_PATH", shared)
    caches = (plugins.paper_names, registry_sources.default_registry, registry_sources._file_registry)
    for cache in caches:
        cache.cache_clear()
    yield shared, papers / "alpha" / "sources.toml", papers / "beta" / "sources.toml"
    for cache in caches:
        cache.cache_clear()


def _write(path: Path, *entries: str) -> Path:
    path.write_text("version = 1\n" + "".join(entries))
    return path


def test_a_key_is_looked_up_in_the_shared_file_first(two_papers) -> None:
    shared, alpha, beta = two_papers
    _write(shared, entry("alpha/used-by-beta.json"), entry("common.json"))
    _write(alpha, entry("alpha/own.json"))
    _write(beta, entry("beta/own.json"))
    assert get_source("alpha/used-by-beta.json").dest == "alpha/used-by-beta.json"
    assert get_source("alpha/own.json").key == "alpha/own.json" and get_source("common.json").key == "common.json"
    alpha.write_text("not toml [")  # the owner's file is read only when the shared file lacks the key
    registry_sources._file_registry.cache_clear()
    assert get_source("alpha/used-by-beta.json").key == "alpha/used-by-beta.json"
    with pytest.raises(RegistryError, match="not valid TOML"):
        get_source("alpha/own.json")


def test_a_key_in_both_its_owners_file_and_the_shared_one_is_refused(two_papers) -> None:
    shared, alpha, beta = two_papers
    _write(shared, entry("alpha/twice.json"))
    _write(alpha, entry("alpha/twice.json", dest="elsewhere.json"))
    _write(beta, entry("beta/own.json"))
    with pytest.raises(RegistryError, match="'alpha/twice.json' is also in") as exc:
        default_registry()
    assert str(shared) in str(exc.value) and str(alpha) in str(exc.value)


def test_a_papers_key_in_another_papers_file_is_refused(two_papers) -> None:
    shared, alpha, beta = two_papers
    _write(shared, entry("common.json"))
    _write(alpha, entry("alpha/own.json"))
    _write(beta, entry("beta/own.json"), entry("alpha/stray.json"))
    with pytest.raises(RegistryError, match="'alpha/stray.json' belongs in") as exc:
        default_registry()
    assert str(beta) in str(exc.value) and str(alpha) in str(exc.value) and str(shared) in str(exc.value)
    with pytest.raises(RegistryError, match="belongs in"):  # a lookup in that file says so too
        get_source("beta/own.json")
    _write(beta, entry("beta/own.json"), entry("shared-key.json"))  # a key naming no paper is the shared file's
    registry_sources._file_registry.cache_clear()
    with pytest.raises(RegistryError, match="'shared-key.json' belongs in .*names no paper"):
        get_source("beta/own.json")


# ------------------------------------------------------------------------------------------------------------
# Messages that name the culprit (issue 35, item 8)
# ------------------------------------------------------------------------------------------------------------
def test_an_empty_manual_folder_is_reported_as_such(tmp_path: Path, no_network: None) -> None:
    data_root = tmp_path / "data"
    folder = data_root / "manual" / "images"
    (folder / ".hidden-only").mkdir(parents=True)  # what an unfinished extraction or a file browser leaves
    with pytest.raises(ManualDownloadRequired) as info:
        fetch(manual_source(key="manual/images", dest="manual/images"), data_root=data_root)
    first = str(info.value).splitlines()[0]
    assert f"{folder} is empty" in first and "manual/images" in first, first


@pytest.mark.parametrize("target, close", [("sugarcrep", "'sugarcrepe'"), ("openclip-result", "'openclip-results'")])
def test_an_unknown_group_lists_the_close_matches(tmp_path: Path, target: str, close: str) -> None:
    args = cli(["fetch", target, "--data-root", str(tmp_path)])
    with pytest.raises(UnknownName) as info:
        args.func(args)
    message = str(info.value)
    assert f"unknown source key or group {target!r}; did you mean" in message and close in message, message
    assert "\n" not in message and not (tmp_path / LOCK_NAME).exists()


def test_an_unknown_target_fails_before_anything_is_fetched(tmp_path: Path, no_network: None) -> None:
    args = cli(["fetch", "openclip-results", "no-such-group", "--data-root", str(tmp_path), "--no-progress"])
    with pytest.raises(UnknownName, match="'no-such-group'"):
        args.func(args)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("kind", ["a file", "missing"])
def test_vlc_mirror_that_is_not_a_folder_names_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           no_network: None, kind: str) -> None:
    mirror = tmp_path / "mirror"
    if kind == "a file":
        mirror.write_text("not a mirror\n")
    monkeypatch.setenv("VLC_MIRROR", str(mirror))
    with pytest.raises(SettingError) as info:  # not "not present" followed by a network failure
        fetch(http_source(), data_root=tmp_path / "data", progress=False)
    message = str(info.value)
    assert message.startswith(f"VLC_MIRROR={mirror} ") and "\n" not in message, message
    assert ("is a file" if kind == "a file" else "does not exist") in message
    assert leftovers(tmp_path / "data" / "test") == []


def test_a_mirror_option_that_is_not_a_folder_is_named(tmp_path: Path, no_network: None) -> None:
    with pytest.raises(SettingError, match=f"^mirror {tmp_path / 'nowhere'} does not exist"):
        fetch(http_source(), data_root=tmp_path / "data", mirror=tmp_path / "nowhere", progress=False)


def test_a_wrong_vlc_mirror_does_not_matter_when_nothing_is_fetched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    no_network: None) -> None:
    mirror, data_root = tmp_path / "mirror", tmp_path / "data"
    put_in_mirror(mirror, URL, PAYLOAD)
    assert fetch(http_source(), data_root=data_root, mirror=mirror, progress=False).read_bytes() == PAYLOAD
    monkeypatch.setenv("VLC_MIRROR", str(tmp_path / "gone"))
    assert fetch(http_source(), data_root=data_root, progress=False).read_bytes() == PAYLOAD  # verified in place


def test_fetch_failures_end_in_one_line_after_the_details(tmp_path: Path, no_network: None,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """The manual steps (several lines) are printed first; the error itself is one line naming each failed target."""
    registry = {s.key: s for s in (manual_source(),)}
    monkeypatch.setattr(registry_cli, "default_registry", lambda: registry)
    args = cli(["fetch", "manual/thing.pt", "--data-root", str(tmp_path), "--no-progress"])
    with pytest.raises(DownloadError) as info:
        args.func(args)
    message = str(info.value)
    assert "\n" not in message and "1 of 1 target(s) failed" in message and "manual/thing.pt" in message, message
    err = capsys.readouterr().err
    assert "https://drive.example.org/abc" in err and "error: " not in err
