"""Each task shape's scorer against a brute-force reference on a small random model, ties included.

The references encode every image and caption one at a time (batch 1) and decide by explicit comparisons or by
sorting, independently of the scorers' vectorised code; ties are made on purpose by repeating an image file or a
caption, which the engine encodes once, so the two sides tie exactly.
"""
from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from common.evaluation.engine import Engine, EngineConfig
from common.evaluation.scoring import classification, group, retrieval, selection
from common.evaluation.scoring.selection import (
    ARGMAX, STRICT, DecisionRule, negative_position, negative_position_counts)
from common.files.tasks import (
    ClassificationSet, DatasetError, GroupItem, ImageToTextItem, RetrievalSet, TextToImageItem)
from common.miniworld.claims import sample_claim
from common.miniworld.render import NATURAL, render
from common.miniworld.scene import sample_scene


@pytest.fixture(scope="module")
def scenes(tmp_path_factory):
    """Eight rendered images with two true captions each; image 7 is a byte copy of image 0 (a tie maker)."""
    root = tmp_path_factory.mktemp("scoring")
    rng = random.Random(3)
    paths, captions = [], []
    for i in range(7):
        scene = sample_scene(rng)
        path = root / f"{i}.png"
        render(scene, 48, NATURAL, seed=i).save(path)
        paths.append(path)
        captions.append([sample_claim(rng, scene).text() for _ in range(2)])
    shutil.copy(paths[0], root / "7.png")
    paths.append(root / "7.png")
    captions.append(["a red star.", "two green hearts."])
    return paths, captions


@pytest.fixture
def engine(tiny_model, tmp_path):
    return Engine(tiny_model, EngineConfig(image_batch_size=3, text_batch_size=4, progress=False), cache_root=tmp_path)


@torch.no_grad()
def image_vec(model, path: Path) -> np.ndarray:
    return model.encode_images(model.load_image(path).unsqueeze(0))[0].double().numpy()


@torch.no_grad()
def text_vec(model, text: str) -> np.ndarray:
    return model.encode_tokens(model.tokenize([text]))[0].double().numpy()


# ----------------------------------------------------------------------------------------------------------------
# selection
# ----------------------------------------------------------------------------------------------------------------
def test_rules_on_hand_made_scores():
    s = np.array
    assert STRICT.decide(s([0.5, 0.4, 0.3])) == (True, False)
    assert STRICT.decide(s([0.5, 0.5, 0.3])) == (False, True)
    assert ARGMAX.decide(s([0.5, 0.5, 0.3])) == (True, True)
    assert ARGMAX.decide(s([0.4, 0.5, 0.3])) == (False, False)
    # several positives: (c, c_p, c_n) as the hard-positives paper scores them
    both = DecisionRule("both above c_n", positives=(0, 1), negatives=(2,))
    one = DecisionRule("exactly one above c_n", positives=(0, 1), negatives=(2,), quantifier="exactly_one")
    either = DecisionRule("either above c_n", positives=(0, 1), negatives=(2,), quantifier="any")
    assert both.decide(s([0.6, 0.5, 0.4])) == (True, False) and one.decide(s([0.6, 0.5, 0.4])) == (False, False)
    assert both.decide(s([0.6, 0.3, 0.4])) == (False, False) and one.decide(s([0.6, 0.3, 0.4])) == (True, False)
    assert either.decide(s([0.3, 0.3, 0.4])) == (False, False) and either.decide(s([0.3, 0.5, 0.4])) == (True, False)
    assert one.decide(s([0.6, 0.4, 0.4])) == (True, True)  # c_p ties c_n: a tie, and not a win
    with pytest.raises(ValueError):
        DecisionRule("bad", positives=(0,), negatives=(0, 1))
    with pytest.raises(ValueError):
        DecisionRule("short", positives=(0, 1), negatives=(2,)).decide(s([0.1, 0.2]))


def test_negative_position_is_the_hard_positives_codes_five_counts():
    """The five counts printed by the hard-positives code (``amitakamath/hard_positives@33addaae run_eval.py:99-116``
    "# (c, c'') > c'"), written as it writes them."""
    rng = np.random.default_rng(0)
    rows = [rng.integers(0, 4, size=3).astype(float) for _ in range(400)]  # small integers: many ties
    for c, cp, cn in rows:
        buckets = {
            "0,1": cn < cp and cn < c,
            "0": c > cn > cp,
            "1": cp > cn > c,
            "": cn > cp and cn > c,
            "tie": cn == cp or cn == c,
        }
        assert sum(buckets.values()) == 1
        assert buckets[negative_position((c, cp, cn), positives=(0, 1), negative=2)]


def test_selection_matches_a_per_item_loop_under_each_rule(tiny_model, engine, scenes):
    paths, captions = scenes
    items = []
    for i, path in enumerate(paths):
        other = captions[(i + 1) % len(paths)][0]
        items.append(ImageToTextItem(f"i2t/{i}", "g", path, (captions[i][0], captions[i][1], other)))
    items.append(ImageToTextItem("tie/0", "t", paths[0], ("a red circle.", "a red circle.", "a blue square.")))
    rules = [STRICT, ARGMAX, DecisionRule("two positives", positives=(0, 1)),
             DecisionRule("exactly one", positives=(0, 1), quantifier="exactly_one")]
    first = selection.image_to_text(engine, items, rules[0])
    for rule in rules:
        result = selection.rescore(first, rule) if rule is not STRICT else first
        assert result.rule == rule.name
        for it, outcome in zip(items, result.outcomes):
            img = image_vec(tiny_model, it.image)
            scores = [text_vec(tiny_model, c) @ img for c in it.captions]
            best_negative = max(scores[k] for k in range(len(scores)) if k not in rule.positives)
            wins = [scores[p] > best_negative or (rule.ties == "correct" and scores[p] == best_negative)
                    for p in rule.positives]
            expected = {"all": all(wins), "any": any(wins), "exactly_one": sum(wins) == 1}[rule.quantifier]
            assert outcome.correct == expected, (rule.name, it.item_id)
            assert np.allclose(outcome.scores, scores, atol=1e-6)
    tie = first.outcomes[-1]
    assert tie.tie and not tie.correct and selection.rescore(first, ARGMAX).outcomes[-1].correct
    counts = negative_position_counts(first, positives=(0, 1), negative=2)
    assert sum(counts["g"].values()) == len(paths)


def test_text_to_image_ties_on_identical_files(tiny_model, engine, scenes):
    paths, captions = scenes
    items = [TextToImageItem("t2i/0", "g", captions[0][0], (paths[0], paths[7], paths[1])),  # 0 and 7: same bytes
             TextToImageItem("t2i/1", "g", captions[1][0], (paths[1], paths[2], paths[3]))]
    result = selection.text_to_image(engine, items)
    assert result.outcomes[0].tie and not result.outcomes[0].correct
    assert selection.rescore(result, ARGMAX).outcomes[0].correct == (result.outcomes[0].scores[0] >= result.outcomes[0].scores[2])
    text = text_vec(tiny_model, captions[1][0])
    scores = [image_vec(tiny_model, p) @ text for p in items[1].images]
    assert result.outcomes[1].correct == (scores[0] > max(scores[1:]))
    with pytest.raises(DatasetError, match="mix"):
        selection.evaluate(engine, [items[0], ImageToTextItem("x", "g", paths[0], ("a", "b"))])


RULES = (STRICT, ARGMAX, DecisionRule("two positives", positives=(0, 1)),
         DecisionRule("either", positives=(0, 1), quantifier="any"),
         DecisionRule("exactly one", positives=(0, 1), quantifier="exactly_one", ties="correct"),
         DecisionRule("against 3", positives=(0,), negatives=(3,)))


def test_decide_rows_is_decide_on_every_row():
    scores = np.random.default_rng(0).integers(0, 4, (500, 4)).astype(np.float64)  # few levels: ties everywhere
    for rule in RULES:
        correct, tie = rule.decide_rows(scores)
        assert [(c, t) for c, t in zip(correct.tolist(), tie.tolist())] == [rule.decide(row) for row in scores]


def test_scores_are_the_per_item_products_bit_for_bit(engine, scenes):
    """The vectorised scorers write the very floats a per-item ``captions @ image`` loop wrote, so committed
    per-example scores do not move (a stacked matmul makes each item's BLAS call)."""
    paths, captions = scenes
    i2t = [ImageToTextItem(f"i2t/{i}", "g", p, (captions[i][0], captions[i][1], captions[i - 1][0]))
           for i, p in enumerate(paths)] + [ImageToTextItem("two", "g", paths[0], tuple(captions[0]))]
    emb = engine.embed(((it.image, it.item_id) for it in i2t), (c for it in i2t for c in it.captions))
    result = selection.image_to_text(engine, i2t)
    assert [o.scores for o in result.outcomes] == [
        tuple((emb.texts(it.captions) @ emb.images([it.image])[0]).tolist()) for it in i2t]
    t2i = [TextToImageItem(f"t2i/{i}", "g", captions[i][0], (p, paths[i - 1])) for i, p in enumerate(paths)]
    emb = engine.embed(((p, it.item_id) for it in t2i for p in it.images), (it.caption for it in t2i))
    assert [o.scores for o in selection.text_to_image(engine, t2i).outcomes] == [
        tuple((emb.images(it.images) @ emb.texts([it.caption])[0]).tolist()) for it in t2i]
    groups = [GroupItem(f"grp/{i}", "g", (paths[i], paths[i + 1]), (captions[i][0], captions[i + 1][1]))
              for i in range(7)]
    emb = engine.embed(((p, it.item_id) for it in groups for p in it.images), (c for it in groups for c in it.captions))
    for it, outcome in zip(groups, group.evaluate(engine, groups).outcomes):
        sim = emb.texts(list(it.captions)) @ emb.images(list(it.images)).T
        assert outcome.similarities == (tuple(sim[0].tolist()), tuple(sim[1].tolist()))
        assert (outcome.decisions, outcome.ties) == group.decide(sim)


def test_candidate_scores_add_in_the_per_item_order():
    rng = np.random.default_rng(1)
    for dim in (1, 33, 512, 768):
        candidates = rng.standard_normal((300, 3, dim)).astype(np.float32).astype(np.float64)
        queries = rng.standard_normal((300, dim)).astype(np.float32).astype(np.float64)
        per_item = np.stack([candidates[n] @ queries[n] for n in range(len(queries))])
        assert np.array_equal(selection.candidate_scores(candidates, queries), per_item)


# ----------------------------------------------------------------------------------------------------------------
# group (2 x 2)
# ----------------------------------------------------------------------------------------------------------------
def test_group_metrics_match_explicit_comparisons(tiny_model, engine, scenes):
    paths, captions = scenes
    items = [GroupItem(f"grp/{i}", "a" if i % 2 else "b", (paths[i], paths[i + 1]), (captions[i][0], captions[i + 1][0]))
             for i in range(6)]
    items.append(GroupItem("grp/tie", "a", (paths[0], paths[7]), (captions[0][0], captions[1][0])))  # same image twice
    result = group.evaluate(engine, items)
    for it, outcome in zip(items, result.outcomes):
        s = [[text_vec(tiny_model, c) @ image_vec(tiny_model, i) for i in it.images] for c in it.captions]
        expected = {"Ipos2T": s[0][0] > s[1][0], "Ineg2T": s[1][1] > s[0][1],
                    "Tpos2I": s[0][0] > s[0][1], "Tneg2I": s[1][1] > s[1][0]}
        expected["I2T"] = expected["Ipos2T"] and expected["Ineg2T"]
        expected["T2I"] = expected["Tpos2I"] and expected["Tneg2I"]
        expected["group"] = expected["I2T"] and expected["T2I"]
        assert outcome.decisions == expected, it.item_id
    tie = result.outcomes[-1]
    assert set(tie.ties) == {"Tpos2I", "Tneg2I"} and not tie.decisions["T2I"]
    assert result.tie_counts()["Tpos2I"] == 1
    lenient = group.evaluate(engine, items[-1:], ties="correct").outcomes[0]
    assert lenient.decisions["Tpos2I"] and lenient.decisions["Tneg2I"]
    acc = result.accuracy()
    assert acc["group"] <= min(acc["I2T"], acc["T2I"])
    assert set(result.by_group()) == {"a", "b"}


# ----------------------------------------------------------------------------------------------------------------
# retrieval
# ----------------------------------------------------------------------------------------------------------------
def _sorted_rank(scores: np.ndarray, right: np.ndarray, ties: str) -> int:
    """Position of the first right candidate after sorting by score, ties broken against (or for) the query."""
    tiebreak = right if ties == "wrong" else ~right  # at equal score: wrong candidates first under "wrong"
    order = sorted(range(len(scores)), key=lambda j: (-scores[j], bool(tiebreak[j])))
    return next(pos for pos, j in enumerate(order) if right[j])


@pytest.mark.parametrize("chunk_size", [1, 3, 256])
def test_retrieval_recall_matches_sorting(tiny_model, engine, scenes, chunk_size):
    paths, captions = scenes
    texts, owner = [], []
    for i, caps in enumerate(captions):
        for c in caps:
            texts.append(c)
            owner.append(i)
    texts += captions[0]  # image 0's captions again, as image 7's (its byte copy): exact ties in image-to-text
    owner += [7, 7]
    data = RetrievalSet("toy", tuple(paths), tuple(texts), tuple(owner))
    result = retrieval.evaluate(engine, data, chunk_size=chunk_size)
    img = np.stack([image_vec(tiny_model, p) for p in paths])
    txt = np.stack([text_vec(tiny_model, t) for t in texts])
    sims = txt @ img.T
    for ties in ("wrong", "correct"):
        r = retrieval.evaluate(engine, data, ties=ties, chunk_size=chunk_size)
        t2i = [_sorted_rank(sims[k], np.arange(len(paths)) == owner[k], ties) for k in range(len(texts))]
        i2t = [_sorted_rank(sims[:, i], np.asarray(owner) == i, ties) for i in range(len(paths))]
        assert r.t2i_ranks.tolist() == t2i and r.i2t_ranks.tolist() == i2t, ties
    assert result.t2i_ties >= 1  # images 0 and 7 are the same bytes
    assert result.i2t_ties >= 1
    recall = result.recall((1, 5, 10))
    assert recall["t2i_recall_at_10"] == 1.0 and 0 <= recall["t2i_recall_at_1"] <= recall["t2i_recall_at_5"]
    assert recall["i2t_recall_at_1"] == float((result.i2t_ranks < 1).mean())


def test_retrieval_set_rejects_orphans():
    with pytest.raises(DatasetError, match="no caption"):
        RetrievalSet("x", (Path("a"), Path("b")), ("c",), (0,))
    with pytest.raises(DatasetError, match="point to no image"):
        RetrievalSet("x", (Path("a"),), ("c",), (1,))


# ----------------------------------------------------------------------------------------------------------------
# zero-shot classification
# ----------------------------------------------------------------------------------------------------------------
def test_classification_matches_per_class_loops(tiny_model, engine, scenes):
    paths, _ = scenes
    names = ("circle", "square", "star", "heart", "circle again")
    templates = ("a photo of a {}.", "a drawing of a {}.")
    data = ClassificationSet.from_templates("toy", paths, [0, 1, 2, 3, 0, 1, 2, 4], names, templates)
    result = classification.evaluate(engine, data, chunk_size=3)
    weights = []
    for name in names:
        mean = np.mean([text_vec(tiny_model, t.format(name)) for t in templates], axis=0)
        weights.append(mean / np.linalg.norm(mean))
    logits = np.stack([image_vec(tiny_model, p) for p in paths]) @ np.stack(weights).T
    for ties in ("wrong", "correct"):
        r = classification.evaluate(engine, data, ties=ties)
        expected = [_sorted_rank(logits[i], np.arange(len(names)) == y, ties) for i, y in enumerate(data.labels)]
        assert r.ranks.tolist() == expected
    top = result.top_k((1, 5))
    assert top["top5"] == 1.0 and top["top1"] == float(np.mean(logits.argmax(1) == np.asarray(data.labels)))
    assert result.predictions.tolist() == logits.argmax(1).tolist()


def test_classification_ties_between_identical_classifiers(engine, scenes):
    paths, _ = scenes
    data = ClassificationSet("dup", tuple(paths[:2]), (0, 1), ("circle", "circle"), (("a circle.",), ("a circle.",)))
    result = classification.evaluate(engine, data)
    assert result.ties == 2 and result.top_k((1,))["top1"] == 0.0
    assert classification.evaluate(engine, data, ties="correct").top_k((1,))["top1"] == 1.0


def test_equal_gallery_rows_tie_wherever_they_sit():
    """A gallery row repeated at the end (a BLAS tail column) scores exactly as its first copy: a tie, not a win."""
    from common.evaluation.scoring.retrieval import _first_copies, _ranks

    rng = np.random.default_rng(0)
    gallery = rng.standard_normal((37, 512)).astype(np.float32)
    gallery = np.concatenate([gallery, gallery[:1]])  # row 37 is row 0 again
    assert _first_copies(gallery)[-1] == 0 and _first_copies(gallery[:-1]) is None
    query = gallery[:1] * np.float32(1.5)
    labels = np.arange(38)
    labels[-1] = 99  # the copy is a wrong candidate for query 0
    for chunk in (1, 3):
        ranks, ties = _ranks(query, gallery, np.array([0]), labels, "wrong", chunk)
        assert ties == 1 and ranks.tolist() == [1]
        ranks, _ = _ranks(query, gallery, np.array([0]), labels, "correct", chunk)
        assert ranks.tolist() == [0]
