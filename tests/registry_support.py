"""The md5 a registry entry states, replaced for one test: as a rehearsal's copy states its stand-ins' md5s
(``tests.rehearsal.standins.state_md5s``), so a test's own files pass the stages' ``check_md5`` with no switch."""
from __future__ import annotations

import dataclasses

import pytest

from common import plugins
from common.registry import sources


def state_md5(mp: pytest.MonkeyPatch, key: str, md5: str) -> None:
    """Make every lookup of ``key`` (``get_source``, ``default_registry``) state ``md5`` until ``mp`` undoes it."""
    stated = dataclasses.replace(sources.get_source(key), md5=md5)
    for reg_path in plugins.lookup_files(key, sources.REGISTRY_PATH.name, sources.REGISTRY_PATH):
        entries = sources._file_registry(reg_path) if reg_path.is_file() else {}
        if key in entries:
            mp.setitem(entries, key, stated)
    mp.setitem(sources.default_registry(), key, stated)
