"""CoN-CLIP (Singh et al.), the CC-Neg tables: one stage module for both profiles (``python -m papers.conclip.tables
--profile mini|full``; stages ``tables-mini`` and ``tables-full``). What each profile scores and writes, and why one
module: the README's "What is reproduced, and how" and "Outputs and notebooks" (``Inputs``, ``FILES``).

The authors' released evaluation (their README's snippet) decides by ``argmax`` over [s(I, c), s(I, c')] with c first,
jaisidhsingh/CoN-CLIP@503388ac README.md:131 "preds = sim.argmax(dim=-1)" against
jaisidhsingh/CoN-CLIP@503388ac README.md:133 "labels = torch.zeros(batch_size)", so a tie counts as correct
(``selection.ARGMAX``); the paper's text (Sec. 3.2.1) calls s(I, c) <= s(I, c') wrong ("signifies an incorrect
prediction"), the strict rule, reported beside it with the number of ties. A model is scored by the cosine of its
image and text embeddings, as the snippet scores CLIP
(jaisidhsingh/CoN-CLIP@503388ac README.md:120-124 "image_features = F.normalize(image_features, dim=-1)"), or, for
BLIP, by its image-text matching head's match probability (``PAIR_SCORES``): how the authors scored BLIP and FLAVA is
not in the release (the paper's Sec. 3.2.1 says only "a VLM computes a similarity-based match score"), so the audit's
BLIP and FLAVA rows say "rule unverified". With ``conclip.full.skip_unavailable`` a model that cannot be loaded is
left out and named in ``context.json``; otherwise it stops the stage.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from common.benchmarks.caption_negatives import PreparedSet
from common.card.core import paired_difference
from common.errors import WorkspaceError
from common.evaluation.engine import Engine, EngineConfig
from common.evaluation.evaluate import best_device, engine_config
from common.evaluation.outcomes import percent
from common.evaluation.results import write_predictions
from common.evaluation.scoring import classification, matching, selection
from common.evaluation.scoring.classification import ClassificationResult
from common.evaluation.scoring.selection import ARGMAX, STRICT, SelectionResult, rescore
from common.files.io import sha256_file, write_csv_atomic, write_json_atomic, write_output_group
from common.files.jsonl import read_json, read_rows
from common.files.tasks import ClassificationSet, ImageToTextItem
from common.miniworld.classification import class_prompts, load_classification_sets
from common.miniworld.lexicon import indefinite_article
from common.miniworld.negation import NEGATION_WORDS
from common.paths import RESULTS, build_dir
from common.pipeline import reproducible
from common.pipeline.cli import print_written
from common.pipeline.params import own_section
from common.pipeline.profile_stage import pinned_cpu, profile_stage_parser
from common.training.records import training_context
from common.zoo import ModelFactory, create_model as zoo_create, get_spec
from common.zoo.available import each_model
from common.zoo.trained import served
from papers.conclip import benchmark_mini, ccneg as data
from papers.conclip.benchmark_mini import NEGATED_PROMPT, REMEDY, STANDARD_PROMPT, group_name, load_test_items
from papers.conclip.ccneg import EVAL_SIZE, CCNegSet, load_ccneg
from papers.conclip.columns import (
    MODEL_FIELDS, SUGARCREPE_FIELDS, TABLE6_FIELDS, ccneg_difference, classification_cells, classification_fields,
    classification_measure, model_cells, sugarcrepe_cells, sugarcrepe_measure, table6_row)
from papers.conclip.distractors import mine_distractors
from papers.conclip.runs import RUNS

DATA_FILES = ("papers/conclip/models.toml", "papers/conclip/sources.toml")
"""Read at run time (``common.pipeline.stage_deps``): the zoo entries and the data's and checkpoints' downloads."""


class ConclipTablesError(WorkspaceError):
    """Nothing to score, or the scores do not line up with the items."""


# --- How a model scores a pair ---
@dataclass(frozen=True)
class PairScore:
    """How a model with an image-text matching head scores a pair: ``score`` one of ``common.zoo.hf.SCORES``."""

    score: str
    why: str


PAIR_SCORES: dict[str, PairScore] = {
    "blip": PairScore("itm", "this workspace's choice for BLIP (Salesforce's retrieval model, COCO fine-tuned, the "
                             "paper's Table 2 row): softmax(itm_score)[:, 1] per (image, caption), the ITC embeddings "
                             "not used. How the authors scored BLIP is not in the release"),
}
"""Per zoo ``arch`` of a non-open_clip backend, the pair score used here; any other model is scored by the cosine of
its embeddings (FLAVA too: ``get_image_features``/``get_text_features``, first token, normalised)."""
CONTRASTIVE = "contrastive (cosine of normalised image and text embeddings)"


def pair_score(name: str) -> PairScore | None:
    spec = get_spec(name)
    return None if spec.backend == "open_clip" else PAIR_SCORES.get(spec.arch)


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
"""Where the authors' code and the paper differ, and what this workspace does (the full profile's ``context.json``)."""


# --- The benchmark and the models: what differs between the profiles ---
@dataclass(frozen=True)
class NegationSet:
    """CC-Neg or its mini analog: the items (c first, c' second) and Tables 7-12's non-empty cells in the tables'
    order, each (negation word, K, mask over the items); a full item may be in several words' cells."""

    items: tuple[ImageToTextItem, ...]
    cells: tuple[tuple[str, int, np.ndarray], ...]
    item_rows: tuple[dict, ...] = ()
    """``predictions/items.csv``'s rows (the full profile: each item's K and negation words)."""

    @classmethod
    def rendered(cls, items: Sequence[ImageToTextItem]) -> "NegationSet":
        """The mini benchmark: an item's group names its one word and K (``benchmark_mini.group_name``)."""
        groups = np.array([it.group for it in items])
        cells = ((w, k, groups == group_name(w, k)) for w in NEGATION_WORDS for k in benchmark_mini.KS)
        return cls(tuple(items), tuple(c for c in cells if c[2].any()))

    @classmethod
    def released(cls, ccneg: CCNegSet) -> "NegationSet":
        """CC-Neg's split: an entry counts in every word its raw negated caption uses, at its K."""
        ks = np.array([-1 if e.k is None else e.k for e in ccneg.entries])
        words = [np.array([w in e.words for e in ccneg.entries], dtype=bool) for w in data.NEGATION_WORDS]
        cells = ((w, k, has_word & (ks == k)) for w, has_word in zip(data.NEGATION_WORDS, words)
                 for k in ccneg.table_ks)
        item_rows = ({"item_id": e.item.item_id, "k": "" if e.k is None else e.k, "words": " ".join(sorted(e.words)),
                      "image": Path(getattr(e.item.image, "path", e.item.image)).name} for e in ccneg.entries)
        return cls(tuple(ccneg.items), tuple(c for c in cells if c[2].any()), tuple(item_rows))


@dataclass(frozen=True)
class ModelEntry:
    """A table row: its id (``row``: the audit's key), zoo name, label, and (a mini fine-tune) its run and weights."""

    row: str
    name: str
    label: str
    run: str | None = None
    checkpoint: Path | None = None


@dataclass(frozen=True)
class Inputs:
    """What one profile scores and on what (``mini_inputs``, ``full_inputs``): ``models`` row -> model name in the
    tables' order; ``entries`` the mini rows' runs and weights (else the zoo's label); ``create`` None: the caller's
    factory; ``more`` the mini profile's further benchmarks."""

    profile: str
    models: Mapping[str, str]
    negation: NegationSet
    context: Mapping[str, Any]
    entries: Mapping[str, ModelEntry] = field(default_factory=dict)
    create: ModelFactory | None = None
    pair_score: Callable[[str], PairScore | None] = pair_score
    more: "MiniBenchmarks | None" = None
    skip_unavailable: bool = False


def entries_for(base: str, family: Sequence[str], negclip: str, models_dir: Path) -> list[ModelEntry]:
    rows = [ModelEntry("clip", base, f"CLIP ({base}, the mini family's ViT-B/32)"),
            ModelEntry("negclip", negclip, f"NegCLIP ({negclip}: ARO's mini NegCLIP of {base})")]
    rows += [ModelEntry(name.replace("/", "-"), name, f"{name} (the mini family)") for name in family if name != base]
    rows += [ModelEntry(run, f"conclip/mini-{run}", spec.label, run, Path(models_dir) / f"{run}.safetensors")
             for run, spec in RUNS.items()]
    return rows


def mini_inputs(entries: Sequence[ModelEntry], arch_of: Mapping[str, str], test_dir: Path, sugarcrepe_manifest: Path,
                context: Mapping | None = None) -> Inputs:
    """``entries`` served from their checkpoints (as the architecture ``arch_of`` names by row)."""
    by_name = {e.name: e for e in entries}
    if len(by_name) != len(entries):
        raise ConclipTablesError(f"two mini rows share a model name: {[e.name for e in entries]}")
    items = load_test_items(Path(test_dir))
    more = MiniBenchmarks(prompt_sets(load_classification_sets(Path(test_dir) / "classification")),
                          tuple(PreparedSet.load(Path(sugarcrepe_manifest)).items()), MiningPool.load(Path(test_dir)))

    def create(name: str, device: str = "cpu"):
        return served(by_name[name], arch_of[by_name[name].row], device, family="conclip-mini")

    return Inputs("mini", {e.row: e.name for e in entries}, NegationSet.rendered(items), {
        **dict(context or {}),
        "rules": {"ccneg": "argmax over [c, c'] (a tie counts as correct, as the authors' README snippet); strict "
                           "beside it",
                  "classification": "top-1 = argmax class; Delta = top-1(standard prompt) - top-1(negated prompt)",
                  "sugarcrepe": "strict (SugarCrepe's rule); folds are plain means of their categories",
                  "distractors": "eq. 4 (argmax phi(x, s) - phi(x, o_n)) over the benchmark's images, each example's "
                                 "own image excluded; correct when the pick shows the subject and not the negated "
                                 "object (scene graphs); chance: the share of such images in the pool"},
        "prompts": {"standard": STANDARD_PROMPT, "negated": NEGATED_PROMPT},
        "n": {"ccneg": len(items), "sugarcrepe": len(more.sugarcrepe),
              **{name: len(kinds["standard"].images) for name, kinds in more.sets.items()}}},
        # every mini model is an open_clip model of the mini family, or trained from one: scored by its embeddings
        entries={e.row: e for e in entries}, create=create, pair_score=lambda name: None, more=more)


def full_inputs(models: Mapping[str, str], ccneg: CCNegSet, context: Mapping | None = None,
                skip_unavailable: bool = False) -> Inputs:
    """The full profile: the zoo's ``models`` (row -> zoo model) on CC-Neg's evaluation split."""
    if not models:
        raise ConclipTablesError("conclip.full.models is empty: no CC-Neg row to score")
    return Inputs("full", dict(models), NegationSet.released(ccneg), {
        **dict(context or {}), "profile": "full",
        "rule": "argmax over [s(I, c), s(I, c')] with c first (the authors' README snippet: a tie counts as "
                "correct); the strict rule (the paper's text: a tie is wrong) beside it",
        "data": {"file": str(ccneg.path), "sha256": ccneg.sha256, "images_dir": str(ccneg.images_dir),
                 **ccneg.counts()},
        "split_sizes": ccneg.split_sizes()}, skip_unavailable=skip_unavailable)


# --- The mini profile's further benchmarks ---
CLASSIFICATION_SETS: tuple[str, ...] = ("shapes", "colored-shapes")


def prompt_sets(sets: Mapping[str, ClassificationSet]) -> dict[str, dict[str, ClassificationSet]]:
    return {name: {kind: ClassificationSet(f"{name}-{kind}", s.images, s.labels, s.class_names,
                                           tuple(tuple(class_prompts(c, (template,))) for c in s.class_names))
                   for kind, template in (("standard", STANDARD_PROMPT), ("negated", NEGATED_PROMPT))}
            for name, s in sets.items() if name in CLASSIFICATION_SETS}


@dataclass(frozen=True)
class SceneLine:
    """A line of the benchmark's ``scenes.jsonl`` (``papers.conclip.sets_mini``)."""

    filename: str
    scene: dict
    subject: int
    objects: list[int]
    negated_pair: int


def _check_scene_line(line: SceneLine) -> None:
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
    """Eq. 4 on the benchmark's own images: per example its subject and negated object, per image its objects."""

    images: tuple[Path, ...]
    subjects: tuple[str, ...]
    objects: tuple[str, ...]
    contents: tuple[frozenset[str], ...]

    @classmethod
    def load(cls, test_dir: Path) -> "MiningPool":
        test_dir = Path(test_dir)
        images, subjects, objects, contents = [], [], [], []
        lines = read_rows(test_dir / "scenes.jsonl", SceneLine, "a negation example's scene", REMEDY,
                          check=_check_scene_line)
        for line in lines:
            names = [f"{o['color']} {o['shape']}" for o in line.scene["objects"]]
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


@dataclass(frozen=True)
class MiniScores:
    """One model on the mini profile's further benchmarks (classification per label set and prompt kind)."""

    classification: dict[str, dict[str, ClassificationResult]]
    sugarcrepe: SelectionResult
    distractors: DistractorMining


@dataclass(frozen=True)
class MiniBenchmarks:
    """The mini profile's benchmarks beyond CC-Neg's analog."""

    sets: Mapping[str, Mapping[str, ClassificationSet]]
    sugarcrepe: tuple[ImageToTextItem, ...]
    pool: MiningPool

    def score(self, engine) -> MiniScores:
        return MiniScores({name: {kind: classification.evaluate(engine, s) for kind, s in kinds.items()}
                           for name, kinds in self.sets.items()},
                          selection.evaluate(engine, self.sugarcrepe, STRICT), mine(engine, self.pool))


# --- Scoring: both profiles ---
@dataclass(frozen=True)
class Scored:
    """One model's outcomes on the negation benchmark (``ARGMAX``) and (mini) its further benchmarks."""

    entry: ModelEntry
    result: SelectionResult
    scoring: str
    more: MiniScores | None = None

    @property
    def row(self) -> str:
        return self.entry.row

    @property
    def model(self) -> str:
        return self.entry.name


def score_models(inputs: Inputs, engine_config=None, device: str = "cpu", create: ModelFactory = zoo_create
                 ) -> tuple[list[Scored], dict[str, str]]:
    """Every (row -> model) of ``inputs``, in order (with ``skip_unavailable``, a model that cannot load skipped)."""
    config = engine_config or EngineConfig()
    items = inputs.negation.items
    scored, skipped = [], {}
    for row, name, model in each_model(inputs.models, skipped, create=inputs.create or create, device=device,
                                       skip_unavailable=inputs.skip_unavailable, what="CC-Neg row"):
        pair = inputs.pair_score(name)
        engine = Engine(model, config)
        if pair is None:
            result, scoring = selection.evaluate(engine, items, ARGMAX), CONTRASTIVE
        else:
            if not hasattr(model, "match_scores"):
                raise ConclipTablesError(f"CC-Neg row {row!r}: model {name!r} has no image-text matching head, but "
                                         f"its row is scored with one ({pair.why})")
            result = matching.image_to_text(model, items, ARGMAX, batch_size=config.image_batch_size,
                                            score=pair.score, progress=config.progress)
            scoring = f"{pair.score} ({pair.why})"
        if [o.item_id for o in result.outcomes] != [it.item_id for it in items]:
            raise ConclipTablesError(f"CC-Neg row {row!r}: the outcomes of {name!r} are not in the items' order")
        entry = inputs.entries.get(row) or ModelEntry(row, name, get_spec(name).label)
        scored.append(Scored(entry, result, scoring, inputs.more.score(engine) if inputs.more else None))
    return scored, skipped


# --- Rows: both profiles ---
BY_WORD_K_FIELDS = ("row", "model", "word", "k", "n", "accuracy", "strict_accuracy")


def _correct(result: SelectionResult) -> np.ndarray:
    return np.array([o.correct for o in result.outcomes], dtype=bool)


def ccneg_row(s: Scored) -> dict:
    argmax, strict = _correct(s.result), _correct(rescore(s.result, STRICT))
    return {**model_cells(s.row, s.model, s.entry.label, s.entry.run), "ccneg": percent(float(argmax.mean())),
            "ccneg_strict": percent(float(strict.mean())), "ccneg_ties": s.result.ties, "n": len(argmax)}


def word_k_rows(s: Scored, negation: NegationSet) -> list[dict]:
    argmax, strict = _correct(s.result), _correct(rescore(s.result, STRICT))
    return [{"row": s.row, "model": s.model, "word": word, "k": k, "n": int(cell.sum()),
             "accuracy": percent(float(argmax[cell].mean())),
             "strict_accuracy": percent(float(strict[cell].mean()))}
            for word, k, cell in negation.cells]


# --- The mini profile's further rows and the paper's comparisons ---
MINI_SUMMARY_KEYS: tuple[str, ...] = (
    "clip_ccneg", "negclip_ccneg", "conclip_ccneg", "conclip_minus_clip_ccneg_ci_low", "l1_ccneg", "l2_ccneg",
    "l1_l2_ccneg", "crepe_negate_l1_ccneg", "clip_delta", "conclip_delta", "conclip_minus_clip_sugarcrepe",
    "conclip_minus_clip_classification")
"""The mini profile's DVC metrics (flat numbers, in points); the rest is in ``comparisons.json`` and the CSVs."""
CLASSIFICATION_FIELDS = classification_fields(CLASSIFICATION_SETS)
DISTRACTOR_FIELDS = ("row", "model", "label", "eq4_precision", "eq4_chance")


def model_row(s: Scored) -> dict:
    row = {**ccneg_row(s), **classification_cells(s.more.classification, CLASSIFICATION_SETS)}
    distractors = s.more.distractors
    row.update({"eq4_precision": percent(distractors.precision), "eq4_chance": percent(distractors.chance)})
    row.update(sugarcrepe_cells({g: v.accuracy for g, v in s.more.sugarcrepe.by_group().items()}))
    return row


def comparisons(rows: Mapping[str, Mapping], scored: Mapping[str, Scored], negation: NegationSet) -> dict:
    """The paper's findings against the mini runs (flat; the README's "What the mini run shows"); the paired
    intervals are resampled within each category or set, as the tables average them."""
    # deferred: loads scipy only when called
    from common.evaluation.stats import bootstrap_mean_ci

    out: dict[str, float | bool | None] = {}
    clip = scored["clip"].result
    ci = bootstrap_mean_ci(100.0 * np.array([o.correct for o in clip.outcomes], float), n_resamples=2000, seed=0)
    out.update({"clip_ccneg": rows["clip"]["ccneg"], "clip_ccneg_ci_low": round(ci.low, 2),
                "clip_ccneg_ci_high": round(ci.high, 2), "clip_near_or_below_chance": bool(ci.low <= 55.0)})
    for row in ("negclip", *RUNS):
        out[f"{row.replace('-', '_')}_ccneg"] = rows[row]["ccneg"]
    gain = ccneg_difference(scored["conclip"].result.outcomes, clip.outcomes)
    out.update({"conclip_minus_clip_ccneg": round(gain.estimate, 2),
                "conclip_minus_clip_ccneg_ci_low": round(gain.low, 2), "conclip_clearly_above_clip": bool(gain.low > 0)})
    top = min(rows[r]["ccneg"] for r in ("conclip", "l1", "l1-l2"))
    out["ablation_order_as_paper"] = bool(top > rows["crepe-negate-l1"]["ccneg"] > rows["l2"]["ccneg"])
    for row in ("clip", "conclip"):
        cells = word_k_rows(scored[row], negation)
        by_k = [np.mean([c["accuracy"] for c in cells if c["k"] == k]) for k in benchmark_mini.KS]
        out[f"{row}_k1_minus_k5"] = round(float(by_k[0] - by_k[-1]), 2)
    measures = {"sugarcrepe": lambda more: sugarcrepe_measure(more.sugarcrepe),
                "classification": lambda more: classification_measure(more.classification, CLASSIFICATION_SETS)}
    for what, measure in measures.items():
        d = paired_difference(measure(scored["conclip"].more), measure(scored["clip"].more))
        out.update({f"conclip_minus_clip_{what}": round(d.value, 2),
                    f"conclip_minus_clip_{what}_ci_low": round(d.low, 2),
                    f"conclip_minus_clip_{what}_ci_high": round(d.high, 2)})
    out.update({"clip_delta": rows["clip"]["delta"], "conclip_delta": rows["conclip"]["delta"],
                "clip_eq4_precision": rows["clip"]["eq4_precision"], "eq4_chance": rows["clip"]["eq4_chance"]})
    return out


# --- The full profile's summary and record ---
SUMMARY_MAX = 12
"""DVC metrics: at most this many numbers; the rest is in the CSVs."""


def summary(rows: Sequence[Mapping]) -> dict[str, float]:
    """The full profile's DVC metrics: each row's accuracy and, when both are scored, CoN-CLIP minus CLIP."""
    by_row = {r["row"]: r for r in rows}
    gain = {}
    if "clip" in by_row and "conclip" in by_row:
        gain["conclip_minus_clip_ccneg"] = round(by_row["conclip"]["ccneg"] - by_row["clip"]["ccneg"], 2)
    room = SUMMARY_MAX - len(gain)
    out = {f"{r['row'].replace('-', '_')}_ccneg": float(r["ccneg"]) for r in rows[:room]}
    return {**out, **gain}


def trained_here(scored: Sequence[Scored]) -> dict[str, dict]:
    """Row -> the sidecar of each ``build:`` checkpoint (the ``ft-<run>`` re-trainings), which the audit names in
    every table's note for that row; a released model's weights are never a run trained here."""
    return training_context({s.row: get_spec(s.model).checkpoint_path() for s in scored
                             if (get_spec(s.model).checkpoint or "").startswith("build:")})


# --- Files: what each profile writes beside table3.csv, by_word_k.csv and context.json ---
def mini_files(staging: Path, scored: Sequence[Scored], negation: NegationSet) -> dict[str, Path]:
    rows = {s.row: model_row(s) for s in scored}
    ordered = list(rows.values())
    metrics = comparisons(rows, {s.row: s for s in scored}, negation)
    return {
        "classification": write_csv_atomic(staging / "classification.csv", ordered, CLASSIFICATION_FIELDS),
        "sugarcrepe": write_csv_atomic(staging / "sugarcrepe.csv", ordered, SUGARCREPE_FIELDS),
        "table6": write_csv_atomic(staging / "table6.csv", [table6_row(rows[r], rows[r], rows[r]["ccneg"],
                                                                       rows[r]["classification_top1"]) for r in RUNS],
                                   TABLE6_FIELDS),
        "distractors": write_csv_atomic(staging / "distractors.csv", ordered, DISTRACTOR_FIELDS),
        "comparisons": write_json_atomic(staging / "comparisons.json", metrics),
        "summary": write_json_atomic(staging / "summary.json", {k: metrics[k] for k in MINI_SUMMARY_KEYS}),
    }


def full_files(staging: Path, scored: Sequence[Scored], negation: NegationSet) -> dict[str, Path]:
    predictions = staging / "predictions"
    for s in scored:
        write_predictions(predictions / f"{s.model.replace('/', '__')}.csv", s.result)
    write_csv_atomic(predictions / "items.csv", negation.item_rows, ("item_id", "k", "words", "image"))
    return {"summary": write_json_atomic(staging / "summary.json", summary([ccneg_row(s) for s in scored])),
            "predictions": predictions}


def models_by_run(scored: Sequence[Scored], skipped: Mapping[str, str]) -> dict:
    return {"models": {s.row: {"model": s.model, "label": s.entry.label, "run": s.entry.run,
                               "fingerprint": s.result.fingerprint,
                               "checkpoint_sha256": sha256_file(s.entry.checkpoint) if s.entry.checkpoint else None}
                       for s in scored}}


def models_by_scoring(scored: Sequence[Scored], skipped: Mapping[str, str]) -> dict:
    return {"models": {s.row: {"model": s.model, "label": s.entry.label, "fingerprint": s.result.fingerprint,
                               "scoring": s.scoring, "rule": s.result.rule, "n": len(s.result.outcomes),
                               "ties": s.result.ties} for s in scored},
            "skipped": dict(skipped), "paper_vs_code": PAPER_VS_CODE, "training": trained_here(scored)}


@dataclass(frozen=True)
class ProfileFiles:
    """What a profile's stage writes beside the shared files and how its context records models."""

    table3_fields: tuple[str, ...]
    write: Callable[[Path, Sequence[Scored], NegationSet], dict[str, Path]]
    record: Callable[[Sequence[Scored], Mapping[str, str]], dict]


FILES = {"mini": ProfileFiles((*MODEL_FIELDS, "ccneg", "ccneg_strict", "ccneg_ties"), mini_files, models_by_run),
         "full": ProfileFiles(("row", "model", "label", "ccneg", "ccneg_strict", "ccneg_ties", "n"), full_files,
                              models_by_scoring)}


def evaluate_tables(inputs: Inputs, out_dir: Path, engine_config=None, device: str = "cpu",
                    create: ModelFactory = zoo_create) -> dict[str, Path]:
    """Score every model of ``inputs`` and write the tables as one output group (all or nothing)."""
    scored, skipped = score_models(inputs, engine_config, device, create)
    if not scored:
        raise ConclipTablesError(f"no model of conclip.{inputs.profile}.models could be loaded: {skipped}")
    files = FILES[inputs.profile]
    context = {**inputs.context, **files.record(scored, skipped)}

    def write(staging: Path) -> dict[str, Path]:
        return {"table3": write_csv_atomic(staging / "table3.csv", [ccneg_row(s) for s in scored], files.table3_fields),
                "by_word_k": write_csv_atomic(staging / "by_word_k.csv",
                                              [c for s in scored for c in word_k_rows(s, inputs.negation)],
                                              BY_WORD_K_FIELDS),
                **files.write(staging, scored, inputs.negation),
                "context": write_json_atomic(staging / "context.json", context)}

    return write_output_group(out_dir, write)


def _mini_stage(args: argparse.Namespace, params: Mapping, section: Mapping) -> tuple[Inputs, str]:
    """Stage ``tables-mini``'s inputs, on the pinned CPU profile (``common.pipeline.reproducible``)."""
    device = pinned_cpu(args.device, ConclipTablesError)
    root = build_dir("mini", "conclip")
    test_dir = Path(args.data or root / "test")
    entries = entries_for(section["base"], section["family"], section["negclip"], Path(args.models or root / "models"))
    base_arch = get_spec(section["base"]).arch
    arch_of = {e.row: (base_arch if e.run else get_spec(e.name).arch) for e in entries}
    trained = [e for e in entries if e.checkpoint is not None]
    context = {"profile": "mini", "base": section["base"], **reproducible.describe(),
               "test_set": {k: v for k, v in read_json(test_dir / "manifest.json", dict, REMEDY).items()
                            if k != "examples"},
               "finetune_set": read_json(Path(args.set or root / "finetune") / "manifest.json", dict,
                                         "run the mini-finetune-set stage"),
               "training": training_context({e.row: e.checkpoint for e in trained},
                                            ("trainer", "loss", "data", "final_loss", "frozen"),
                                            remedies={e.row: f"run the mini-finetune@{e.run} stage" for e in trained}),
               "note": "mini profile: the mini family and its fine-tunes on rendered scenes; not comparable to the "
                       "paper's numbers"}
    sugarcrepe = Path(args.sugarcrepe or build_dir("mini", "sugarcrepe") / "manifest.json")
    return mini_inputs(entries, arch_of, test_dir, sugarcrepe, context), device


def _full_stage(args: argparse.Namespace, params: Mapping, section: Mapping) -> tuple[Inputs, str]:
    device = args.device or best_device()
    pt_path, images = data.default_paths(args.data, args.images)
    ccneg = load_ccneg(pt_path, images, args.eval_size or data.eval_size_for(params))
    context = {"device": device, "engine": params.get("engine", {})}
    return full_inputs(dict(section["models"]), ccneg, context, bool(section["skip_unavailable"])), device


def main(argv: Sequence[str] | None = None) -> int:
    parser = profile_stage_parser(
        "conclip", __doc__.splitlines()[0],
        data="the benchmark: mini, its folder (default: build/mini/conclip/test); full, ccneg_preprocessed.pt "
             "(default: the download registry's, <data root>/ccneg/)",
        models="mini: the runs' weights (default: build/mini/conclip/models)")
    parser.add_argument("--images", default=None, help="full: the folder of CC-Neg's JPEGs (default: <data root>/"
                                                       "ccneg/ccneg_images/cc3m_subset_images_extracted_final)")
    parser.add_argument("--eval-size", type=int, default=None,
                        help=f"full: the evaluation split, the file's last N entries (default: {EVAL_SIZE}, the "
                             "authors' configs.num_ccneg_eval_samples; with a cap, params.yaml full_inputs.cap)")
    parser.add_argument("--set", default=None, help="mini: the fine-tuning set, whose manifest the context records "
                                                    "(default: build/mini/conclip/finetune)")
    parser.add_argument("--sugarcrepe", default=None,
                        help="mini: SugarCrepe's mini set (default: build/mini/sugarcrepe/manifest.json)")
    args = parser.parse_args(argv)
    params, section = own_section(f"conclip.{args.profile}", args.stage)
    inputs, device = (_mini_stage if args.profile == "mini" else _full_stage)(args, params, section)
    paths = evaluate_tables(inputs, Path(args.out or RESULTS / "conclip" / args.profile), engine_config(params),
                            device, create=zoo_create)
    return print_written(paths, *(name for name in ("table3", "table6", "summary") if name in paths))


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
