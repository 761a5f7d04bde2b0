"""The rehearsal's shrunk architectures (``tests.rehearsal.archs``): open_clip's ViT-B-32 and RN50 keep their
families, key scheme, image size, tokenizer and activation and become megabytes; a process started with
``VLC_ARCH_OVERRIDES`` builds them by the usual names (a stand-in written with them loads strictly there), the block
that applies them in a process puts open_clip's registry back, and a bad folder is one line."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from common.errors import SettingError
from common.paths import ROOT
from common.zoo.specs import ARCH_OVERRIDES_ENV, register_local_configs
from tests.rehearsal.archs import arch_overrides, shrinkable, write_shrunk
from tests.rehearsal.space import model_bytes

open_clip = pytest.importorskip("open_clip")


@pytest.fixture(scope="module")
def archs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("archs")
    names = write_shrunk(folder)
    assert {"ViT-B-32", "ViT-B-32-quickgelu", "RN50", "RN50-quickgelu"} <= set(names)
    assert "mini-vit-xs" not in names and not any(name.startswith("coca") for name in names)
    return folder


def _keys_scheme(keys) -> set[str]:
    """State dict keys with block numbers dropped: the naming scheme, whatever the depth."""
    return {re.sub(r"\.\d+\.", ".N.", key) for key in keys}


@pytest.mark.parametrize("arch", ["ViT-B-32-quickgelu", "RN50-quickgelu"])
def test_a_shrunk_architecture_keeps_its_scheme_and_becomes_megabytes(archs, arch):
    import torch

    register_local_configs()
    real_config = open_clip.get_model_config(arch)
    with torch.device("meta"):
        real = open_clip.create_model(arch, pretrained=None, device="meta").state_dict()
    with arch_overrides(archs):
        register_local_configs()
        config = open_clip.get_model_config(arch)
        with torch.device("meta"):
            small = open_clip.create_model(arch, pretrained=None, device="meta").state_dict()
        assert model_bytes(arch) < 20e6 < 400e6 < sum(t.numel() * t.element_size() for t in real.values())
    assert _keys_scheme(small) == _keys_scheme(real)
    for key in ("quick_gelu",):
        assert config.get(key) == real_config.get(key)
    assert config["vision_cfg"]["image_size"] == real_config["vision_cfg"]["image_size"]
    assert {k: config["text_cfg"][k] for k in ("context_length", "vocab_size")} == \
        {k: real_config["text_cfg"][k] for k in ("context_length", "vocab_size")}
    # after the block: open_clip's own architecture again
    assert open_clip.get_model_config(arch) == real_config and os.environ.get(ARCH_OVERRIDES_ENV) is None


def test_a_process_started_with_the_overrides_loads_a_shrunk_stand_in_strictly(archs, tmp_path):
    from tests.rehearsal.models import _save, random_openclip

    with arch_overrides(archs):
        _save(random_openclip("ViT-B-32-quickgelu", seed=3).state_dict(), tmp_path / "standin.pt", "state_dict")
    code = ("import torch, open_clip; from common.zoo.specs import register_local_configs; register_local_configs(); "
            "from common.zoo.openclip import load_state_dict; "
            "m = open_clip.create_model('ViT-B-32-quickgelu', pretrained=None); "
            f"from pathlib import Path; load_state_dict(m, Path({str(tmp_path / 'standin.pt')!r}), 'stand-in', "
            "'ViT-B-32-quickgelu'); print(m.ln_final.weight.shape[0], m.text_projection.shape[1])")
    env = {**os.environ, ARCH_OVERRIDES_ENV: str(archs)}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "64 512"  # the text tower shrunk, the joint width kept
    # without the overrides the real ViT-B/32 refuses the stand-in, in one line
    env.pop(ARCH_OVERRIDES_ENV)
    real = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert real.returncode != 0 and "ModelUnavailable" in real.stderr and "stand-in" in real.stderr


def test_a_missing_override_folder_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv(ARCH_OVERRIDES_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(SettingError, match=f"{ARCH_OVERRIDES_ENV}=.*nowhere: not a folder"):
        register_local_configs()


def test_what_is_shrinkable():
    register_local_configs()
    assert shrinkable(open_clip.get_model_config("ViT-B-32")) and shrinkable(open_clip.get_model_config("RN50"))
    assert not shrinkable(open_clip.get_model_config("coca_ViT-B-32"))
    assert not shrinkable({"vision_cfg": {"timm_model_name": "convnext_base", "layers": 12}, "text_cfg": {}})
