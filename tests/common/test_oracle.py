"""The oracle (common.oracle): its verdicts, its observers of the authors' functions (return values, their own
locals at a return or at a line), and SugarCrepe's released main_eval script run beside this workspace's engine on a
set the test writes, where a tie decides one example: the same decisions under this workspace's rule, and a
deliberately altered tie rule is caught."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from common.oracle import models
from common.oracle.core import Decisions, NotCovered, Number, PaperOracle, compare_decisions, read_oracles, table_lines
from common.oracle.observe import locals_at_line, returns_of


def test_numbers_compare_at_the_printed_precision():
    assert Number("B", "m", "k", 66.6666, 66.67, 1).equal
    assert not Number("B", "m", "k", 66.6666, 66.5, 1).equal
    assert not Number("B", "m", "k", 66.6666, None, 1).ok
    assert Number("B", "m", "k", 66.6666, 66.5, 1, reason="fp16 here").ok
    assert not Number("B", "m", "k", float("nan"), float("nan"), 1).equal


def test_decisions_must_be_identical_and_scores_close():
    same = compare_decisions("B", "m", {"a": True, "b": False}, {"a": True, "b": False})
    assert same.ok and same.verdict == "2 identical"
    flipped = compare_decisions("B", "m", {"a": True, "b": False}, {"a": True, "b": True})
    assert not flipped.ok and flipped.differing == ("b",)
    assert compare_decisions("B", "m", {"a": True, "b": False}, {"a": True, "b": True}, reason="stated").ok
    one_sided = compare_decisions("B", "m", {"a": True}, {"a": True, "c": False}, reason="stated")
    assert not one_sided.ok and one_sided.missing == ("c",)
    apart = compare_decisions("B", "m", {"a": True}, {"a": True}, authors_scores={"a": [0.1, 0.2]},
                              our_scores={"a": [0.1, 0.2 + 1e-3]})
    assert not apart.ok and "apart" in apart.verdict
    close = compare_decisions("B", "m", {"a": True}, {"a": True}, authors_scores={"a": [0.1, 0.2]},
                              our_scores={"a": [0.1, 0.2 + 1e-7]})
    assert close.ok and close.reason is None
    assert not Decisions("B", "m", 0).ok


def test_a_paper_agrees_only_when_every_benchmark_does(tmp_path):
    oracle = PaperOracle("p", code=["RAIVNLab/sugar-crepe"],
                         numbers=[Number("X", "m", "k", 50.0, 50.0, 1), Number("Y", "m", "k", 50.0, 40.0, 1)],
                         decisions=[compare_decisions("X", "m", {"a": True}, {"a": True})])
    assert oracle.agreeing() == ["X"] and not oracle.ok
    assert "agrees on 1 of 2 benchmarks" in oracle.headline()
    oracle.write(tmp_path / "p.json")
    again = read_oracles(tmp_path)
    assert again[0].to_json() == oracle.to_json()
    assert any("DIFFERS" in line for line in table_lines(again))


# ---- observing the authors' functions -------------------------------------------------------------------------------
def _their_module(path: Path, source: str) -> dict:
    """``source`` written to ``path`` and run, compiled under its file's name as an import would: its globals."""
    path.write_text(source, encoding="utf-8")
    namespace: dict = {}
    exec(compile(path.read_text(encoding="utf-8"), str(path.resolve()), "exec"), namespace)  # noqa: S102
    return namespace


def test_returns_of_sees_the_functions_own_locals_and_its_callers(tmp_path):
    theirs = _their_module(tmp_path / "theirs.py", (
        "def f(x):\n"
        "    sim = x * 2\n"
        "    return [sim > 1]\n"
        "\n"
        "def main():\n"
        "    hidden = 41 + 1\n"
        "    for i in (0.25, 3):\n"
        "        f(i)\n"))
    with returns_of(tmp_path / "theirs.py", "f", caller_locals=("i",), own_locals=("sim", "missing")) as seen, \
            returns_of(tmp_path / "theirs.py", "main", own_locals=("hidden",)) as main:
        theirs["main"]()
    # a value the function computes and does not return (BiVLC's evaluate_BiVLC's similarities), None for a name it
    # never binds; one entry per return, in step with the values and the callers' locals
    assert seen.values == [[False], [True]] and seen.callers == [{"i": 0.25}, {"i": 3}]
    assert seen.locals == [{"sim": 0.5, "missing": None}, {"sim": 6, "missing": None}]
    # a local it never prints (hard positives' main computes orig_acc and drops it)
    assert main.values == [None] and main.locals == [{"hidden": 42}]
    with returns_of(tmp_path / "theirs.py", "f") as bare:
        theirs["f"](1)
    assert bare.values == [[True]] and bare.callers == [{}] and bare.locals == [{}]


def test_locals_at_line_sees_each_pass_over_a_line(tmp_path):
    source = ("def evaluate():\n"
              "    total = 0\n"
              "    for x in [1, 2, 3]:\n"
              "        total += x\n"
              "        done = True\n"
              "    return total\n")
    theirs = _their_module(tmp_path / "snippet.py", source)
    with locals_at_line(tmp_path / "snippet.py", "evaluate", 5, ("x", "total")) as seen:
        assert theirs["evaluate"]() == 6
    # the values a loop overwrites, seen on each pass (at the return only the last would be)
    assert seen == [{"x": 1, "total": 1}, {"x": 2, "total": 3}, {"x": 3, "total": 6}]


# ---- the released SugarCrepe evaluation against this workspace's engine -------------------------------------------
CATEGORIES = ("add_obj", "add_att", "replace_obj", "replace_att", "replace_rel", "swap_obj", "swap_att")


def _released_set(root: Path) -> tuple[dict[str, Path], Path]:
    """Seven category files in the released format, two examples each; example "1" is a tie (the negative caption is
    the caption)."""
    from PIL import Image

    images = root / "images"
    images.mkdir(parents=True)
    for i, colour in enumerate(("red", "green", "blue")):
        Image.new("RGB", (40, 30), colour).save(images / f"{i}.jpg")
    files = {}
    for n, category in enumerate(CATEGORIES):
        files[category] = root / "data" / f"{category}.json"
        files[category].parent.mkdir(exist_ok=True)
        files[category].write_text(json.dumps({
            "0": {"filename": f"{n % 3}.jpg", "caption": f"a {category} red square", "negative_caption": "a dog"},
            "1": {"filename": f"{(n + 1) % 3}.jpg", "caption": "two cats", "negative_caption": "two cats"}}))
    return files, images


def _authors_decisions(tmp_path: Path, data: Path, images: Path, weights: Path) -> dict[str, bool]:
    from common.oracle.authors import fetch_code, run_script

    code = fetch_code("RAIVNLab/sugar-crepe", tmp_path / "code_root")
    # the weights relative to the working directory: main_eval names its output file after --pretrained
    argv = ["--model", "mini-vit-xs", "--pretrained", weights.name, "--data_root", str(data),
            "--coco_image_root", str(images), "--output", str(tmp_path / "out")]
    with returns_of(code.module_file("main_eval"), "text_retrieval", ("c", "i")) as seen:
        run_script(code, "main_eval", argv, cwd=weights.parent)
    metrics = json.loads((tmp_path / "out" / f"mini-vit-xs-{weights.name}.json").read_text())
    decisions = {f"{c['c']}/{c['i']}": v == 1 for c, v in zip(seen.callers, seen.values)}
    assert {c: (decisions[f"{c}/0"] + decisions[f"{c}/1"]) / 2 for c in CATEGORIES} == metrics
    return decisions


def test_main_eval_agrees_with_the_engine_and_catches_a_changed_tie_rule(mirror, tmp_path, monkeypatch):
    from common.benchmarks.caption_negatives import load_sugarcrepe
    from common.evaluation.engine import Engine, EngineConfig
    from common.evaluation.scoring import selection
    from common.evaluation.scoring.selection import STRICT, DecisionRule
    from common.zoo import random_model

    monkeypatch.setenv("VLC_DATA", str(tmp_path / "data_root"))
    model = random_model("mini-vit-xs", seed=3)
    weights = tmp_path / "tiny.pt"
    torch.save(model.model.state_dict(), weights)
    files, images = _released_set(tmp_path / "set")
    authors = _authors_decisions(tmp_path, files[CATEGORIES[0]].parent, images, weights)
    # RAIVNLab/sugar-crepe@0047054b main_eval.py:54 "return 1 if pos_score.item() > neg_score.item() else 0"
    assert not any(authors[f"{c}/1"] for c in CATEGORIES)

    items = load_sugarcrepe(files, images)
    engine = Engine(model, EngineConfig(progress=False), cache_root=tmp_path / "cache")

    def ours(rule: DecisionRule) -> dict[str, bool]:
        return {o.item_id: o.correct for o in selection.evaluate(engine, items, rule).outcomes}

    assert compare_decisions("SugarCrepe", "tiny", authors, ours(STRICT)).ok
    altered = compare_decisions("SugarCrepe", "tiny", authors, ours(DecisionRule("ties-count", ties="correct")))
    assert not altered.ok
    assert set(altered.differing) == {f"{c}/1" for c in CATEGORIES}


# ---- the committed record -----------------------------------------------------------------------------------------
def _two_benchmark_oracle() -> PaperOracle:
    return PaperOracle(
        "p", code=["RAIVNLab/sugar-crepe"],
        numbers=[Number("X", "m", "k", 50.0, 50.04, 1), Number("Y", "m", "k", 50.0, 40.0, 1),
                 Number("Y", "m", "j", 50.0, 40.0, 1, reason="a stated deviation")],
        decisions=[compare_decisions("X", "m", {"a": True, "b": False}, {"a": True, "b": False},
                                     authors_scores={"a": [0.1, 0.2], "b": [0.3, 0.1]},
                                     our_scores={"a": [0.1, 0.2], "b": [0.3, 0.10000001]})],
        not_covered=[NotCovered("Z", "no released code")])


def test_the_record_keeps_counts_and_verdicts_and_no_score(tmp_path):
    from common.oracle.core import RECORD_DIR, read_record

    record = _two_benchmark_oracle().record("stand-ins")
    assert (record["agreeing"], record["of"]) == (1, 2)
    assert record["benchmarks"]["X"] == {"agrees": True, "models": 1, "numbers": 1, "numbers_equal": 1,
                                         "decisions": 2, "decisions_differing": 0, "stated_reasons": []}
    assert record["benchmarks"]["Y"]["agrees"] is False
    assert record["benchmarks"]["Y"]["stated_reasons"] == ["a stated deviation"]
    assert record["not_covered"] == [{"benchmark": "Z", "why": "no released code"}]
    assert "score_gap" not in json.dumps(record) and "0.1" not in json.dumps(record)  # last bits vary by CPU kind
    assert read_record("p", tmp_path) is None
    (tmp_path / RECORD_DIR).mkdir()
    (tmp_path / RECORD_DIR / "p.json").write_text(json.dumps(record), encoding="utf-8")
    assert read_record("p", tmp_path) == record


def test_the_audit_shows_the_record_and_a_benchmark_that_disagrees():
    from common.audit.report import markdown

    record = _two_benchmark_oracle().record("the stand-ins")
    text = markdown("p", [], "mini", info={}, oracle=record)
    assert "## The authors' code as the oracle" in text
    assert "(`RAIVNLab/sugar-crepe`) run unmodified beside this workspace's on the stand-ins" in text
    assert "**it agrees on 1 of 2 benchmarks**" in text
    assert "| X | yes | 1 | 1 of 1 | 2 | 0 | - |" in text
    assert "| Y | **no** | 1 | 0 of 2 | 0 | 0 | a stated deviation |" in text
    assert "- Z: no released code" in text
    assert "authors' code" not in markdown("p", [], "mini", info={})


def test_each_committed_record_names_its_code_and_every_benchmark_agrees():
    """``results/oracle/<paper>.json``, rewritten by CI's rehearsal: every paper with an oracle has one, and it says
    the authors' code agreed everywhere it ran (the rehearsal fails otherwise, so a committed disagreement is stale)."""
    from common.oracle.core import read_record
    from common.oracle.run import oracle_papers
    from common.paths import RESULTS

    for paper in oracle_papers():
        record = read_record(paper, RESULTS)
        assert record is not None, paper
        assert record["paper"] == paper and record["code"] and all("@" in c for c in record["code"])
        assert record["of"] > 0 and record["agreeing"] == record["of"], paper


def test_a_registered_file_that_cannot_be_fetched_is_listed_and_the_rest_are_fetched(tmp_path, monkeypatch):
    """Offline with a mirror that lacks one of a release's files: the others are fetched, that one is named in
    ``unfetched`` (the plug-in then says what it did not run); nothing fetched at all is an error."""
    from common.oracle import authors
    from common.oracle.authors import OracleError, fetch_code
    from common.registry.errors import DownloadError
    from common.registry.sources import Source

    url = "https://raw.githubusercontent.com/o/r/0123456789abcdef0123456789abcdef01234567/"
    sources = [Source(key=f"code/o/r/{path}", group="authors-code", method="http", url=url + path,
                      dest=f"code/o/r/{path}") for path in ("main.py", "pkg/utils.py")]
    monkeypatch.setattr(authors, "sources_in_group", lambda group: sources)

    def fetch(key, data_root=None, progress=False):
        if key.endswith("utils.py"):
            raise DownloadError(f"could not fetch {key}: offline")
        (tmp_path / key).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / key).write_text("", encoding="utf-8")
        return tmp_path / key

    monkeypatch.setattr(authors, "fetch", fetch)
    code = fetch_code("o/r")
    assert code.root == tmp_path / "code" / "o" / "r" and code.unfetched == ("pkg/utils.py",)
    assert code.commit.startswith("01234567")
    monkeypatch.setattr(authors, "fetch", lambda key, **kw: (_ for _ in ()).throw(DownloadError("offline")))
    with pytest.raises(OracleError, match="none of its registered files could be fetched"):
        fetch_code("o/r")


def test_weights_for_the_authors_loader_are_written_whole_or_not_at_all(tmp_path, monkeypatch):
    target = tmp_path / "weights" / "model.pt"
    assert models.save({"model": {"w": torch.arange(3.0)}}, target) == target
    assert torch.equal(torch.load(target)["model"]["w"], torch.arange(3.0))

    def cut_short(obj, fh):
        fh.write(b"PK\x03\x04 part of an archive")
        raise RuntimeError("interrupted")

    monkeypatch.setattr(torch, "save", cut_short)
    with pytest.raises(RuntimeError, match="interrupted"):
        models.save({"model": {}}, target)
    assert torch.equal(torch.load(target)["model"]["w"], torch.arange(3.0))  # the previous file, untouched
    assert sorted(p.name for p in target.parent.iterdir()) == ["model.pt"]  # no part-file left behind
