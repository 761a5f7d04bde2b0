"""``common.pipeline.params.stage_params`` returns exactly what DVC's own ``params_show`` returns for a stage, faster."""
from __future__ import annotations

import dvc.api
import pytest

from common.paths import ROOT
from common.pipeline.params import stage_params


@pytest.mark.parametrize("stage", [
    "mini/train@xs-2k",                                        # foreach over a dict: train.${key}
    "papers/sugarcrepe/dvc.yaml:table6",                       # sugarcrepe.models.${profile}
    "papers/sugarcrepe/dvc.yaml:negclip-mini@negclip-swap",    # foreach over a list, single keys of a section
])
def test_same_parameters_as_dvc_params_show(stage):
    assert stage_params(stage) == dvc.api.params_show(stages=[stage], repo=str(ROOT))


def test_unknown_stage_and_undeclared_parameter_are_errors(tmp_path):
    with pytest.raises(KeyError, match="no-such-stage"):
        stage_params("papers/sugarcrepe/dvc.yaml:no-such-stage")
    (tmp_path / "params.yaml").write_text("profile: mini\na:\n  b: 1\n")
    (tmp_path / "dvc.yaml").write_text("stages:\n  s:\n    cmd: echo\n    params:\n      - a.c\n")
    import subprocess

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([str(ROOT / ".venv" / "bin" / "dvc"), "init", "-q"], cwd=tmp_path, check=True)
    with pytest.raises(KeyError, match=r"params.yaml: missing parameter 'a.c'"):
        stage_params("s", repo=tmp_path)


def test_own_params_reads_params_yaml_once(monkeypatch):
    """``own_params`` validates params.yaml before the stage map resolves the stage through DVC, and
    ``stage_params`` reuses that read instead of validating the file again."""
    import common.pipeline.params as params

    reads: list[str] = []
    read = params.read_params

    def counted(path=params.PARAMS_FILE):
        reads.append(str(path))
        return read(path)

    monkeypatch.setattr(params, "read_params", counted)
    assert params.own_params("papers/sugarcrepe/dvc.yaml:table6") == stage_params("papers/sugarcrepe/dvc.yaml:table6")
    assert reads == [str(ROOT / "params.yaml")] * 2  # once for own_params, once for the plain stage_params
