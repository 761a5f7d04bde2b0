"""Every DVC stage depends on exactly the code it imports (and the data files those modules declare), reads only
the parameters it declares, and an edit in one paper's folder re-runs only that paper's stages; ``deps --write``
rewrites a wrong list and nothing else."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from common.cli import handler_module
from common.paths import ROOT
from common.pipeline.params import stage_params
from common.pipeline.stage_deps import (
    FENCE_BEGIN, FENCE_END, DepsWriteError, check_all, check_stage, closure, dvc_files, entry_modules, plan_file,
    write_deps)
from common.pipeline.stage_map import address, all_stages, forget_stages
from workspace_copy import copy_workspace, dvc


def test_every_stage_lists_exactly_what_it_imports():
    checks = check_all(handler_module)
    assert len(checks) >= 12  # world, 4 trainings, 5 paper audits, SugarCrepe's sets/zoo/table, 5 reports
    wrong = [f"{c.stage}: missing {list(c.missing)} extra {list(c.extra)}" for c in checks if not c.ok]
    assert not wrong, "\n".join(wrong) + "\n(`python -m common deps --write` rewrites them)"


def test_every_locked_stage_is_a_stage_of_its_dvc_yaml():
    """DVC keeps a ``dvc.lock`` entry after its stage leaves ``dvc.yaml`` and never reads it again: the root lock held
    ``mini/sugarcrepe`` (``python -m common world sugarcrepe``, deps ``common/datasets/sugarcrepe.py``, a module that
    no longer exists) from 62cf84c, which removed the stage, on; a reader of the lock meets code that is not there."""
    defined = {stage.address for stage in all_stages()}
    locked = {address(dvc_file, name) for dvc_file in dvc_files()
              for name in yaml.safe_load((ROOT / dvc_file).with_name("dvc.lock").read_text())["stages"]}
    assert len(locked) >= 70 and not locked - defined, sorted(locked - defined)


def test_the_check_fails_on_a_missing_or_an_extra_dependency():
    cmd = "python -m common audit bivlc --strict"
    deps = list(check_stage("s", "f", cmd, [], handler_module).expected)
    assert {"papers/bivlc/audit.py", "common/cli.py"} <= set(deps)  # the plug-in's imports, and the dispatcher
    assert check_stage("s", "f", cmd, deps, handler_module).ok
    missing = check_stage("s", "f", cmd, [d for d in deps if d != "common/audit/core.py"], handler_module)
    assert missing.missing == ("common/audit/core.py",) and not missing.ok
    extra = check_stage("s", "f", cmd, deps + ["common/evaluation/engine.py", "results/elsewhere.csv"], handler_module)
    assert extra.extra == ("common/evaluation/engine.py",)  # data outside common/ and papers/ is the stage's own business
    no_published = check_stage("s", "f", cmd, [d for d in deps if not d.startswith("results/published/")],
                               handler_module)
    assert "results/published/bivlc.csv" in no_published.missing


def test_the_import_graph_follows_function_level_imports_and_packages():
    found = closure(["papers.sugarcrepe.table6"])
    assert {"papers/__init__.py", "papers/sugarcrepe/__init__.py", "common/evaluation/scoring/selection.py",
            "common/zoo/__init__.py"} <= found.files
    assert "common/zoo/models.toml" in found.data
    assert "papers/sugarcrepe/released.py" not in found.files  # table6 never imports the audit's code
    modules, dispatcher = entry_modules("python -m common train xs-2k", handler_module)
    assert modules == ["common.training.family"] and "common/cli.py" in dispatcher
    assert entry_modules("ATEN_CPU_CAPABILITY=avx2 python -m common audit aro --strict",
                         handler_module)[0] == ["papers.aro.audit"]


# ---- deps --write ---------------------------------------------------------------------------------------------
CROSS = "python -m common.audit.cross_paper --strict"
"""A stage that reads a declared data folder (results/published/) and a declared file (the registry)."""
WORLD = "python -m common world train --out build/x"
"""A stage that runs ``python -m common`` itself (the dispatcher files count)."""


def _tiny_workspace(root: Path) -> Path:
    """The repository's modules (``.py`` files only: no real ``dvc.yaml`` to touch) and an empty DVC project."""
    for package in ("common", "papers"):
        shutil.copytree(ROOT / package, root / package, ignore=lambda folder, names: {
            n for n in names if not n.endswith(".py") and not (Path(folder) / n).is_dir() or n == "__pycache__"})
    (root / ".dvc").mkdir()
    (root / ".dvc" / "config").write_text("[core]\n    no_scm = true\n    analytics = false\n")
    return root


def _entries(deps, indent: str = "      ") -> str:
    return "".join(f"{indent}- {d}\n" for d in deps)


def _fenced(deps, indent: str = "      ") -> str:
    """The entries between the fence's two comment lines, as ``deps --write`` writes them."""
    return f"{indent}{FENCE_BEGIN}\n" + _entries(deps, indent) + f"{indent}{FENCE_END}\n"


def test_write_adds_what_is_missing_removes_what_is_extra_and_keeps_every_other_line(tmp_path):
    root = _tiny_workspace(tmp_path / "ws")
    cross = list(check_stage("s", "f", CROSS, [], handler_module, root).expected)
    world = list(check_stage("s", "f", WORLD, [], handler_module, root).expected)
    assert "results/published/" in cross and "common/cli.py" in world
    code = [d for d in cross if d.endswith(".py")]
    dropped = code[len(code) // 2]

    def cross_stage(deps_lines: str) -> str:
        return ("  audit/cross:   # a comment on the key\n"
                f"    cmd: {CROSS}\n"
                "    deps:\n"
                "      - build/some/input\n"
                f"{deps_lines}"
                "      - results/elsewhere.csv\n"
                "    outs:\n"
                "      - results/audit/x.md:\n"
                "          cache: false\n")

    def text(cross_deps: str) -> str:
        return ("# top comment: kept\n"
                "stages:\n"
                + cross_stage(cross_deps) +
                "\n"
                "  # a comment between stages\n"
                "  world:\n"
                "    foreach: [a, b]    # two items, one do: block\n"
                "    do:\n"
                f"      cmd: {WORLD}-${{item}}\n"
                "      deps:\n"
                f"{_fenced(reversed(world), '        ')}"  # correct and fenced but unsorted: left alone
                "      outs:\n"
                "        - build/x-${item}\n")

    wrong = ("      # why the code is listed: kept above its entry\n"
             + _entries([d for d in cross if d != dropped]) + _entries(["common/evaluation/engine.py"]))
    (root / "dvc.yaml").write_text(text(wrong))
    other = root / "papers" / "aro" / "dvc.yaml"  # a second stage file, wrong too, not named below
    other.write_text("stages:\n" + cross_stage(_entries([dropped])))

    rewrites = write_deps(handler_module, [root / "dvc.yaml"], root=root)

    assert [(r.dvc_file, r.stages) for r in rewrites] == [("dvc.yaml", ("audit/cross",))]
    right = "      # why the code is listed: kept above its entry\n" + _fenced(cross)
    assert (root / "dvc.yaml").read_text() == text(right)
    assert all(c.ok for c in check_all(handler_module, root) if c.dvc_file == "dvc.yaml")
    assert other.read_text() == "stages:\n" + cross_stage(_entries([dropped]))
    # writing again changes nothing; then every file
    assert write_deps(handler_module, [root / "dvc.yaml"], root=root) == []
    assert [r.dvc_file for r in write_deps(handler_module, root=root)] == ["papers/aro/dvc.yaml"]
    assert other.read_text() == "stages:\n" + cross_stage(_fenced(cross))
    assert write_deps(handler_module, root=root) == []


def test_the_generated_deps_are_fenced_and_the_hand_written_ones_kept_outside(tmp_path):
    """A right but unfenced list gains the fence's two lines and nothing else; an entry on the wrong side of the
    fence fails the check, and the write moves it out."""
    root = _tiny_workspace(tmp_path / "ws")
    cross = list(check_stage("s", "f", CROSS, [], handler_module, root).expected)
    unfenced = ("stages:\n"
                "  cross:\n"
                f"    cmd: {CROSS}\n"
                "    deps:\n"
                + _entries(["build/some/input", *cross, "results/elsewhere.csv"]))
    (root / "dvc.yaml").write_text(unfenced)
    [check] = check_all(handler_module, root)
    assert not check.missing and not check.extra and set(check.misplaced) == set(cross) and not check.ok
    write_deps(handler_module, root=root)
    fenced = unfenced.replace(_entries(cross), _fenced(cross))
    assert (root / "dvc.yaml").read_text() == fenced
    assert all(c.ok for c in check_all(handler_module, root))

    inside = fenced.replace(_entries(cross[:1]), _entries(cross[:1] + ["build/hand/written"]))
    (root / "dvc.yaml").write_text(inside)
    forget_stages()  # the stage map is cached per workspace; a check after an edit by hand reads it afresh
    [check] = check_all(handler_module, root)
    assert check.misplaced == ("build/hand/written",)
    write_deps(handler_module, root=root)
    assert (root / "dvc.yaml").read_text() == fenced.replace(_entries(["results/elsewhere.csv"]),
                                                             _entries(["build/hand/written", "results/elsewhere.csv"]))


def test_write_refuses_foreach_items_that_need_different_deps(tmp_path):
    root = _tiny_workspace(tmp_path / "ws")
    (root / "dvc.yaml").write_text("stages:\n"
                                   "  two:\n"
                                   "    foreach: [common.audit.cross_paper, common.reporting.report]\n"
                                   "    do:\n"
                                   "      cmd: python -m ${item}\n"
                                   "      deps:\n"
                                   "        - common/__init__.py\n")
    with pytest.raises(DepsWriteError, match=r"dvc.yaml: stage two: its foreach items need different"):
        write_deps(handler_module, root=root)


def test_write_on_the_workspace_touches_only_the_stages_the_check_flags():
    """So that ``deps --write`` on a correct tree is a zero diff, whatever order a correct list is in."""
    wrong: dict[str, set[str]] = {}
    for check in check_all(handler_module):
        if not check.ok:
            wrong.setdefault(check.dvc_file, set()).add(check.stage.split(":")[-1].split("@")[0])
    for dvc_file in dvc_files():
        plan = plan_file(dvc_file, handler_module)
        assert set(plan.stages) == wrong.get(dvc_file, set()), dvc_file
        if not plan.stages:
            assert plan.text == (ROOT / dvc_file).read_text(encoding="utf-8"), dvc_file


def test_a_stage_reads_only_declared_parameters():
    """Stage scripts read parameters through dvc.api.params_show(stages=...): what is not declared is not there."""
    aro = stage_params("papers/aro/dvc.yaml:audit")
    assert set(aro) == {"profile", "full_inputs"} and set(aro["full_inputs"]) == {"cap"}
    finetune = stage_params("papers/aro/dvc.yaml:finetune-full@negclip")
    assert finetune["full_inputs"] == {"cap": None}  # full_inputs.cap only, beside its own section
    assert stage_params("papers/aro/dvc.yaml:full-set") == {}  # no parameter: the registry states its md5s
    table6 = stage_params("papers/sugarcrepe/dvc.yaml:table6")
    assert set(table6) == {"profile", "engine", "sugarcrepe"} and set(table6["sugarcrepe"]["models"]) == {table6["profile"]}
    train = stage_params("mini/train@xs-2k")
    assert set(train["train"]) == {"xs-2k"}
    with pytest.raises(KeyError, match="no/such"):
        stage_params("no/such")


def _modified_in(status: dict, path: str) -> set[str]:
    """Stages whose recorded hash of ``path`` no longer matches (``dvc status --json``)."""
    out = set()
    for stage, changes in status.items():
        for change in changes:
            if isinstance(change, dict) and change.get("changed deps", {}).get(path) == "modified":
                out.add(stage)
    return out


@pytest.mark.slow
def test_an_edit_in_one_paper_reruns_only_that_papers_stages(tmp_path):
    workspace = copy_workspace(tmp_path / "ws", keep_results=True)
    edits = {
        "papers/bivlc/released.py": {"papers/bivlc/dvc.yaml:audit"},
        # the hard-positives registry: only this paper's stages (the VL-CheckList pairs SugarCrepe's blind attacks
        # read are in the shared registry, common/registry/sources.toml); both tables stages, one module
        "papers/hard_positives/sources.toml": {"papers/hard_positives/dvc.yaml:audit",
                                               "papers/hard_positives/dvc.yaml:real-text",
                                               "papers/hard_positives/dvc.yaml:full-data",
                                               "papers/hard_positives/dvc.yaml:table1-full",
                                               "papers/hard_positives/dvc.yaml:table1-mini"},
        "results/published/aro_claims.csv": {"papers/aro/dvc.yaml:audit"},
        # every SugarCrepe stage that reads the released format (the mini sets are written in it) and the report
        # and recognition stages, which read Table 6's columns; not the fine-tunes or the refinement, which read their
        # own rows; of the other papers, only the stages that score SugarCrepe (CoN-CLIP's after fine-tuning, BiVLC's)
        "common/benchmarks/caption_negatives.py": {"papers/sugarcrepe"} | {
            f"papers/sugarcrepe/dvc.yaml:{stage}" for stage in (
                "mini-set", "full-set", "table6", "audit", "blind-real-text", "blind-released", "figure5",
                "mini-templates-set", "mini-blind", "table5-mini", "aro-crepe-full-set", "negclip-full-set",
                "table5-full", "recognition")}
        | {f"papers/conclip/dvc.yaml:{stage}" for stage in ("tables-mini", "tables-full", "sugarcrepe-full")}
        | {f"papers/bivlc/dvc.yaml:{stage}" for stage in ("tables-mini", "tables-full")},
        "common/audit/core.py": {f"papers/{p}/dvc.yaml:audit" for p in
                                 ("aro", "bivlc", "conclip", "hard_positives", "sugarcrepe")}
                                | {"papers/sugarcrepe/dvc.yaml:figure5"}  # the paper's r, recomputed by the audit
                                | {"audit/cross_paper"}  # the cross-paper comparison shares the audit's package
                                | {"site"}  # the static site renders the audit's tables with its readers
                                # hard positives' released-file reader raises the audit's error type
                                | {f"papers/hard_positives/dvc.yaml:{s}" for s in ("real-text", "full-data",
                                                                                  "table1-full", "table1-mini")},
    }
    for path in edits:
        with open(workspace / path, "a", encoding="utf-8") as fh:
            fh.write("\n" if path.endswith(".csv") else "\n# an edit\n")
    result = dvc(workspace, None, "status", "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    status = json.loads(result.stdout)
    for path, expected in edits.items():
        assert _modified_in(status, path) == expected, path
