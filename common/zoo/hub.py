"""Whether the model hub can be reached, and what to do offline: pretrained weights come from the Hugging Face hub
(or open_clip's URLs), so offline a model is built only from the local cache, and a missing file fails at once with
one message saying how to bring the weights here."""
from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
from functools import lru_cache
from pathlib import Path

from common.zoo.interface import ModelUnavailable
from common.zoo.specs import ModelSpec

HUB_HOST = ("huggingface.co", 443)
HUB_PROBE_SECONDS = 3.0


def hub_offline() -> str | None:
    """Why the model hub cannot be reached from here, or None when it can: ``HF_HUB_OFFLINE=1`` (or
    ``TRANSFORMERS_OFFLINE=1``), else a TCP connection to huggingface.co:443 that does not open within
    ``HUB_PROBE_SECONDS`` (probed once per process); behind an HTTPS proxy the hub is assumed reachable."""
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(var, "").strip().upper() in ("1", "ON", "YES", "TRUE"):
            return f"{var}={os.environ[var]}"
    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return None
    return _probe_hub()


@lru_cache(maxsize=1)
def _probe_hub() -> str | None:
    outcome: list[BaseException | None] = []

    def probe() -> None:
        try:
            socket.create_connection(HUB_HOST, timeout=HUB_PROBE_SECONDS).close()
            outcome.append(None)
        except OSError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=probe, daemon=True)  # a thread: the name lookup has no timeout of its own
    thread.start()
    thread.join(HUB_PROBE_SECONDS)
    if not outcome:
        return f"{HUB_HOST[0]}:{HUB_HOST[1]} did not answer within {HUB_PROBE_SECONDS:g} s"
    if outcome[0] is not None:
        return f"{HUB_HOST[0]}:{HUB_HOST[1]} unreachable ({outcome[0]})"
    return None


@contextlib.contextmanager
def hub_offline_mode(offline: bool):
    """huggingface_hub in offline mode for the block (its flag is read at import, so it is set on the module too)."""
    if not offline:
        yield
        return
    try:
        from huggingface_hub import constants
    except ImportError:  # no hub client: open_clip can only use URLs and files
        constants = None
    before_env = os.environ.get("HF_HUB_OFFLINE")
    before = getattr(constants, "HF_HUB_OFFLINE", None)
    os.environ["HF_HUB_OFFLINE"] = "1"
    if constants is not None:
        constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        if before_env is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = before_env
        if constants is not None:
            constants.HF_HUB_OFFLINE = before


def hub_cache_dir(cache_dir: str | None) -> str:
    if cache_dir:
        return cache_dir
    try:
        from huggingface_hub import constants

        return constants.HF_HUB_CACHE
    except ImportError:
        return "~/.cache/huggingface/hub"


def weights_origin(spec: ModelSpec) -> str:
    """Where open_clip downloads the pretrained weights of ``spec`` from."""
    # deferred: loads open_clip only when called
    import open_clip

    cfg = open_clip.get_pretrained_cfg(spec.arch, spec.pretrained) or {}
    return cfg.get("hf_hub") or cfg.get("url") or "open_clip's pretrained registry"


def offline_message(spec: ModelSpec, reason: str, cache_dir: str | None, exc: BaseException | None,
                    weights: str | None = None) -> str:
    """``weights``: what is not cached, "its ... is" (default: the open_clip tag's weights and their origin)."""
    detail = f" ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})" if exc is not None and str(exc) else ""
    url_cache = "" if weights else "; open_clip URL downloads: ~/.cache/clip"
    weights = weights or f"its weights ({spec.arch!r}, {spec.pretrained!r}, from {weights_origin(spec)}) are"
    return (
        f"model {spec.name!r}: offline ({reason}) and {weights} not in the local cache {hub_cache_dir(cache_dir)}"
        f"{detail}. Run `python -m common zoo check {spec.name}` once on a machine with internet, then copy its "
        f"Hugging Face cache (HF_HOME, default ~/.cache/huggingface{url_cache}) here; with the weights in place, "
        "HF_HUB_OFFLINE=1 skips the connectivity check"
    )


def fail_if_weights_absent(spec: ModelSpec, cache_dir: str | None, reason: str) -> None:
    """Offline: raise ``ModelUnavailable`` now unless the weights file is in the local cache, before open_clip builds
    the model (minutes for the large towers) and only then looks; URL-only weights (urllib, no offline mode) are
    looked up directly."""
    # deferred: loads open_clip only when called
    import open_clip
    from open_clip.pretrained import download_pretrained, has_hf_hub

    cfg = open_clip.get_pretrained_cfg(spec.arch, spec.pretrained) or {}
    if not cfg or "file" in cfg:
        return
    if cfg.get("url") and not (cfg.get("hf_hub") and has_hf_hub()):
        target = Path(cache_dir or os.path.expanduser("~/.cache/clip")) / os.path.basename(cfg["url"])
        if not target.is_file():
            raise ModelUnavailable(offline_message(spec, reason, cache_dir, None))
        return
    try:
        with hub_offline_mode(True), _quiet_logger("root"):
            download_pretrained(cfg, cache_dir=cache_dir)  # offline: the cached file's path, or an error at once
    except Exception as exc:
        raise ModelUnavailable(offline_message(spec, reason, cache_dir, exc)) from exc


@contextlib.contextmanager
def _quiet_logger(name: str):
    logger = logging.getLogger(None if name == "root" else name)
    before = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(before)
