"""Every citation checkable (``common.docs.citations``): every reference to an upstream file in the project is pinned to a
commit ``common/registry/upstream.toml`` lists, names its lines and quotes them; no machine path stands for the paper;
no file:line of another repository stands unpinned; each paper quote is in the paper's text and each upstream quote
whose file the mirror holds is in the cited lines. The checker's own rules are tested on files the tests write.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from common.docs import citations
from common.docs.citations import Found, check_paper_quotes, quotes, scan
from tests.shared_files import MIRROR, PAPER_TEXT_DIRS

SUGAR = "RAIVNLab/sugar-crepe@0047054b"


def test_every_reference_in_the_project_is_pinned_quoted_and_true():
    found = citations.shape(paper_dirs=PAPER_TEXT_DIRS, mirror=MIRROR)
    assert not found.problems, "\n".join(found.problems[:60])
    assert len(found.references) > 200 and {r.repo for r in found.references} >= {
        "mertyg/vision-language-models-are-bows", "vinid/neg_clip", "amitakamath/hard_positives",
        "jaisidhsingh/CoN-CLIP", "IMirandaM/BiVLC", "RAIVNLab/sugar-crepe"}


def test_the_mirror_and_the_papers_confirm_quotes_offline():
    """CI has no clones, but the mirror holds the authors' evaluation files at the pinned commits and the papers'
    texts are beside it: the quotes of those are checked in every run."""
    if not MIRROR.is_dir() or not any(d.is_dir() for d in PAPER_TEXT_DIRS):
        pytest.skip("no ../shared beside the clone")
    found = scan()
    checked, problems = citations.check_mirror_quotes(found, MIRROR)
    assert checked >= 20 and not problems
    checked, problems = check_paper_quotes(found, PAPER_TEXT_DIRS)
    assert checked >= 30 and not problems


def _write(root: Path, name: str, text: str) -> str:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return name


@pytest.mark.parametrize("text,problem", [
    (f'``{SUGAR} main_eval.py:15`` "model, _, transform"', None),
    (f"``{SUGAR} main_eval.py:15``, then nothing", "no quote"),
    (f'``{SUGAR} main_eval.py:15`` `"vit" in model_name` (a quote holding a double quote: in backticks)', None),
    (f"``{SUGAR}`` (the repository at a commit) and `a code span` after it", None),
    (f'``{SUGAR} main_eval.py:15,33-38`` "x = 1"', "one line or one range"),
    (f'``{SUGAR} main_eval.py`` "a quote"', "name the lines"),
    (f'``{SUGAR} main_eval.py:9-3`` "a quote"', "runs backwards"),
    (f'``{SUGAR} main_eval.py:3`` "ab"', "too short"),
    (f"``{SUGAR} data/swap_obj.json`` (a released data file, whole)", None),
    ('``RAIVNLab/sugar-crepe@v1.0 main_eval.py:3`` "a quote"', "pin a commit"),
    ('``RAIVNLab/sugar-crepe@1234567 main_eval.py:3`` "a quote"', "not a commit"),
    ('``someone/else@0047054b main_eval.py:3`` "a quote"', "not a repository"),
    ("the training code (mertyg/neg_clip) says", "vinid/neg_clip is"),
    ("as RAIVNLab/sugar-crepe's main_eval.py does", "unpinned"),
    ("as main_eval.py:15 does", "neither this project's file nor pinned"),
    ("the paper (aro.txt:357) says", "a machine path"),
    ("see /work/shared/papers/aro.txt", "a machine path"),
    ("this project's common/files/io.py and common/docs/citations.py", None),
    ("this project's common/files/io.py:99999", "neither this project's file"),
])
def test_the_shape_rules(tmp_path, text, problem):
    name = _write(tmp_path, "docs/page.md", text + "\n")
    found = scan(tmp_path, [name])
    if problem is None:
        assert not found.problems
    else:
        assert any(problem in p for p in found.problems), found.problems
        assert all(p.startswith("docs/page.md:1: ") for p in found.problems)


def test_a_python_comment_may_wrap_its_reference_and_quote(tmp_path):
    name = _write(tmp_path, "mod.py", f'x = 1  # as ``{SUGAR}\n# main_eval.py:15`` "model, _,\n# transform"\n')
    (ref,) = scan(tmp_path, [name]).references
    assert (ref.path, ref.lines, citations.fold(ref.quote), ref.line) == ("main_eval.py", "15", "model, _, transform", 1)


def test_toml_cites_with_a_quote_beside_the_source_and_papers_by_their_words(tmp_path):
    text = (f'[r]\nlr = {{value = 1, source = "{SUGAR} main_eval.py:3", quote = "the words"}}\n'
            f'wd = {{value = 1, source = "{SUGAR} main_eval.py:3"}}\n'
            'eps = {value = 1, source = "paper, Appendix A.3", quote = "learning rate is 1e-4"}\n')
    found = scan(tmp_path, [_write(tmp_path, "papers/sugarcrepe/recipes.toml", text)])
    assert [r.quote for r in found.references] == ["the words", None]
    assert len(found.problems) == 1 and "no quote" in found.problems[0]
    (q,) = found.paper_quotes
    assert (q.paper, q.quote) == ("sugarcrepe", "learning rate is 1e-4")
    papers = tmp_path / "texts"
    _write(papers, "sugarcrepe.txt", "The learning\nrate is 1e-4, and 63%percent6363\\% of 0.590.590.59 cells.\n")
    assert check_paper_quotes(found, [papers]) == (1, [])
    wrong = Found(paper_quotes=[citations.PaperQuote("f", 1, "sugarcrepe", "paper", "learning rate is 1e-3")])
    assert "does not say" in check_paper_quotes(wrong, [papers])[1][0]
    echoed = Found(paper_quotes=[citations.PaperQuote("f", 1, "sugarcrepe", "paper", "63% of 0.59 cells")])
    assert check_paper_quotes(echoed, [papers]) == (1, [])


def test_quotes_are_checked_against_a_clone_at_the_pinned_commit(tmp_path, monkeypatch):
    """``citations check --repos``: the commit, the file at it, the lines in the file and the quote in the lines."""
    clone = tmp_path / "repos" / "RAIVNLab+sugar-crepe"
    clone.mkdir(parents=True)
    git = ["git", "-C", str(clone), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (clone / "main_eval.py").write_text("import os\nmodel, _, transform = create()\n\nprint(model)\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    registry = tmp_path / "upstream.toml"
    registry.write_text(f'[repos."RAIVNLab/sugar-crepe"]\nwhat = "x"\ncommits = ["{commit}"]\n')
    monkeypatch.setattr(citations, "UPSTREAM_FILE", registry)
    try:
        pin = f"RAIVNLab/sugar-crepe@{commit[:8]}"
        text = (f'{pin} main_eval.py:2 "model, _, transform"\n{pin} main_eval.py:1 "transform"\n'
                f'{pin} main_eval.py:9 "print"\n{pin} missing.py:1 "import"\n')
        found = scan(tmp_path, [_write(tmp_path, "page.md", text)])
        assert not found.problems
        checked, problems = quotes(found, tmp_path / "repos")
        assert checked == {"RAIVNLab/sugar-crepe": 4}
        assert [p.split(": ", 1)[0] for p in problems] == ["page.md:2", "page.md:3", "page.md:4"]
        assert "do not say 'transform'" in problems[0] and "the file has 4 lines" in problems[1]
        assert "no file missing.py" in problems[2]
    finally:
        citations._project_lines.cache_clear()


def test_the_command_prints_the_count_and_fails_on_a_problem(tmp_path, monkeypatch, capsys):
    from common.cli import main

    monkeypatch.setattr(citations, "scanned_files", lambda root=None: [])
    assert main(["citations", "check"]) == 0
    assert "citations: ok" in capsys.readouterr().out
    monkeypatch.setattr(citations, "shape", lambda *a, **k: Found(problems=["x.md:1: wrong"]))
    assert main(["citations", "check"]) == 1
    assert "x.md:1: wrong" in capsys.readouterr().out
    assert main(["citations", "check", "--repos", str(tmp_path / "none")]) == 1
    assert "no such folder" in capsys.readouterr().err
