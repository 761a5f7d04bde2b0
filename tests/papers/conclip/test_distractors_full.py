"""CoN-CLIP's eq. 4 against the released distractor mapping (full profile), on a tiny CC-Neg file, a tiny mapping and a
tiny COCO pool written here, encoded by a stand-in model whose features are a table the test holds: every column
of distractors.csv against a brute-force loop over the pool (ties included), the summary and context, the
hypothetical chunked merge rule (the authors' mining code is not in their release), the seeded sample, and the
refusals (named file and entry; nothing written)."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

import common.pipeline.params as common_params
from common.files.tasks import DatasetError
from common.zoo import ModelUnavailable
from papers.conclip import coco_pool, distractors_full as df

POOL = 12
CHUNK = 4
"""Three chunks of the code's rule (the stage's 5,000 is patched down to this)."""
TRAINING, EVAL = 10, 2
RNG = np.random.default_rng(7)
IMAGE_FEATURES = RNG.integers(-3, 4, size=(POOL, 4)) / 4  # quarters: every score below is exact in float32/64
IMAGE_FEATURES[2] = IMAGE_FEATURES[5] = 1.0  # two files, one embedding: a tie broken by pool index
SUBJECTS = RNG.integers(-4, 5, size=(TRAINING, 4)) / 4
OBJECTS = RNG.integers(-4, 5, size=(TRAINING, 4)) / 4
PAPER = RNG.integers(-4, 5, size=(TRAINING, 4)) / 4
SUBJECTS[0], OBJECTS[0] = 1.0, 0.0  # entry 0: score = sum of the image's features, best at images 2 and 5
NO_PAPER_SUBJECT = {3: "missing", 8: "None"}
TEXT_FEATURES = {**{f"present {m}": SUBJECTS[m] for m in range(TRAINING)},
                 **{f"absent {m}": OBJECTS[m] for m in range(TRAINING)},
                 **{f"subject {m}": PAPER[m] for m in range(TRAINING)}}
IDS = [int(i) for i in np.random.default_rng(3).permutation(np.arange(100, 100 + 7 * POOL, 7))]
"""COCO image ids in the captions file's order (not sorted): pool index j is the j-th smallest."""


class StandIn:
    """An ``EmbeddingModel`` whose features are the tables above: an image's red value names its row, a text is
    tokenised as its character codes and looked up."""

    name = "stand-in/eq4"
    fingerprint = "stand-in-eq4-v1"
    device = "cpu"

    def load_image(self, path: Path) -> torch.Tensor:
        with Image.open(path) as image:
            return torch.tensor([int(np.asarray(image.convert("RGB"))[0, 0, 0]) - 10])

    def encode_images(self, pixels: torch.Tensor) -> torch.Tensor:
        return torch.tensor(IMAGE_FEATURES[pixels[:, 0].numpy()], dtype=torch.float32)

    def tokenize(self, texts) -> torch.Tensor:
        out = torch.zeros((len(texts), 32), dtype=torch.long)
        for i, text in enumerate(texts):
            out[i, :len(text)] = torch.tensor([ord(c) for c in text])
        return out

    def encode_tokens(self, tokens: torch.Tensor) -> torch.Tensor:
        texts = ["".join(chr(c) for c in row if c) for row in tokens.tolist()]
        return torch.tensor(np.stack([TEXT_FEATURES[t] for t in texts]), dtype=torch.float32)


def stand_in(name: str, device: str = "cpu") -> StandIn:
    return StandIn()


# ------------------------------------------------------------------------------------------------------------------
# The tiny release
# ------------------------------------------------------------------------------------------------------------------
def annotation(m: int) -> dict:
    sop = {"negative-prompt": f"a thing, not absent {m}", "exclusion-prompt": f"present {m}",
           "sop_chosen_object": f"absent {m}",
           "sop_decomposition": {"subject": f"subject {m}", "object-predicate-pairs": [{"object": f"absent {m}"}]}}
    if NO_PAPER_SUBJECT.get(m) == "missing":
        del sop["sop_decomposition"]["subject"]
    elif m in NO_PAPER_SUBJECT:
        sop["sop_decomposition"]["subject"] = NO_PAPER_SUBJECT[m]
    return {"json": {"caption": f"caption {m}"}, "sop_data": sop}


def write_ccneg(path: Path, annotations: list | None = None) -> Path:
    """``ccneg_preprocessed.pt`` in the released layout; the evaluation entries lack eq. 4's texts (never read)."""
    annotations = annotations or [annotation(m) for m in range(TRAINING)] + \
        [{"json": {"caption": "eval"}, "sop_data": {"negative-prompt": "no eval"}} for _ in range(EVAL)]
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"image_paths": [f"/x/{i}.jpg" for i in range(len(annotations))], "annotations": annotations,
                "num_ops": {1: list(range(len(annotations)))}}, path)
    return path


def write_pool(root: Path) -> list[Path]:
    """COCO train 2017's captions file and images under ``root`` as coco_pool expects; returns the pool in order."""
    captions = root / coco_pool.CAPTIONS
    captions.parent.mkdir(parents=True, exist_ok=True)
    captions.write_text(json.dumps({"images": [{"id": i, "file_name": f"{i:012d}.jpg"} for i in IDS],
                                    "annotations": []}), encoding="utf-8")
    folder = root / coco_pool.IMAGES
    folder.mkdir(parents=True, exist_ok=True)
    pool = [folder / f"{i:012d}.jpg" for i in sorted(IDS)]
    for j, path in enumerate(pool):  # PNG bytes under COCO's .jpg names: PIL reads the content
        Image.fromarray(np.full((4, 4, 3), (10 + j, 0, 0), dtype=np.uint8)).save(path, format="PNG")
    return pool


def brute_scores(s: np.ndarray, o: np.ndarray) -> list[float]:
    return [float(sum((s[d] - o[d]) * IMAGE_FEATURES[j][d] for d in range(4))) for j in range(POOL)]


def brute_order(scores: list[float]) -> list[int]:
    return sorted(range(POOL), key=lambda j: (-scores[j], j))


def brute_code_rule(scores: list[float], k: int) -> list[int]:
    winners = []
    for chunk, start in enumerate(range(0, POOL, CHUNK)):
        best = max(range(start, start + CHUNK), key=lambda j: (scores[j], -j))
        winners.append((scores[best], chunk, best))
    return [j for _, _, j in sorted(winners)[:k]]


def released_rows() -> list[list[int]]:
    rows = []
    for m in range(TRAINING):
        scores = brute_scores(SUBJECTS[m], OBJECTS[m])
        order = brute_order(scores)
        if m == 0:
            rows.append([5, 2, order[2]])  # image 5 ties our top-1 (image 2) exactly
        elif m in (1, 2):
            rows.append(order[:3])
        elif m == 3:
            rows.append([order[0], order[4], order[5]])
        elif m in (4, 5, 6):
            rows.append(brute_code_rule(scores, 3))
        else:
            rows.append(order[-1:-4:-1])  # eq. 4's three worst images
    return rows + [[0, 1, 2]] * EVAL  # rows past the training entries are allowed (and unread)


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("release")
    mapping = root / "ccneg" / "distractor_image_mapping.pt"
    write_ccneg(root / "ccneg" / "ccneg_preprocessed.pt")
    torch.save(released_rows(), mapping)
    write_pool(root)
    return {"root": root, "data": root / "ccneg" / "ccneg_preprocessed.pt", "mapping": mapping}


def params(n: int = 100, top_k: int = 5) -> dict:
    return {"engine": {"num_workers": 0},
            "conclip": {"full": {"distractors": {"n": n, "seed": 0, "model": "stand-in/eq4", "top_k": top_k}}}}


@pytest.fixture(scope="module")
def outputs(release, tmp_path_factory) -> Path:
    """The stage's entry point, parameters and zoo patched: every training entry (n exceeds them), top_k = 5."""
    out = tmp_path_factory.mktemp("results") / "conclip" / "full"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(common_params, "stage_params", lambda stage, **_: params())
        mp.setenv("DVC_STAGE", "papers/conclip/dvc.yaml:distractors-full")  # as `dvc repro` sets it
        mp.setattr(df, "zoo_create", stand_in)
        mp.setattr(df, "CODE_CHUNK", CHUNK)
        assert df.main(["--data", str(release["data"]), "--mapping", str(release["mapping"]), "--data-root",
                        str(release["root"]), "--out", str(out), "--device", "cpu", "--eval-size", str(EVAL)]) == 0
    return out


def _rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def expected_rows(pool: list[Path]) -> list[dict]:
    """Every column, from the feature tables by loops over the pool."""
    released = released_rows()
    out = []
    for m in range(TRAINING):
        scores = brute_scores(SUBJECTS[m], OBJECTS[m])
        order = brute_order(scores)
        rel, top = released[m][0], order[0]
        rank = order.index(rel) + 1
        code = brute_code_rule(scores, 3)
        row = {"entry": m, "model": "stand-in/eq4", "subject": f"present {m}", "negated_object": f"absent {m}",
               "released_top1": rel, "ours_top1": top, "released_in_top_1": int(rank <= 1),
               "released_in_top_5": int(rank <= 5), "released_in_top_10": int(rank <= 10), "released_rank": rank,
               "ours_score": scores[top], "released_score": scores[rel], "score_gap": scores[top] - scores[rel],
               "released_in_ours_top_k": len(set(released[m]) & set(order[:5])), "code_rule_top1": code[0],
               "code_rule_agrees": int(code[0] == rel), "code_rule_row_agrees": int(code == released[m]),
               "released_row": " ".join(map(str, released[m])), "ours_top_k": " ".join(map(str, order[:5])),
               "code_rule_row": " ".join(map(str, code)), "released_top1_image": pool[rel].name,
               "ours_top1_image": pool[top].name}
        if m in NO_PAPER_SUBJECT:
            row.update({"paper_subject": "", "paper_top1": "", "paper_agrees": "", "paper_released_rank": ""})
        else:
            paper = brute_order(brute_scores(PAPER[m], OBJECTS[m]))
            row.update({"paper_subject": f"subject {m}", "paper_top1": paper[0], "paper_agrees": int(paper[0] == rel),
                        "paper_released_rank": paper.index(rel) + 1})
        out.append(row)
    return out


def test_every_column_matches_a_brute_force_loop_over_the_pool(outputs, release):
    written = _rows(outputs / "distractors.csv")
    assert list(written[0]) == list(df.DISTRACTOR_FIELDS)
    expected = expected_rows(sorted((release["root"] / coco_pool.IMAGES).iterdir()))
    assert len(written) == TRAINING  # every training entry, none of the evaluation split
    for got, want in zip(written, expected):
        assert set(got) == set(want)
        for field, value in want.items():
            if field in ("ours_score", "released_score", "score_gap"):
                assert float(got[field]) == pytest.approx(value, abs=1e-9), (want["entry"], field)
            else:
                assert got[field] == str(value), (want["entry"], field)
    by_entry = {int(r["entry"]): r for r in written}
    tie = by_entry[0]  # images 2 and 5 share an embedding: ours is the lower index, the release's ranks second
    assert (tie["ours_top1"], tie["released_top1"], tie["released_rank"], float(tie["score_gap"])) == ("2", "5", "2", 0)
    assert all(by_entry[m]["released_in_top_1"] == "1" for m in (1, 2, 3))
    assert all(by_entry[m]["code_rule_row_agrees"] == "1" for m in (4, 5, 6))
    assert all(int(by_entry[m]["released_rank"]) == POOL for m in (7, 8, 9))


def test_summary_and_context(outputs, release):
    expected = expected_rows(sorted((release["root"] / coco_pool.IMAGES).iterdir()))
    summary = json.loads((outputs / "distractors_summary.json").read_text())
    assert list(summary) == list(df.SUMMARY_KEYS) and all(isinstance(v, float) for v in summary.values())
    paper = [r for r in expected if r["paper_top1"] != ""]
    pct = lambda values: round(100 * float(np.mean(values)), 2)  # noqa: E731
    assert summary == pytest.approx({
        "n_entries": TRAINING, "pool_size": POOL,
        "top1_agreement": pct([r["released_in_top_1"] for r in expected]),
        "released_in_top_5": pct([r["released_in_top_5"] for r in expected]),
        "released_in_top_10": pct([r["released_in_top_10"] for r in expected]),
        "released_rank_median": float(np.median([r["released_rank"] for r in expected])),
        "score_gap_mean": float(np.mean([r["score_gap"] for r in expected])),
        "score_gap_median": float(np.median([r["score_gap"] for r in expected])),
        "code_rule_top1_agreement": pct([r["code_rule_agrees"] for r in expected]),
        "code_rule_row_agreement": pct([r["code_rule_row_agrees"] for r in expected]),
        "paper_subject_top1_agreement": pct([r["paper_agrees"] for r in paper]),
        "paper_vs_code_texts_top1_agreement": pct([r["paper_top1"] == r["ours_top1"] for r in paper])}, abs=1e-6)
    assert summary["top1_agreement"] == 30.0 and summary["code_rule_row_agreement"] >= 30.0
    context = json.loads((outputs / "distractors_context.json").read_text())
    assert context["model"] == {"name": "stand-in/eq4", "label": "stand-in/eq4", "fingerprint": "stand-in-eq4-v1"}
    assert context["pool"]["size"] == POOL and context["pool"]["first"] == f"{min(IDS):012d}.jpg"
    import hashlib

    assert context["data"]["ccneg"]["sha256"] == hashlib.sha256(release["data"].read_bytes()).hexdigest()
    assert context["data"]["mapping"] == {"file": str(release["mapping"]), "rows": TRAINING + EVAL, "k": 3,
                                          "sha256": hashlib.sha256(release["mapping"].read_bytes()).hexdigest()}
    assert context["data"]["ccneg"]["training_entries"] == TRAINING
    assert context["sample"] == {**context["sample"], "n_requested": 100, "n": TRAINING, "seed": 0, "of": TRAINING}
    assert context["texts"]["paper_subject_missing"] == 2 and "exclusion-prompt" in context["texts"]["subject"]
    ties = sum(r["released_top1"] != r["ours_top1"] and r["score_gap"] == 0 for r in expected)
    assert context["released_ties_ours"] == ties >= 1
    assert context["rules"]["top_k"] == 5 and str(CHUNK) in context["rules"]["code_rule"]
    assert context["device"] == "cpu" and context["engine"] == {"num_workers": 0}
    assert set(context["paper_vs_code"]) >= {"texts", "selection", "model"}


def test_rank_and_the_codes_merge_rule_on_hand_made_scores():
    scores = np.array([[0.1, 0.9, 0.9, 0.2, 0.5, 0.3, 0.0, 0.8],
                       [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]])
    # row 0, chunks of 3: winners 1 (0.9, the lower of two), 4 (0.5), 7 (0.8); ascending: 4, 7, 1
    # row 1, all equal: winners 0, 3, 6 (each chunk's lowest index); equal values keep chunk order
    assert df.code_rule_rows(scores, 3, chunk_size=3).tolist() == [[4, 7, 1], [0, 3, 6]]
    assert df.code_rule_rows(scores, 1, chunk_size=3).tolist() == [[4], [0]]
    assert df.rank_of(scores, np.array([2, 5])).tolist() == [2, 6]  # tie with image 1 -> second; all tie -> index
    picks = df.mine_distractors(np.eye(8), scores, np.zeros_like(scores), top_k=8)
    for row in range(2):
        assert df.rank_of(scores[[row] * 8], picks[row]).tolist() == list(range(1, 9))
    with pytest.raises(df.DistractorsFullError, match="k=4 with 3 chunks of 3"):
        df.code_rule_rows(scores, 4, chunk_size=3)


def test_the_sample_is_seeded_without_repeats():
    a = df.sample_entries(50, 10, seed=0)
    assert a.tolist() == sorted(set(a.tolist())) and len(a) == 10 and 0 <= a.min() and a.max() < 50
    assert a.tolist() == df.sample_entries(50, 10, seed=0).tolist()
    assert a.tolist() != df.sample_entries(50, 10, seed=1).tolist()
    assert df.sample_entries(5, 10, seed=0).tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(df.DistractorsFullError, match="n must be positive"):
        df.sample_entries(5, 0, seed=0)


def _evaluate(release, out: Path, data: Path | None = None, mapping: Path | None = None, **kw):
    pool = sorted((release["root"] / coco_pool.IMAGES).iterdir())
    args = {"n": 100, "seed": 0, "model": "stand-in/eq4", "top_k": 5, "create": stand_in, "chunk_size": CHUNK,
            "eval_size": EVAL, **kw}
    return df.evaluate_distractors(data or release["data"], mapping or release["mapping"], pool, out, **args)


def test_refusals_name_the_file_and_the_entry_and_write_nothing(release, tmp_path):
    out = tmp_path / "out"
    bad = [annotation(m) for m in range(TRAINING)] + [annotation(0)] * EVAL
    del bad[4]["sop_data"]["exclusion-prompt"]
    bad[6]["sop_data"]["sop_chosen_object"] = ["not", "a string"]
    path = write_ccneg(tmp_path / "bad" / "ccneg_preprocessed.pt", bad)
    with pytest.raises(DatasetError, match=r"2 bad entries") as exc:
        _evaluate(release, out, data=path)
    assert "entry 4: annotations[4]['sop_data']['exclusion-prompt'] is missing" in str(exc.value)
    assert "entry 6: annotations[6]['sop_data']['sop_chosen_object'] is a list" in str(exc.value)
    short = tmp_path / "short.pt"
    torch.save(released_rows()[:TRAINING - 1], short)
    with pytest.raises(df.DistractorsFullError, match=rf"short.pt: {TRAINING - 1} rows for the {TRAINING} training "
                                                      rf"entries .*entry {TRAINING - 1} has no row"):
        _evaluate(release, out, mapping=short)
    outside = tmp_path / "outside.pt"
    torch.save([[0, 1, POOL]] + released_rows()[1:], outside)
    with pytest.raises(DatasetError, match=rf"outside.pt: entry 0: pool index {POOL} is outside the pool of {POOL}"):
        _evaluate(release, out, mapping=outside)
    with pytest.raises(df.DistractorsFullError, match=rf"top_k={POOL + 1} with a pool of {POOL} images"):
        _evaluate(release, out, top_k=POOL + 1)
    with pytest.raises(df.DistractorsFullError, match="keeps 3 images per entry.* 1 chunks of 5000"):
        _evaluate(release, out, chunk_size=5000)
    few = write_ccneg(tmp_path / "few" / "ccneg_preprocessed.pt", [annotation(0)] * EVAL)
    with pytest.raises(DatasetError, match="leave no training entries"):
        _evaluate(release, out, data=few)
    pickled = tmp_path / "pickled.pt"
    torch.save({"image_paths": [], "annotations": [], "num_ops": {}, "x": Path("a")}, pickled)
    with pytest.raises(DatasetError, match=r"pickled.pt: refused by torch.load\(weights_only=True\)"):
        _evaluate(release, out, data=pickled)
    with pytest.raises(DatasetError, match="no such file"):
        _evaluate(release, out, data=tmp_path / "absent.pt")
    assert not out.exists() or not any(out.glob("distractors*"))


def test_an_unavailable_model_and_a_missing_pool(release, tmp_path, monkeypatch):
    def unavailable(name, device="cpu"):
        raise ModelUnavailable(f"model {name!r}: weights not found")

    with pytest.raises(ModelUnavailable, match=r"conclip.full.distractors.model: model 'stand-in/eq4': weights not"):
        _evaluate(release, tmp_path / "out", create=unavailable)
    monkeypatch.setattr(common_params, "stage_params", lambda stage, **_: params())
    monkeypatch.setenv("DVC_STAGE", "papers/conclip/dvc.yaml:distractors-full")  # as `dvc repro` sets it
    monkeypatch.setattr(df, "zoo_create", stand_in)
    with pytest.raises(coco_pool.CocoPoolError, match="captions_train2017.json: missing; .*fetch coco-train2017"):
        df.main(["--data", str(release["data"]), "--mapping", str(release["mapping"]), "--data-root",
                 str(tmp_path / "empty"), "--out", str(tmp_path / "out")])
    assert not (tmp_path / "out" / "distractors.csv").exists()
