"""CoN-CLIP (Singh et al.), Tables 2-16 in the mini profile: the mini family, ARO's mini NegCLIP and the CoN-CLIP
fine-tunes of ``papers.conclip.train_mini`` on the rendered negation benchmark, zero-shot classification with standard
and negated prompts, and SugarCrepe's mini set.

Every model is scored once per benchmark:

* **CC-Neg analog** (Tables 2-3, 7-12): s(I, c) against s(I, c') per example; the authors' rule (``argmax`` over
  [c, c'] with c first: a tie counts as correct, jaisidhsingh/CoN-CLIP@503388ac README.md:131
  "preds = sim.argmax(dim=-1)") and the strict rule beside it; overall and per (negation word, K) cell with its size
  (a grouping the authors' release does not hold: ``papers.conclip.ccneg``).
* **Zero-shot classification** (Tables 4, 15, 16): the world's two label sets (``shapes``: 7 classes, the CIFAR-10
  analog; ``colored-shapes``: 56, the ImageNet analog) with one prompt per class, standard ("this is a photo of a
  red circle.") and negated ("this is not a photo of a red circle."); top-1 is the argmax class (the authors'
  zero-shot script is not in the release), and Delta = top-1(standard) - top-1(negated): a model that reads "not"
  picks the true class less often with the negated prompt.
* **Distractor mining** (Supplementary 0.B, eq. 4): each model picks, for each example's subject and negated object,
  the benchmark image maximising phi(x, s) - phi(x, o_n); the world knows whether the pick shows the subject and not
  the object, so the rule's precision is measured, not assumed.
* **SugarCrepe** (Tables 5, 13, 14, 6): SugarCrepe's mini set through SugarCrepe's own loader
  (``common.benchmarks.caption_negatives``), its strict rule, per category; Table 6's Replace / Add / Swap are the plain means of
  their categories (as Table 6's three columns average Table 14's). The columns and these row pieces are shared with
  the full profile (``papers.conclip.tables``).

Outputs in ``results/conclip/mini/`` (stage ``tables-mini``): ``table3.csv`` (every model on the benchmark; Table 2
is its rows without fine-tunes), ``by_word_k.csv`` (Tables 7-12), ``classification.csv`` (Tables 4, 15, 16),
``sugarcrepe.csv`` (Tables 5, 13, 14), ``table6.csv`` (the ablations), ``distractors.csv`` (eq. 4's distractor
mining on the benchmark's images, checked against the scene graphs), ``comparisons.json`` (the paper's findings with
paired-bootstrap intervals), ``summary.json`` (DVC metrics: twelve numbers), ``context.json``.
"""
from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from common.card.core import Measure, paired_difference, selection_measures
from common.io import sha256_file, write_csv_atomic, write_json_atomic, write_output_group
from common.jsonl import read_json, read_rows
from common.miniworld.negation import NEGATION_WORDS
from common.paths import build_dir
from common.scoring.classification import ClassificationResult
from common.scoring.selection import ARGMAX, STRICT, SelectionResult, rescore
from common.tasks import ClassificationSet, ImageToTextItem
from common.training.records import training_context
from common.zoo.trained import served
from papers.conclip.benchmark_mini import (
    KS, NEGATED_PROMPT, REMEDY, STANDARD_PROMPT, group_name, load_test_items)
from papers.conclip.runs import RUNS
from papers.conclip.tables import (
    MODEL_FIELDS, SUGARCREPE_CATEGORIES, SUGARCREPE_FIELDS, TABLE6_FIELDS, model_cells, pct, sugarcrepe_cells,
    table6_row)

CLASSIFICATION_SETS: tuple[str, ...] = ("shapes", "colored-shapes")
SUMMARY_KEYS: tuple[str, ...] = (
    "clip_ccneg", "negclip_ccneg", "conclip_ccneg", "conclip_minus_clip_ccneg_ci_low", "l1_ccneg", "l2_ccneg",
    "l1_l2_ccneg", "crepe_negate_l1_ccneg", "clip_delta", "conclip_delta", "conclip_minus_clip_sugarcrepe",
    "conclip_minus_clip_classification")
"""The DVC metrics (flat numbers, in points): CC-Neg accuracy of every row of Table 6 and of CLIP and NegCLIP, the
lower end of CoN-CLIP's gain over CLIP, the classification Delta of CLIP and CoN-CLIP, and CoN-CLIP's mean gain on
SugarCrepe and on standard-prompt classification; the rest is in ``comparisons.json`` and the CSVs."""


@dataclass(frozen=True)
class ModelEntry:
    """A table row: its id (``row``: the audit's key), zoo name, label, and (a fine-tune) its run and weights."""

    row: str
    name: str
    label: str
    run: str | None = None
    checkpoint: Path | None = None


def entries_for(base: str, family: Sequence[str], negclip: str, models_dir: Path) -> list[ModelEntry]:
    """The base model ("CLIP"), ARO's mini NegCLIP, the rest of the mini family, then every run."""
    rows = [ModelEntry("clip", base, f"CLIP ({base}, the mini family's ViT-B/32)"),
            ModelEntry("negclip", negclip, f"NegCLIP ({negclip}: ARO's mini NegCLIP of {base})")]
    rows += [ModelEntry(name.replace("/", "-"), name, f"{name} (the mini family)") for name in family if name != base]
    rows += [ModelEntry(run, f"conclip/mini-{run}", spec.label, run, Path(models_dir) / f"{run}.safetensors")
             for run, spec in RUNS.items()]
    return rows


@dataclass(frozen=True)
class ModelScores:
    negation: SelectionResult
    """The benchmark under the authors' rule (argmax; ``rescore`` gives the strict one)."""
    classification: dict[str, dict[str, ClassificationResult]]
    """Per label set, per prompt kind ('standard', 'negated')."""
    sugarcrepe: SelectionResult
    distractors: "DistractorMining"
    fingerprint: str


def prompt_sets(sets: Mapping[str, ClassificationSet]) -> dict[str, dict[str, ClassificationSet]]:
    """Each label set with one prompt per class, standard and negated."""
    from common.miniworld.classification import class_prompts

    return {name: {kind: ClassificationSet(f"{name}-{kind}", s.images, s.labels, s.class_names,
                                           tuple(tuple(class_prompts(c, (template,))) for c in s.class_names))
                   for kind, template in (("standard", STANDARD_PROMPT), ("negated", NEGATED_PROMPT))}
            for name, s in sets.items() if name in CLASSIFICATION_SETS}


@dataclass(frozen=True)
class SceneLine:
    """A line of the benchmark's ``scenes.jsonl``: an example's image, its scene graph, its subject's index, the
    indices of its caption's objects and which of them is negated."""

    filename: str
    scene: dict
    subject: int
    objects: list[int]
    negated_pair: int

    def names(self) -> list[str]:
        """The scene's objects as colour and shape ("red circle")."""
        return [f"{o['color']} {o['shape']}" for o in self.scene["objects"]]


def _check_scene_line(line: SceneLine) -> None:
    """Every index names an object of the scene, and every object has a colour and a shape."""
    objects = line.scene.get("objects") if isinstance(line.scene, dict) else None
    if not isinstance(objects, list) or not all(isinstance(o, dict) and {"color", "shape"} <= set(o) for o in objects):
        raise ValueError("'scene' needs 'objects', each with a 'color' and a 'shape'")
    if line.negated_pair >= len(line.objects):
        raise ValueError(f"'negated_pair' {line.negated_pair} is not one of its {len(line.objects)} objects")
    bad = [i for i in (line.subject, *line.objects) if not isinstance(i, int) or not 0 <= i < len(objects)]
    if bad:
        raise ValueError(f"object index {bad[0]!r} is not in a scene of {len(objects)} objects")


@dataclass(frozen=True)
class MiningPool:
    """Eq. 4 on the benchmark's own images: per example its subject and negated object ("a red circle"), and per
    image the colour-shape names of its objects (from ``scenes.jsonl``)."""

    images: tuple[Path, ...]
    subjects: tuple[str, ...]
    objects: tuple[str, ...]
    contents: tuple[frozenset[str], ...]

    @classmethod
    def load(cls, test_dir: Path) -> "MiningPool":
        from common.miniworld.lexicon import indefinite_article

        test_dir = Path(test_dir)
        images, subjects, objects, contents = [], [], [], []
        lines = read_rows(test_dir / "scenes.jsonl", SceneLine, "a negation example's scene", REMEDY,
                          check=_check_scene_line)
        for line in lines:
            names = line.names()
            subject, obj = names[line.subject], names[line.objects[line.negated_pair]]
            images.append(test_dir / "images" / line.filename)
            subjects.append(f"{indefinite_article(subject)} {subject}")
            objects.append(f"{indefinite_article(obj)} {obj}")
            contents.append(frozenset(names))
        return cls(tuple(images), tuple(subjects), tuple(objects), tuple(contents))


@dataclass(frozen=True)
class DistractorMining:
    """Eq. 4's top-1 pick for every example (its own image excluded) and whether the pick really shows the subject
    and not the negated object; ``chance``: the share of such images in the pool, averaged over examples."""

    picks: tuple[int, ...]
    correct: tuple[bool, ...]
    chance: float

    @property
    def precision(self) -> float:
        return float(np.mean(self.correct))


def mine(engine, pool: MiningPool) -> DistractorMining:
    from papers.conclip.distractors import mine_distractors

    emb = engine.embed(((p, f"mining image {i}") for i, p in enumerate(pool.images)),
                       [*pool.subjects, *pool.objects])
    picks = mine_distractors(emb.images(list(pool.images)), emb.texts(list(pool.subjects)),
                             emb.texts(list(pool.objects)), exclude=np.arange(len(pool.images)))[:, 0]
    name = [s.split(" ", 1)[1] for s in pool.subjects], [o.split(" ", 1)[1] for o in pool.objects]
    good = np.array([[name[0][m] in c and name[1][m] not in c for c in pool.contents] for m in range(len(picks))])
    np.fill_diagonal(good, False)
    chance = float(np.mean(good.sum(axis=1) / (len(pool.images) - 1)))
    return DistractorMining(tuple(int(p) for p in picks), tuple(bool(good[m, p]) for m, p in enumerate(picks)),
                            chance)


def score_models(entries: Sequence[ModelEntry], arch_of: Mapping[str, str], items: Sequence[ImageToTextItem],
                 sets: Mapping[str, Mapping[str, ClassificationSet]], sugarcrepe_items: Sequence[ImageToTextItem],
                 pool: MiningPool, engine_config=None, device: str = "cpu") -> dict[str, ModelScores]:
    from common.engine import Engine
    from common.scoring import classification, selection

    out = {}
    for e in entries:
        engine = Engine(served(e, arch_of[e.row], device, family="conclip-mini"), engine_config)
        out[e.row] = ModelScores(
            selection.evaluate(engine, items, ARGMAX),
            {name: {kind: classification.evaluate(engine, s) for kind, s in kinds.items()}
             for name, kinds in sets.items()},
            selection.evaluate(engine, sugarcrepe_items, STRICT), mine(engine, pool), engine.model.fingerprint)
    return out


def _accuracy(result: SelectionResult) -> float:
    return float(np.mean([o.correct for o in result.outcomes]))


def _top1(result: ClassificationResult) -> float:
    """Top-1: the argmax class (the first among equals) is the true one (the authors' count is not in the release)."""
    return float((result.predictions == result.labels).mean())


def model_row(e: ModelEntry, s: ModelScores) -> dict:
    strict = rescore(s.negation, STRICT)
    by_category = {g: v.accuracy for g, v in s.sugarcrepe.by_group().items()}
    row = {**model_cells(e.row, e.name, e.label, e.run),
           "ccneg": pct(_accuracy(s.negation)), "ccneg_strict": pct(_accuracy(strict)), "ccneg_ties": s.negation.ties}
    for name in CLASSIFICATION_SETS:
        standard, negated = (_top1(s.classification[name][k]) for k in ("standard", "negated"))
        row.update({f"{name}_top1": pct(standard), f"{name}_negated_top1": pct(negated),
                    f"{name}_delta": pct(standard - negated)})
    row["classification_top1"] = round(float(np.mean([row[f"{n}_top1"] for n in CLASSIFICATION_SETS])), 2)
    row["delta"] = round(float(np.mean([row[f"{n}_delta"] for n in CLASSIFICATION_SETS])), 2)
    row.update({"eq4_precision": pct(s.distractors.precision), "eq4_chance": pct(s.distractors.chance)})
    row.update(sugarcrepe_cells(by_category))
    return row


def word_k_rows(e: ModelEntry, s: ModelScores) -> list[dict]:
    """Tables 7-12's cells: per negation word and K, the split size and both rules' accuracy."""
    argmax, strict = s.negation.by_group(), rescore(s.negation, STRICT).by_group()
    return [{"row": e.row, "model": e.name, "word": w, "k": k, "n": argmax[g].n,
             "accuracy": pct(argmax[g].accuracy), "strict_accuracy": pct(strict[g].accuracy)}
            for w in NEGATION_WORDS for k in KS if (g := group_name(w, k)) in argmax]


def _paired_gain(a: SelectionResult, b: SelectionResult, n_resamples: int = 2000, seed: int = 0):
    """a - b in points on the benchmark, with a 95% paired-bootstrap interval over items."""
    from common.stats import bootstrap_mean_ci

    ids = [o.item_id for o in a.outcomes]
    if ids != [o.item_id for o in b.outcomes]:
        raise ValueError("paired gain: the two results hold different items")
    diff = 100.0 * (np.array([o.correct for o in a.outcomes], float) - np.array([o.correct for o in b.outcomes], float))
    return bootstrap_mean_ci(diff, n_resamples=n_resamples, seed=seed)


def _macro_measures(scores: Mapping[str, ModelScores], what: str) -> tuple[Measure, Measure]:
    """CoN-CLIP's and CLIP's per-example outcomes on SugarCrepe (its categories the strata: the table's number is
    their unweighted mean) or on the classification sets (standard prompts; the sets the strata)."""
    out = []
    for row in ("conclip", "clip"):
        s = scores[row]
        if what == "sugarcrepe":  # the macro average over the categories, as the card measures it
            out.append(selection_measures(s.sugarcrepe, what, "CoN-CLIP", "", "")[-1])
            continue
        results = {n: s.classification[n]["standard"] for n in CLASSIFICATION_SETS}
        ids = [f"{n}/{i}" for n, r in results.items() for i in range(len(r.labels))]
        correct = [c for r in results.values() for c in (r.predictions == r.labels)]
        strata = [n for n, r in results.items() for _ in range(len(r.labels))]
        out.append(Measure(what, "CoN-CLIP", what, "", tuple(ids), np.array(correct, float), tuple(strata)))
    return out[0], out[1]


def comparisons(rows: Mapping[str, Mapping], scores: Mapping[str, ModelScores]) -> dict:
    """The paper's findings against the mini runs (flat): CLIP near or below chance on negations (its interval),
    CoN-CLIP clearly above CLIP, the ablation ordering on the benchmark (Table 6: L1, L1+L2, L_conclip near
    the top, CREPE-Negate L1 below them, L2 lowest), accuracy falling with K, and the classification Delta; CoN-CLIP
    minus CLIP on SugarCrepe and on classification with paired intervals (``common.card.core``: resampled within each
    category or set, as the tables average them)."""
    from common.stats import bootstrap_mean_ci

    out: dict[str, float | bool | None] = {}
    clip = scores["clip"].negation
    ci = bootstrap_mean_ci(100.0 * np.array([o.correct for o in clip.outcomes], float), n_resamples=2000, seed=0)
    out.update({"clip_ccneg": rows["clip"]["ccneg"], "clip_ccneg_ci_low": round(ci.low, 2),
                "clip_ccneg_ci_high": round(ci.high, 2), "clip_near_or_below_chance": bool(ci.low <= 55.0)})
    for row in ("negclip", *RUNS):
        out[f"{row.replace('-', '_')}_ccneg"] = rows[row]["ccneg"]
    gain = _paired_gain(scores["conclip"].negation, clip)
    out.update({"conclip_minus_clip_ccneg": round(gain.estimate, 2), "conclip_minus_clip_ccneg_ci_low": round(gain.low, 2),
                "conclip_clearly_above_clip": bool(gain.low > 0)})
    top = min(rows[r]["ccneg"] for r in ("conclip", "l1", "l1-l2"))
    out["ablation_order_as_paper"] = bool(top > rows["crepe-negate-l1"]["ccneg"] > rows["l2"]["ccneg"])
    for row in ("clip", "conclip"):
        by_k = [np.mean([c["accuracy"] for c in word_k_rows(ModelEntry(row, "", ""), scores[row]) if c["k"] == k])
                for k in KS]
        out[f"{row}_k1_minus_k5"] = round(float(by_k[0] - by_k[-1]), 2)
    for what, (a, b) in {"sugarcrepe": _macro_measures(scores, "sugarcrepe"),
                         "classification": _macro_measures(scores, "classification")}.items():
        d = paired_difference(a, b)
        out.update({f"conclip_minus_clip_{what}_ci_low": round(d.low, 2),
                    f"conclip_minus_clip_{what}_ci_high": round(d.high, 2)})
    out.update({"clip_delta": rows["clip"]["delta"], "conclip_delta": rows["conclip"]["delta"],
                "conclip_minus_clip_sugarcrepe": round(float(np.mean(
                    [rows["conclip"][c] - rows["clip"][c] for c in SUGARCREPE_CATEGORIES])), 2),
                "conclip_minus_clip_classification": round(
                    rows["conclip"]["classification_top1"] - rows["clip"]["classification_top1"], 2),
                "clip_eq4_precision": rows["clip"]["eq4_precision"], "eq4_chance": rows["clip"]["eq4_chance"]})
    return out


TABLE3_FIELDS = (*MODEL_FIELDS, "ccneg", "ccneg_strict", "ccneg_ties")
CLASSIFICATION_FIELDS = ("row", "model", "label", *(f"{n}_{m}" for n in CLASSIFICATION_SETS
                                                    for m in ("top1", "negated_top1", "delta")),
                         "classification_top1", "delta")
BY_WORD_K_FIELDS = ("row", "model", "word", "k", "n", "accuracy", "strict_accuracy")
DISTRACTOR_FIELDS = ("row", "model", "label", "eq4_precision", "eq4_chance")


def write_tables(out_dir: Path, entries: Sequence[ModelEntry], scores: Mapping[str, ModelScores],
                 context: Mapping) -> dict[str, Path]:
    rows = {e.row: model_row(e, scores[e.row]) for e in entries}
    metrics = comparisons(rows, scores)

    def csv(name: str, fields: Sequence[str], picked: Sequence[Mapping]) -> Path:
        return write_csv_atomic(out_dir / name, [{k: r[k] for k in fields} for r in picked], fields)

    ordered = [rows[e.row] for e in entries]
    return {
        "table3": csv("table3.csv", TABLE3_FIELDS, ordered),
        "by_word_k": csv("by_word_k.csv", BY_WORD_K_FIELDS,
                         [c for e in entries for c in word_k_rows(e, scores[e.row])]),
        "classification": csv("classification.csv", CLASSIFICATION_FIELDS, ordered),
        "sugarcrepe": csv("sugarcrepe.csv", SUGARCREPE_FIELDS, ordered),
        "table6": csv("table6.csv", TABLE6_FIELDS, [table6_row(rows[r], rows[r], rows[r]["ccneg"],
                                                               rows[r]["classification_top1"]) for r in RUNS]),
        "distractors": csv("distractors.csv", DISTRACTOR_FIELDS, ordered),
        "comparisons": write_json_atomic(out_dir / "comparisons.json", metrics),
        "summary": write_json_atomic(out_dir / "summary.json", {k: metrics[k] for k in SUMMARY_KEYS}),
        "context": write_json_atomic(out_dir / "context.json", dict(context)),
    }


def evaluate_tables(entries: Sequence[ModelEntry], arch_of: Mapping[str, str], test_dir: Path,
                    sugarcrepe_manifest: Path, out_dir: Path, engine_config=None, device: str = "cpu",
                    context: Mapping | None = None) -> dict[str, Path]:
    """Score every model on the three benchmarks and write the tables as one output group."""
    from common.miniworld.classification import load_classification_sets
    from common.benchmarks.caption_negatives import PreparedSet

    items = load_test_items(Path(test_dir))
    sets = prompt_sets(load_classification_sets(Path(test_dir) / "classification"))
    sugarcrepe = PreparedSet.load(Path(sugarcrepe_manifest)).items()
    pool = MiningPool.load(Path(test_dir))
    scores = score_models(entries, arch_of, items, sets, sugarcrepe, pool, engine_config, device)
    full_context = {
        **dict(context or {}),
        "rules": {"ccneg": "argmax over [c, c'] (a tie counts as correct, as the authors' README snippet); strict "
                           "beside it",
                  "classification": "top-1 = argmax class; Delta = top-1(standard prompt) - top-1(negated prompt)",
                  "sugarcrepe": "strict (SugarCrepe's rule); folds are plain means of their categories",
                  "distractors": "eq. 4 (argmax phi(x, s) - phi(x, o_n)) over the benchmark's images, each example's "
                                 "own image excluded; correct when the pick shows the subject and not the negated "
                                 "object (scene graphs); chance: the share of such images in the pool"},
        "prompts": {"standard": STANDARD_PROMPT, "negated": NEGATED_PROMPT},
        "n": {"ccneg": len(items), "sugarcrepe": len(sugarcrepe),
              **{name: len(kinds["standard"].images) for name, kinds in sets.items()}},
        "models": {e.row: {"model": e.name, "label": e.label, "run": e.run, "fingerprint": scores[e.row].fingerprint,
                           "checkpoint_sha256": sha256_file(e.checkpoint) if e.checkpoint else None}
                   for e in entries},
    }
    return write_output_group(out_dir, lambda staging: write_tables(staging, entries, scores, full_context))


def _cmd_tables(args) -> int:
    from common import reproducible
    from common.evaluate import engine_config
    from common.params import own_section
    from common.paths import RESULTS
    from common.zoo import get_spec

    reproducible.reexec_pinned()
    reproducible.fix_threads()
    params, section = own_section("conclip.mini")
    models_dir = Path(args.models or build_dir("mini", "conclip") / "models")
    test_dir = Path(args.test or build_dir("mini", "conclip") / "test")
    entries = entries_for(section["base"], section["family"], section["negclip"], models_dir)
    base_arch = get_spec(section["base"]).arch
    arch_of = {e.row: (base_arch if e.run else get_spec(e.name).arch) for e in entries}
    trained = [e for e in entries if e.checkpoint is not None]
    finetune_manifest = Path(args.set or build_dir("mini", "conclip") / "finetune") / "manifest.json"
    context = {"profile": "mini", "base": section["base"], **reproducible.describe(),
               "test_set": {k: v for k, v in read_json(test_dir / "manifest.json", dict, REMEDY).items()
                            if k != "examples"},
               "finetune_set": read_json(finetune_manifest, dict, "run the mini-finetune-set stage"),
               "training": training_context({e.row: e.checkpoint for e in trained},
                                            ("trainer", "loss", "data", "final_loss", "frozen"),
                                            remedies={e.row: f"run the mini-finetune@{e.run} stage" for e in trained}),
               "note": "mini profile: the mini family and its fine-tunes on rendered scenes; not comparable to the "
                       "paper's numbers"}
    paths = evaluate_tables(entries, arch_of, test_dir,
                            Path(args.sugarcrepe or build_dir("mini", "sugarcrepe") / "manifest.json"),
                            RESULTS / "conclip" / "mini", engine_config(params), context=context)
    for name, path in paths.items():
        print(f"{name}: {path}")
    print(paths["table3"].read_text(), paths["table6"].read_text(), sep="\n")
    print(json.dumps(json.loads(paths["summary"].read_text()), indent=2))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m papers.conclip.tables_mini", description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=None, help="default: build/mini/conclip/models")
    parser.add_argument("--test", default=None, help="default: build/mini/conclip/test")
    parser.add_argument("--set", default=None, help="default: build/mini/conclip/finetune (its manifest)")
    parser.add_argument("--sugarcrepe", default=None, help="default: build/mini/sugarcrepe/manifest.json")
    return _cmd_tables(parser.parse_args(argv))


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
