"""Offline, a model that open_clip would download fails at once with a ModelUnavailable that says so and what to do,
instead of after ~50 s of hub retries; weights already in the local cache still load (hub in offline mode).
No network here: the connectivity probe is monkeypatched."""
from __future__ import annotations

import socket
import time

import pytest

from common import zoo
from common.zoo import ModelUnavailable, hub


@pytest.fixture(autouse=True)
def _fresh_probe(monkeypatch):
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    hub._probe_hub.cache_clear()
    yield
    hub._probe_hub.cache_clear()


def _no_socket(*args, **kwargs):
    raise AssertionError("the network was contacted")


def test_hf_hub_offline_is_respected_without_a_probe(monkeypatch):
    monkeypatch.setattr(socket, "create_connection", _no_socket)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert zoo.hub_offline() == "HF_HUB_OFFLINE=1"
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy:3128")  # behind a proxy: assumed online, nothing probed
    assert zoo.hub_offline() is None


def test_the_probe_reports_an_unreachable_hub_once_per_process(monkeypatch):
    calls = []

    def refuse(address, timeout=None):
        calls.append((address, timeout))
        raise OSError("[Errno -2] Name or service not known")

    monkeypatch.setattr(socket, "create_connection", refuse)
    reason = zoo.hub_offline()
    assert reason.startswith("huggingface.co:443 unreachable") and "Name or service" in reason
    assert zoo.hub_offline() == reason and calls == [(("huggingface.co", 443), zoo.HUB_PROBE_SECONDS)]


def test_the_probe_gives_up_after_its_timeout(monkeypatch):
    monkeypatch.setattr(hub, "HUB_PROBE_SECONDS", 0.2)  # where the probe reads it
    def hanging_lookup(*args, **kwargs):
        time.sleep(5)
        raise OSError("name lookup timed out")  # what the abandoned probe thread ends with

    monkeypatch.setattr(socket, "create_connection", hanging_lookup)
    started = time.perf_counter()
    assert "did not answer within 0.2 s" in zoo.hub_offline()
    assert time.perf_counter() - started < 2


def test_the_probe_says_online_when_the_hub_answers(monkeypatch):
    class Connection:
        def close(self):
            pass

    monkeypatch.setattr(socket, "create_connection", lambda *a, **k: Connection())
    assert zoo.hub_offline() is None


def test_offline_a_missing_pretrained_model_fails_at_once_and_says_what_to_do(monkeypatch, tmp_path):
    import open_clip

    monkeypatch.setattr(socket, "create_connection", _no_socket)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(open_clip, "create_model_and_transforms", _no_socket)  # not even the model is built
    started = time.perf_counter()
    with pytest.raises(ModelUnavailable) as caught:
        zoo.create_model("openai/ViT-B-32", cache_dir=str(tmp_path))
    assert time.perf_counter() - started < 5
    message = str(caught.value)
    assert "offline (HF_HUB_OFFLINE=1)" in message and str(tmp_path) in message
    assert "machine with internet" in message and "HF_HUB_OFFLINE=1" in message


def test_offline_cached_weights_load_with_the_hub_in_offline_mode(monkeypatch, tmp_path):
    """The weights are in the cache: open_clip is called with huggingface_hub offline (no retries), then restored."""
    import open_clip
    import open_clip.pretrained
    from huggingface_hub import constants

    monkeypatch.setattr(socket, "create_connection", lambda *a, **k: (_ for _ in ()).throw(OSError("no route")))
    monkeypatch.setattr(open_clip.pretrained, "download_pretrained", lambda cfg, cache_dir=None: str(tmp_path / "w"))
    seen = []

    def create(arch, pretrained=None, **kwargs):
        seen.append((arch, pretrained, constants.HF_HUB_OFFLINE))
        raise RuntimeError("stop here")

    before = constants.HF_HUB_OFFLINE
    monkeypatch.setattr(open_clip, "create_model_and_transforms", create)
    with pytest.raises(ModelUnavailable, match=r"offline \(huggingface.co:443 unreachable \(no route\)\)"):
        zoo.create_model("openai/ViT-B-32")
    assert seen == [("ViT-B-32-quickgelu", "openai", True)]
    assert constants.HF_HUB_OFFLINE == before
