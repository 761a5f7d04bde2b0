"""Numbers the documentation takes from ``results/`` (``common.docs.docnumbers``): the committed docs agree with the
committed results; a moved result, an unknown file, row, column or key is caught and named."""
from __future__ import annotations

import json

import pytest

from common.docs import docnumbers as dn


@pytest.fixture
def results(tmp_path):
    root = tmp_path / "results"
    (root / "p").mkdir(parents=True)
    (root / "p" / "t.csv").write_text("model,group,acc,B | I2T\nA,x,0.5071,1\nA,y,0.25,2\nB,x,0.75,3\n")
    (root / "p" / "m.json").write_text(json.dumps({"a": {"b.c": [1, 2.345]}, "n": 12345}))
    return root


def test_every_marked_number_of_the_documentation_is_the_results():
    numbers = dn.marked()
    wrong = [f"{n.document}:{n.line}: {n.text!r} != {n.value!r}" for n in numbers if not n.agrees]
    assert not wrong, "\n".join(wrong) + "\n(python -m common docs numbers --write)"


@pytest.mark.parametrize("ref, value", [
    ("p/t.csv¦model=A¦group=y¦acc", "0.25"),
    ("p/t.csv¦group=x¦acc", "0.5071"),
    ("p/t.csv¦model=B¦acc¦%pct.1f", "75.0"),
    ("p/t.csv¦model=A¦acc¦%.2f", "0.51"),
    ("p/m.json¦a.b\\.c.1", "2.345"),
    ("p/m.json¦n¦%int", "12,345"),
    ("p/t.csv¦model=B¦B \\| I2T", "3"),
])
def test_a_marker_names_one_number(results, ref, value):
    assert dn.lookup(ref, "doc.md:1", results) == value


@pytest.mark.parametrize("ref, message", [
    ("p/none.csv¦acc", "results/p/none.csv does not exist"),
    ("p/t.csv¦model=C¦acc", "no row where model=C"),
    ("p/t.csv¦model=A¦score", "no column 'score'"),
    ("p/m.json¦a.x", "has no 'a.x'"),
    ("p/m.json¦a", "is not a number"),
    ("p/t.csv", "needs a file and where"),
])
def test_a_marker_that_names_nothing_is_an_error_naming_the_line(results, ref, message):
    with pytest.raises(dn.DocNumberError, match=message) as info:
        dn.lookup(ref, "doc.md:7", results)
    assert str(info.value).startswith("doc.md:7: ")


def test_write_fills_the_numbers_and_check_catches_a_stale_one(results, tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("B scores <!--n p/t.csv¦model=B¦acc¦%pct.1f-->70.0<!--/n-->% and A <!--n p/t.csv¦model=A¦acc-->x"
                   "<!--/n-->.\n")
    (stale,) = [n for n in dn.marked([doc], results) if n.ref.startswith("p/t.csv¦model=B")]
    assert (stale.text, stale.value, stale.agrees, stale.line) == ("70.0", "75.0", False, 1)
    assert dn.write([doc], results) == [doc]
    assert doc.read_text() == ("B scores <!--n1-->75.0<!--/n-->% and A <!--n2-->0.5071<!--/n-->.\n\n"
                               f"{dn.REFERENCES_HEAD}\nn1 = p/t.csv¦model=B¦acc¦%pct.1f\n"
                               "n2 = p/t.csv¦model=A¦acc\n-->\n")
    assert all(n.agrees for n in dn.marked([doc], results)) and dn.write([doc], results) == []


def test_a_number_in_a_table_carries_a_short_marker_and_a_wrong_one_is_caught(results, tmp_path):
    """The reference sits at the document's end, so a raw table row stays readable; a typed-over number is still a
    disagreement named by its line, a number shown twice shares one ID, and a new inline one gets the next ID."""
    doc = tmp_path / "doc.md"
    doc.write_text("| model | acc |\n|---|---|\n| A | <!--n4-->0.5071<!--/n--> |\n| B | <!--n9-->0.74<!--/n--> |\n"
                   "\nAgain: <!--n p/t.csv¦model=B¦acc-->0.75<!--/n-->, "
                   "<!--n p/t.csv¦model=A¦group=y¦acc-->0.25<!--/n-->\n"
                   f"\n{dn.REFERENCES_HEAD}\nn4 = p/t.csv¦group=x¦acc\nn9 = p/t.csv¦model=B¦acc\n-->\n")
    assert [(n.line, n.text, n.value, n.agrees) for n in dn.marked([doc], results)] == [
        (3, "0.5071", "0.5071", True), (4, "0.74", "0.75", False), (6, "0.75", "0.75", True),
        (6, "0.25", "0.25", True)]
    assert dn.write([doc], results) == [doc]
    assert doc.read_text().splitlines()[3:6] == ["| B | <!--n9-->0.75<!--/n--> |", "",
                                                 "Again: <!--n9-->0.75<!--/n-->, <!--n10-->0.25<!--/n-->"]
    assert doc.read_text().endswith("n9 = p/t.csv¦model=B¦acc\nn10 = p/t.csv¦model=A¦group=y¦acc\n-->\n")
    assert all(n.agrees for n in dn.marked([doc], results)) and dn.write([doc], results) == []


@pytest.mark.parametrize("references, message", [
    ("n9 = p/t.csv¦model=B¦acc\n", "doc.md:1: n4 has no reference in the numbers comment"),
    ("n4 = p/t.csv¦model=B¦acc\nn4 = p/t.csv¦model=A¦acc\n", "doc.md:5: not one new 'nID = reference' line"),
])
def test_a_marker_without_its_reference_is_an_error_naming_the_line(results, tmp_path, references, message):
    doc = tmp_path / "doc.md"
    doc.write_text(f"A <!--n4-->0.75<!--/n-->\n\n{dn.REFERENCES_HEAD}\n{references}-->\n")
    for run in (dn.marked, dn.write):
        with pytest.raises(dn.DocNumberError, match=message):
            run([doc], results)


def test_a_marker_shown_as_code_is_an_example_and_left_alone(results, tmp_path):
    doc = tmp_path / "doc.md"
    example = "<!--n p/none.csv¦acc-->1<!--/n-->"
    text = (f"Write `{example}` inline, or in a block:\n\n```markdown\n{example}\n```\n\n"
            "and a real one: <!--n p/t.csv¦model=B¦acc-->0<!--/n-->.\n")
    doc.write_text(text)
    (real,) = dn.marked([doc], results)
    assert (real.ref, real.line, real.value) == ("p/t.csv¦model=B¦acc", 7, "0.75")
    assert dn.write([doc], results) == [doc]
    assert doc.read_text() == (text.replace("<!--n p/t.csv¦model=B¦acc-->0<!--/n-->", "<!--n1-->0.75<!--/n-->")
                               + f"\n{dn.REFERENCES_HEAD}\nn1 = p/t.csv¦model=B¦acc\n-->\n")
