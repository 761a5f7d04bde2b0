"""CoN-CLIP (Singh et al.), Tables 2-3 and 7-9 in the full profile: CC-Neg's evaluation split (the released
``ccneg_preprocessed.pt``'s last 40,000 entries, ``papers.conclip.ccneg``) scored by every obtainable model of
``conclip.full.models`` (row, as the audit names it -> zoo model).

Each entry is one image and two captions, c (candidate 0) and the negated c' (candidate 1, commas removed as the
authors' loader removes them). The authors' released evaluation (their README's snippet) decides by ``argmax`` over
[s(I, c), s(I, c')] with c first, jaisidhsingh/CoN-CLIP@503388ac README.md:131 "preds = sim.argmax(dim=-1)" against
jaisidhsingh/CoN-CLIP@503388ac README.md:133 "labels = torch.zeros(batch_size)", so a tie counts as correct
(``common.scoring.selection.ARGMAX``); the paper's text (Sec. 3.2.1) calls s(I, c) <= s(I, c') wrong ("signifies an
incorrect prediction"), the strict rule, reported beside it with the number of ties. CLIP, Neg-CLIP, CoN-CLIP, FLAVA
and LaCLIP are scored by the cosine of the image and text embeddings, as the snippet scores CLIP
(jaisidhsingh/CoN-CLIP@503388ac README.md:120-124 "image_features = F.normalize(image_features, dim=-1)"); BLIP by its
image-text matching head's match probability (``PAIR_SCORES``; ``common.scoring.matching``): how the authors scored
BLIP and FLAVA is not in the release (the paper's Sec. 3.2.1 says only "a VLM computes a similarity-based match
score"), so the audit's BLIP and FLAVA rows say "rule unverified".

Stage ``tables-full`` (``python -m papers.conclip.tables_full``) writes ``results/conclip/full/`` as one output group:

* ``table3.csv``: one row per model (row, model, label, ccneg, ccneg_strict, ccneg_ties, n), in points; Table 2's
  rows are its rows other than CoN-CLIP (the paper scores Table 2 on all of CC-Neg, Table 3 on the split: only the
  split is scored here, and the audit compares both tables with it);
* ``by_word_k.csv``: Tables 7-9's cells (row, model, word, k, n, accuracy, strict_accuracy), each cell the split's
  entries with that K whose raw negated caption uses that word (an entry can be in several words' cells; empty
  cells are left out, their size 0 is in ``context.json``);
* ``summary.json``: DVC metrics, at most twelve flat numbers (each row's accuracy, CoN-CLIP minus CLIP);
* ``context.json``: the data file and its sha256, how the split divides, each cell's size beside the paper's,
  the models (fingerprints, how each was scored, ties), the models left out and why, where the authors' code and
  the paper differ;
* ``predictions/``: per model, every item's two scores, decision (argmax) and tie; ``predictions/items.csv`` gives
  each item's K and negation words, so every cell can be recounted from the files.

A model that cannot be loaded stops the stage with the zoo's message and the note of its download entry; with
``skip_unavailable`` it is left out of the tables and named in ``context.json``.
"""
from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from common.errors import WorkspaceError
from common.io import output_group, staged_to_final, write_csv_atomic, write_json_atomic
from common.scoring.selection import ARGMAX, STRICT, SelectionResult, rescore
from common.zoo import ModelFactory
from common.zoo.available import each_model
from common.zoo import create_model as zoo_create
from papers.conclip.ccneg import EVAL_SIZE, NEGATION_WORDS, CCNegSet, load_ccneg

DATA_FILES = ("papers/conclip/models.toml", "papers/conclip/sources.toml")
"""Read at run time (``common.stage_deps``): the zoo entries of ``conclip.full.models``' names (CoN-CLIP; NegCLIP is
in the shared zoo file), and the download entries of the data and, for a model that cannot be loaded, of its
checkpoint."""
TABLE3_FIELDS = ("row", "model", "label", "ccneg", "ccneg_strict", "ccneg_ties", "n")
BY_WORD_K_FIELDS = ("row", "model", "word", "k", "n", "accuracy", "strict_accuracy")
ITEM_FIELDS = ("item_id", "k", "words", "image")
SUMMARY_MAX = 12
"""DVC metrics: at most this many numbers; the rest is in the CSVs."""


class ConclipFullError(WorkspaceError):
    """Nothing to score, or the scores do not line up with the items."""


@dataclass(frozen=True)
class PairScore:
    """How a model with an image-text matching head scores an (image, caption) pair here."""

    score: str
    """``common.zoo.hf.SCORES``: ``itm`` = the ITM head's match probability."""
    why: str


PAIR_SCORES: dict[str, PairScore] = {
    "blip": PairScore("itm", "this workspace's choice for BLIP (Salesforce's retrieval model, COCO fine-tuned, the "
                             "paper's Table 2 row): softmax(itm_score)[:, 1] per (image, caption), the ITC embeddings "
                             "not used. How the authors scored BLIP is not in the release"),
}
"""Per zoo ``arch`` of a non-open_clip backend, the pair score used here; any other model is scored by the cosine of
its embeddings (FLAVA too: ``get_image_features``/``get_text_features``, first token, normalised)."""
CONTRASTIVE = "contrastive (cosine of normalised image and text embeddings)"
PAPER_VS_CODE: dict[str, str] = {
    "rule": "paper (Sec. 3.2.1): correct iff phi(I, c) > phi(I, c'), phi(I, c) <= phi(I, c') 'signifies an incorrect "
            "prediction' (strict). Code: "
            'jaisidhsingh/CoN-CLIP@503388ac README.md:131 "preds = sim.argmax(dim=-1)", with c in column 0 '
            "(the README's evaluation snippet), so a tie counts as correct. table3.csv: ccneg = the code's rule, "
            "ccneg_strict = the paper's, ccneg_ties = how many differ",
    "split": "code: the last 40,000 entries, "
             'jaisidhsingh/CoN-CLIP@503388ac src/data/evaluation_datasets.py:21 "self.image_paths[-self.split_size:]"'
             "; Table 2 (paper: "
             "'the entire CC-Neg dataset') is scored here on the same split as Table 3 (the release evaluates no "
             "other split)",
    "by_k": "not in the release (no released file reads num_ops or groups by K); the paper: 'Scores are calculated "
            "over subset splits with the same number of predicate-object pairs' (Tables 7-12). Here: "
            "[i for i in num_ops[K][-M:] if N - 40000 <= i < N], M = min(40000, len(num_ops[K])) (data.k_cut counts "
            "indices of the split the [-M:] cut leaves out); the audit's rows say 'rule unverified'",
    "by_word": "not in the release (no released file groups by negation word); the paper: 'evaluation subset samples "
               "that use' the word (Tables 7-12). Here: ' ' + w + ' ' in ' ' + negative_prompt + ' ', on the raw "
               "negated caption (commas kept, case-sensitive); the audit's rows say 'rule unverified'",
    "captions": "code: the negated caption with every ',' removed, "
                'jaisidhsingh/CoN-CLIP@503388ac src/data/evaluation_datasets.py:42 "negative_prompt.replace("'
                ", the caption as released; the same here",
    "clip": "code: the README's snippet evaluates ViT-B/32, "
            'jaisidhsingh/CoN-CLIP@503388ac README.md:84 "ViT-B/32", '
            "as the paper's Table 2 says",
    "conclip_checkpoint": "code: the README loads a released checkpoint's 'model' entry into clip.load's model, "
                          'jaisidhsingh/CoN-CLIP@503388ac README.md:35 "model.load_state_dict(ckpt["; '
                          "here the released CoN-CLIP checkpoint of conclip.full.models, loaded the same way by the "
                          "zoo",
    "precision": "code: the README's snippet loads CLIP with clip.load on a GPU, whose weights are fp16 there "
                 '(openai/CLIP@d05afc43 clip/model.py:434 "convert_weights(model)"), and casts CoN-CLIP to fp32 '
                 'first (jaisidhsingh/CoN-CLIP@503388ac README.md:98 "model = model.float()", commented out for '
                 "CLIP). Here every model runs at the engine's precision (params.yaml engine.precision)",
    "blip_flava": "not in the release: how the authors scored BLIP and FLAVA (the paper, Sec. 3.2.1: 'a VLM computes "
                  "a similarity-based match score'). Here: BLIP's ITM head, FLAVA's embeddings' cosine; the audit's "
                  "BLIP and FLAVA rows say 'rule unverified'",
    "laclip": "not in the release: how the authors loaded LaCLIP (Tables 7-16). Here it runs with the activation it "
              "was trained with (papers/conclip/models.toml)",
}


# ------------------------------------------------------------------------------------------------------------------
# Scoring
# ------------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Scored:
    """One model's outcomes on the split (decided by ``ARGMAX``), and how its pair scores were computed."""

    row: str
    model: str
    label: str
    result: SelectionResult
    scoring: str


def pair_score(name: str) -> PairScore | None:
    """The pair score of a zoo model (``PAIR_SCORES``), or None for a cosine of embeddings."""
    from common.zoo import get_spec

    spec = get_spec(name)
    return None if spec.backend == "open_clip" else PAIR_SCORES.get(spec.arch)


def score_models(models: Mapping[str, str], ccneg: CCNegSet, engine_config=None, device: str = "cpu",
                 create: ModelFactory = zoo_create, skip_unavailable: bool = False
                 ) -> tuple[list[Scored], dict[str, str]]:
    """Every (row -> zoo model) on the split, in the given order, each decided by ``ARGMAX`` (the authors' rule).
    A model that cannot be loaded raises ``ModelUnavailable`` with the reason, or with ``skip_unavailable`` is
    returned by row with the reason."""
    from common.engine import Engine, EngineConfig
    from common.scoring import matching, selection
    from common.zoo import get_spec

    config = engine_config or EngineConfig()
    items = ccneg.items
    scored, skipped = [], {}
    for row, name, model in each_model(models, skipped, create=create, device=device,
                                       skip_unavailable=skip_unavailable, what="CC-Neg row"):
        pair = pair_score(name)
        if pair is None:
            result = selection.evaluate(Engine(model, config), items, ARGMAX)
            scoring = CONTRASTIVE
        else:
            if not hasattr(model, "match_scores"):
                raise ConclipFullError(f"CC-Neg row {row!r}: model {name!r} has no image-text matching head, but its "
                                       f"row is scored with one ({pair.why})")
            result = matching.image_to_text(model, items, ARGMAX, batch_size=config.image_batch_size,
                                            score=pair.score, progress=config.progress)
            scoring = f"{pair.score} ({pair.why})"
        if [o.item_id for o in result.outcomes] != [it.item_id for it in items]:
            raise ConclipFullError(f"CC-Neg row {row!r}: the outcomes of {name!r} are not in the items' order")
        scored.append(Scored(row, name, get_spec(name).label, result, scoring))
    return scored, skipped


# ------------------------------------------------------------------------------------------------------------------
# Tables
# ------------------------------------------------------------------------------------------------------------------
def _pct(x: float) -> float:
    return round(100.0 * float(x), 2)


def _correct(result: SelectionResult) -> np.ndarray:
    return np.array([o.correct for o in result.outcomes], dtype=bool)


def table3_row(s: Scored) -> dict:
    """Table 3's row of one model: both rules' accuracy (points), the ties, the split's size."""
    argmax, strict = _correct(s.result), _correct(rescore(s.result, STRICT))
    return {"row": s.row, "model": s.model, "label": s.label, "ccneg": _pct(argmax.mean()),
            "ccneg_strict": _pct(strict.mean()), "ccneg_ties": s.result.ties, "n": len(argmax)}


def word_k_rows(s: Scored, ccneg: CCNegSet) -> list[dict]:
    """Tables 7-9's cells of one model: per negation word and K, the cell's size and both rules' accuracy (an entry
    counts in every word its negated caption uses; empty cells are left out)."""
    argmax, strict = _correct(s.result), _correct(rescore(s.result, STRICT))
    ks = np.array([-1 if e.k is None else e.k for e in ccneg.entries])
    rows = []
    for word in NEGATION_WORDS:
        has_word = np.array([word in e.words for e in ccneg.entries], dtype=bool)
        for k in ccneg.table_ks:
            cell = has_word & (ks == k)
            if cell.any():
                rows.append({"row": s.row, "model": s.model, "word": word, "k": k, "n": int(cell.sum()),
                             "accuracy": _pct(argmax[cell].mean()), "strict_accuracy": _pct(strict[cell].mean())})
    return rows


def summary(rows: Sequence[Mapping]) -> dict[str, float]:
    """DVC metrics: each row's accuracy (the authors' rule) and, when both are scored, CoN-CLIP minus CLIP; at most
    ``SUMMARY_MAX`` numbers (rows past that are in table3.csv only)."""
    by_row = {r["row"]: r for r in rows}
    gain = {}
    if "clip" in by_row and "conclip" in by_row:
        gain["conclip_minus_clip_ccneg"] = round(by_row["conclip"]["ccneg"] - by_row["clip"]["ccneg"], 2)
    room = SUMMARY_MAX - len(gain)
    out = {f"{r['row'].replace('-', '_')}_ccneg": float(r["ccneg"]) for r in rows[:room]}
    return {**out, **gain}


def item_rows(ccneg: CCNegSet) -> list[dict]:
    return [{"item_id": e.item.item_id, "k": "" if e.k is None else e.k, "words": " ".join(sorted(e.words)),
             "image": Path(getattr(e.item.image, "path", e.item.image)).name} for e in ccneg.entries]


def write_outputs(out_dir: Path, scored: Sequence[Scored], ccneg: CCNegSet, context: Mapping) -> dict[str, Path]:
    """table3.csv, by_word_k.csv, summary.json, context.json and predictions/ as one output group."""
    from common.results import write_predictions

    rows = [table3_row(s) for s in scored]
    out_dir = Path(out_dir)
    with output_group(out_dir) as staging:
        paths = {
            "table3": write_csv_atomic(staging / "table3.csv", rows, TABLE3_FIELDS),
            "by_word_k": write_csv_atomic(staging / "by_word_k.csv",
                                          [c for s in scored for c in word_k_rows(s, ccneg)], BY_WORD_K_FIELDS),
            "summary": write_json_atomic(staging / "summary.json", summary(rows)),
            "context": write_json_atomic(staging / "context.json", dict(context)),
        }
        predictions = staging / "predictions"
        for s in scored:
            write_predictions(predictions / f"{s.model.replace('/', '__')}.csv", s.result)
        write_csv_atomic(predictions / "items.csv", item_rows(ccneg), ITEM_FIELDS)
        paths["predictions"] = predictions
    return {k: staged_to_final(p, staging, out_dir) for k, p in paths.items()}


def evaluate_tables(models: Mapping[str, str], ccneg: CCNegSet, out_dir: Path, engine_config=None,
                    device: str = "cpu", create: ModelFactory = zoo_create, skip_unavailable: bool = False,
                    context: Mapping | None = None) -> dict[str, Path]:
    """Score every model on the split and write the tables (nothing is written when a model fails, or when none
    could be scored)."""
    if not models:
        raise ConclipFullError("conclip.full.models is empty: no CC-Neg row to score")
    scored, skipped = score_models(models, ccneg, engine_config, device, create, skip_unavailable)
    if not scored:
        raise ConclipFullError(f"no model of conclip.full.models could be loaded: {skipped}")
    full_context = {
        **dict(context or {}), "profile": "full",
        "rule": "argmax over [s(I, c), s(I, c')] with c first (the authors' README snippet: a tie counts as "
                "correct); the strict rule (the paper's text: a tie is wrong) beside it",
        "data": {"file": str(ccneg.path), "sha256": ccneg.sha256, "images_dir": str(ccneg.images_dir),
                 **ccneg.counts()},
        "split_sizes": ccneg.split_sizes(),
        "models": {s.row: {"model": s.model, "label": s.label, "fingerprint": s.result.fingerprint,
                           "scoring": s.scoring, "rule": s.result.rule, "n": len(s.result.outcomes),
                           "ties": s.result.ties} for s in scored},
        "skipped": skipped,
        "paper_vs_code": PAPER_VS_CODE,
        "training": trained_here(scored),
    }
    return write_outputs(out_dir, scored, ccneg, full_context)


def trained_here(scored: Sequence[Scored]) -> dict[str, dict]:
    """Row -> the training record of each model trained here (the ``ft-<run>`` re-trainings: their sidecars, recipe
    included), which the audit names in every table's note for that row (Tables 2-3, 6, 7-12, 5/13/14, 16 all share
    the row ids); released models have no entry, even with a JSON file beside their weights (only ``build:``
    checkpoints: a released model's weights are never a run trained here)."""
    from common.training.records import training_context
    from common.zoo import get_spec

    return training_context({s.row: get_spec(s.model).checkpoint_path() for s in scored
                             if (get_spec(s.model).checkpoint or "").startswith("build:")})


# ------------------------------------------------------------------------------------------------------------------
# Entry point
# ------------------------------------------------------------------------------------------------------------------
def run_tables(args: argparse.Namespace) -> int:
    from common.evaluate import best_device, engine_config
    from common.params import own_section
    from common.paths import RESULTS
    from papers.conclip import ccneg as data

    params, section = own_section("conclip.full")
    device = args.device or best_device()
    pt_path = Path(args.data) if args.data else None
    images = Path(args.images) if args.images else None
    if pt_path is None or images is None:
        default_pt, default_images = data.default_paths()
        pt_path, images = pt_path or default_pt, images or default_images
    ccneg = load_ccneg(pt_path, images, args.eval_size or data.eval_size_for(params))
    context = {"device": device, "engine": params.get("engine", {})}
    paths = evaluate_tables(dict(section["models"]), ccneg, Path(args.out or RESULTS / "conclip" / "full"),
                            engine_config(params), device, create=zoo_create,
                            skip_unavailable=bool(section["skip_unavailable"]), context=context)
    for name, path in paths.items():
        print(f"{name}: {path}")
    print(paths["table3"].read_text())
    print(json.dumps(json.loads(paths["summary"].read_text()), indent=2))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m papers.conclip.tables_full", description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None,
                        help="ccneg_preprocessed.pt (default: the download registry's, <data root>/ccneg/)")
    parser.add_argument("--images", default=None, help="the folder of CC-Neg's JPEGs (default: <data root>/ccneg/"
                                                       "ccneg_images/cc3m_subset_images_extracted_final)")
    parser.add_argument("--eval-size", type=int, default=None,
                        help=f"the evaluation split: the file's last N entries (default: {EVAL_SIZE}, the authors' "
                             "configs.num_ccneg_eval_samples; with a cap, params.yaml full_inputs.cap)")
    parser.add_argument("--out", default=None, help="default: results/conclip/full")
    parser.add_argument("--device", default=None, help="default: cuda when available, else cpu")
    return run_tables(parser.parse_args(argv))


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
