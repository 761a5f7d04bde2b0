"""ARO's experiments, scored: Fig. 1 and Tables 2-6 of the paper for every model of ``aro.models.<profile>``.

VG-Relation (Table 2) and VG-Attribution are scored as the authors' code scores them (``data.ARO_VG_RULE``: a tie is
wrong), macro-averaged by every rule of ``vg_rules``; Table 6's VG-Relation is Table 2's (``vg_rules.TABLE2_RULE``:
the paper's stated 25-case threshold does not reproduce Table 2). Order (Table 5, ``argmax == 0``: a tie is correct)
and shuffled retrieval (Tables 3 and 4): one draw per seed of ``aro.seeds``. Full profile: a model of
``aro.full.authors_precision`` is scored at that precision and at ``engine.precision`` beside it (``Scoring``), then
every registered variant (``common.zoo.with_variants``: NegCLIP built as 'ViT-B-32', GELU, as ARO's code builds it:
``mertyg/vision-language-models-are-bows@81fdd20d model_zoo/__init__.py:71``
"open_clip.create_model_and_transforms('ViT-B-32', pretrained=path"). BLIP and FLAVA choose among captions by
``ARO_PAIR_SCORES``; retrieval and zero-shot classification use their contrastive embeddings. The std over seeds is
the sample std (ddof=1); the paper does not say which it used. Outputs: README.md's Outputs. Stage ``tables``:
``python -m papers.aro.tables``.
"""
from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from common.card.core import Measure, paired_difference
from common.evaluation.engine import Engine
from common.evaluation.evaluate import best_device, engine_config
from common.evaluation.results import metrics_filename, write_predictions
from common.evaluation.scoring import classification, matching, retrieval
from common.evaluation.scoring.selection import ARGMAX, DecisionRule, SelectionResult, image_to_text
from common.evaluation.stats import interval_fields
from common.files.image_transforms import GridShuffle
from common.files.io import output_group, staged_to_final, write_csv_atomic, write_json_atomic
from common.files.tasks import ImageRef, ImageToTextItem, RetrievalSet
from common.paths import RESULTS, build_root
from common.pipeline import reproducible
from common.pipeline.cli import print_written, stage_parser
from common.pipeline.params import own_params
from common.reporting.figures import pyplot, save_figure
from common.text.caption_text import RETRIEVAL_PERTURBATIONS, spacy_info, tag_captions
from common.training import records
from common.zoo import FP16_WHY, EmbeddingModel, create_model, get_spec, with_variants
from common.zoo.hf import create_hf_model
from papers.aro import vg_rules
from papers.aro.data import ARO_VG_RULE, AroSet, KarpathySet
from papers.aro.measures import ORDER_LABELS, order_measure, seeded, vg_measures
from papers.aro.order import OPTION_NAMES, normalised_captions, order_cases, shuffled_retrieval_texts

DATA_FILES = ("papers/aro/models.toml",)
"""Read at run time: the zoo entries of ARO's own runs (aro/mini-clip-ft, aro/clip-ft, aro/negclip-rerun)."""
IMAGE_SHUFFLES: dict[str, tuple[int, int]] = {
    "Shuffle Rows (4)": (4, 1), "Shuffle Columns (4)": (1, 4), "Shuffle Patches (9)": (3, 3)}
"""Table 4's image shuffles as grid (rows, columns) of the preprocessed image (``common.files.image_transforms``)."""
NO_SHUFFLE = "No Shuffling"
TABLE3_STRATEGIES = {
    "shuffle_nouns_and_adj": "Shuffle only nouns and adj.", "shuffle_all_words": "Shuffle all words",
    "shuffle_allbut_nouns_and_adj": "Shuffle all but nouns and adj.", "shuffle_trigrams": "Shuffle trigrams",
    "shuffle_within_trigrams": "Shuffle within Trigrams"}
"""Table 3's row name of each text shuffle (``common.text.caption_text.RETRIEVAL_PERTURBATIONS``), as printed."""
RECALLS = {"Text Recall@1": "i2t_recall_at_1", "Text Recall@5": "i2t_recall_at_5",
           "Image Recall@1": "t2i_recall_at_1", "Image Recall@5": "t2i_recall_at_5"}
"""The paper's column names: "Text" recall retrieves captions for an image (image to text), "Image" the reverse."""
COMPARED = {"mini": ("aro/mini-negclip", "aro/mini-clip-ft"), "full": ("aro/negclip-rerun", "aro/clip-ft")}
"""Per profile, the (NegCLIP, CLIP-FT) pair ``comparisons.json`` compares: fine-tuned here from the same base with
the same recipe, hard negatives the only difference (Table 6's claim)."""
RETRIEVAL_NAMES = {"coco": "COCO", "flickr30k": "Flickr30k"}


@dataclass
class ModelScores:
    """Everything one model scored, kept for the tables (one object per model)."""

    name: str
    label: str
    vg_relation: SelectionResult
    vg_attribution: SelectionResult
    order: dict[str, list[float]]
    """Per retrieval set, the Order accuracy of each seed."""
    text_shuffle: dict[str, dict[str, list[dict[str, float]]]]
    """Per set and strategy, the recalls of each seed (``No Shuffling``: one entry)."""
    image_shuffle: dict[str, dict[str, list[dict[str, float]]]]
    classification: dict[str, float]
    fingerprint: str
    key: str
    """What the run's files name this scoring by: the model's name, ``<name>@<precision>`` for a reference beside the
    authors' precision (``Scoring.key``)."""
    precision: str
    ties: dict[str, int]
    """Exact ties per task: VG-Relation, VG-Attribution, each Order set and seed, unshuffled retrieval both ways."""
    order_results: dict[str, list[SelectionResult]]
    """Per retrieval set, each seed's Order outcomes (for the paired comparisons)."""


@dataclass(frozen=True)
class Scoring:
    """A model at the authors' precision (the column the audit compares) or, ``reference``, at the engine's."""

    name: str
    precision: str
    reference: bool = False

    @property
    def key(self) -> str:
        return f"{self.name}@{self.precision}" if self.reference else self.name

    def label(self) -> str:
        return get_spec(self.name).label + (f" [{self.precision}]" if self.reference else "")


def scorings(models: Sequence[str], authors_precision: dict[str, str], engine_precision: str) -> list[Scoring]:
    """Each model and its variants at the authors' precision, then at the engine's where the two differ."""
    out = []
    for name in with_variants(list(models)):
        precision = authors_precision.get(name, engine_precision)
        out.append(Scoring(name, precision))
        if precision != engine_precision:
            out.append(Scoring(name, engine_precision, reference=True))
    return out


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for a single value)."""
    a = np.asarray(values, dtype=float)
    return float(a.mean()), float(a.std(ddof=1)) if len(a) > 1 else 0.0


@dataclass(frozen=True)
class TextVariants:
    """A retrieval set's Order cases and shuffled captions per seed: tagged once, shared by every model."""

    order: dict[int, list[ImageToTextItem]]
    shuffled: dict[int, dict[str, list[str]]]
    """Per seed: ``{"none": normalised captions, perturbation: shuffled captions}`` (``order.shuffled_retrieval_texts``)."""


def text_variants(dataset: KarpathySet, seeds: Sequence[int]) -> TextVariants:
    raw = dataset.flat_captions()
    raw_tags, normalised_tags = tag_captions(raw), tag_captions(normalised_captions(raw))
    images = [dataset.images[i] for i in dataset.caption_image()]
    order = {seed: [ImageToTextItem(f"{dataset.name}-order-{case.index}", dataset.name, images[case.index],
                                    case.options, origin=f"{dataset.origin}: caption {case.index} (seed {seed})")
                    for case in order_cases(raw, seed, tagged=raw_tags)]
             for seed in seeds}
    shuffled = {seed: shuffled_retrieval_texts(raw, seed, tagged=normalised_tags) for seed in seeds}
    return TextVariants(order, shuffled)


def shuffled_images(gallery: RetrievalSet, rows: int, cols: int, seed: int) -> RetrievalSet:
    """The same gallery with every image cut into ``rows`` x ``cols`` cells and shuffled (seeded per image)."""
    images = tuple(ImageRef(Path(getattr(img, "path", img)), GridShuffle(rows, cols, seed)) for img in gallery.images)
    return RetrievalSet(gallery.name, images, gallery.captions, gallery.caption_image)


@dataclass(frozen=True)
class PairScore:
    """How ARO's code ranks captions for a model with an image-text matching head (``common.zoo.hf``)."""

    score: str
    """``common.zoo.hf.SCORES``: ``itm`` (match probability) or ``itm_logit+itc``."""
    options: dict
    """``create_hf_model``'s ITM options reproducing the original code's inputs."""
    why: str


ARO_PAIR_SCORES = {
    "blip": PairScore("itm_logit+itc", {"itm_start_token": "[ENC]"},
                      "ITM match logit + ITC cosine, ITM text starting with [ENC]: "
                      'mertyg/vision-language-models-are-bows@81fdd20d model_zoo/blip_models.py:178-179 "score_matrix_i2t[i,j] = score + sims[j]", '
                      'mertyg/vision-language-models-are-bows@81fdd20d model_zoo/blip_models.py:245 "text_ids[:, :, 0] = self.model.tokenizer.enc_token_id"'),
    "flava": PairScore("itm", {"itm_attends_padding": True},
                       "softmax(ITM)[:, 1], texts padded to 77 and attended (transformers < 4.39): "
                       'mertyg/vision-language-models-are-bows@81fdd20d model_zoo/flava.py:74 "max_length=77, return_codebook_pixels=True", '
                       'mertyg/vision-language-models-are-bows@81fdd20d model_zoo/flava.py:78 "softmax(outputs.itm_logits, dim=-1)[:, 1:2]"'),
}
"""Per ``arch``, the selection score of ARO's wrapper for it (``why`` cites the wrapper's lines)."""
Select = Callable[[Sequence[ImageToTextItem], DecisionRule], SelectionResult]


def load_model(name: str, device: str) -> tuple[EmbeddingModel, Select, str]:
    """The model, how it chooses among captions (ARO's protocol for it), and that protocol in words."""
    spec = get_spec(name)
    if spec.backend == "open_clip" or spec.arch not in ARO_PAIR_SCORES:
        model = create_model(name, device=device)
        return model, None, "contrastive (cosine of image and text embeddings)"  # type: ignore[return-value]
    protocol = ARO_PAIR_SCORES[spec.arch]
    model = create_hf_model(spec, device, **protocol.options)
    return (model, lambda items, rule: matching.image_to_text(model, items, rule, score=protocol.score),
            f"{protocol.score} ({protocol.why})")


def score_model(name: str, aro: AroSet, variants: dict[str, TextVariants], engine: Engine,
                predictions: Path, select: Select | None = None, scoring: Scoring | None = None) -> ModelScores:
    """Every table's numbers for one model; ``select`` chooses among captions (default: the engine's cosines),
    ``scoring`` defaults to the model at the engine's precision."""
    scoring = scoring or Scoring(name, engine.config.precision)
    select = select or (lambda items, rule: image_to_text(engine, items, rule))
    folder = predictions / scoring.key.replace("/", "__")
    vgr = select(aro.vg_relation_items(), ARO_VG_RULE)
    vga = select(aro.vg_attribution_items(), ARO_VG_RULE)
    write_predictions(folder / "vg_relation.csv", vgr)
    write_predictions(folder / "vg_attribution.csv", vga)
    ties = {"VG-Relation": vgr.ties, "VG-Attribution": vga.ties}
    order: dict[str, list[float]] = {}
    order_results: dict[str, list[SelectionResult]] = {}
    text_shuffle: dict[str, dict[str, list[dict[str, float]]]] = {}
    image_shuffle: dict[str, dict[str, list[dict[str, float]]]] = {}
    for set_name, dataset in aro.retrieval_sets().items():
        seeds = list(variants[set_name].order)
        order[set_name] = []
        text_shuffle[set_name] = {NO_SHUFFLE: []}
        image_shuffle[set_name] = {label: [] for label in IMAGE_SHUFFLES}
        for seed in seeds:
            result = select(variants[set_name].order[seed], ARGMAX)
            write_predictions(folder / f"{set_name}_order_seed{seed}.csv", result)
            order[set_name].append(result.by_group()[set_name].accuracy)
            order_results.setdefault(set_name, []).append(result)
            ties[f"{ORDER_LABELS.get(set_name, set_name)} seed {seed}"] = result.ties
            texts = variants[set_name].shuffled[seed]
            if seed == seeds[0]:  # the unshuffled gallery does not depend on the seed
                plain = dataset.retrieval_set(captions=texts["none"])
                unshuffled = retrieval.evaluate(engine, plain)
                text_shuffle[set_name][NO_SHUFFLE].append(unshuffled.recall((1, 5)))
                ties[f"{RETRIEVAL_NAMES.get(set_name, set_name)} retrieval image to text"] = unshuffled.i2t_ties
                ties[f"{RETRIEVAL_NAMES.get(set_name, set_name)} retrieval text to image"] = unshuffled.t2i_ties
            for kind in RETRIEVAL_PERTURBATIONS:
                recalls = retrieval.evaluate(engine, dataset.retrieval_set(captions=texts[kind])).recall((1, 5))
                text_shuffle[set_name].setdefault(TABLE3_STRATEGIES[kind], []).append(recalls)
            for label, (rows, cols) in IMAGE_SHUFFLES.items():
                gallery = shuffled_images(plain, rows, cols, seed)
                image_shuffle[set_name][label].append(retrieval.evaluate(engine, gallery).recall((1, 5)))
        image_shuffle[set_name] = {NO_SHUFFLE: text_shuffle[set_name][NO_SHUFFLE], **image_shuffle[set_name]}
    accuracy = {set_name: classification.evaluate(engine, dataset).top_k((1,))["top1"]
                for set_name, dataset in (aro.classification_sets().items() if aro.has("classification") else ())}
    return ModelScores(name, scoring.label(), vgr, vga, order, text_shuffle, image_shuffle, accuracy,
                       vgr.fingerprint, scoring.key, scoring.precision, ties, order_results)


def fraction(x: float) -> str:
    return "" if math.isnan(x) else f"{x:.3f}"


def vg_summaries(result: SelectionResult, kind: str) -> dict[str, vg_rules.MacroResult]:
    """Macro averages by every rule: VG-Relation's paper / table2 / notebook rules, VG-Attribution's one."""
    groups = result.by_group()
    if kind == "relation":
        return vg_rules.relation_rules(groups)
    return {vg_rules.ATTRIBUTION_RULE.name: vg_rules.macro(groups, vg_rules.ATTRIBUTION_RULE)}


def vg_table(scores: Sequence[ModelScores], kind: str) -> tuple[list[dict], list[str]]:
    """Per relation (or attribute pair): n, its kind, which rules keep it, each model's accuracy; then, per rule,
    the macro rows (overall, and for relations spatial and verb as Table 2's blocks)."""
    results = {s.label: (s.vg_relation if kind == "relation" else s.vg_attribution) for s in scores}
    summaries = {label: vg_summaries(r, kind) for label, r in results.items()}
    first_groups = next(iter(results.values())).by_group()
    first_summary = next(iter(summaries.values()))
    rule_names = list(first_summary)
    rows = []
    for group in sorted(first_groups):
        row = {"group": group, "n": first_groups[group].n,
               "kind": vg_rules.relation_kind(group) if kind == "relation" else "attribute pair"}
        row.update({f"kept_{rule}": "yes" if group in first_summary[rule].kept else "no" for rule in rule_names})
        row.update({label: fraction(r.by_group()[group].accuracy) for label, r in results.items()})
        rows.append(row)
    for rule in rule_names:
        for part in ("all", *first_summary[rule].by_kind):
            row = {"group": f"Accuracy ({rule} rule{'' if part == 'all' else ', ' + part})",
                   "n": first_summary[rule].n_cases if part == "all" else "", "kind": "macro"}
            row.update({label: fraction(s[rule].accuracy if part == "all" else s[rule].by_kind[part])
                        for label, s in summaries.items()})
            rows.append(row)
    return rows, ["group", "n", "kind", *(f"kept_{rule}" for rule in rule_names), *results]


def order_table(scores: Sequence[ModelScores], seeds: Sequence[int]) -> list[dict]:
    rows = []
    for s in scores:
        for set_name, accs in s.order.items():
            mean, std = mean_std(accs)
            rows.append({"dataset": ORDER_LABELS.get(set_name, set_name), "model": s.label, "accuracy": fraction(mean),
                         "std": fraction(std), **{f"seed{k}": fraction(a) for k, a in zip(seeds, accs)}})
    for set_name in scores[0].order:
        rows.append({"dataset": ORDER_LABELS.get(set_name, set_name), "model": "Chance-level",
                     "accuracy": fraction(1 / len(OPTION_NAMES)), "std": ""})
    return rows


def shuffle_table(scores: Sequence[ModelScores], which: str) -> list[dict]:
    rows = []
    for s in scores:
        for set_name, strategies in getattr(s, which).items():
            for strategy, runs in strategies.items():
                row = {"dataset": RETRIEVAL_NAMES.get(set_name, set_name), "strategy": strategy, "model": s.label,
                       "seeds": len(runs)}
                for column, key in RECALLS.items():
                    mean, std = mean_std([r[key] for r in runs])
                    row[column], row[f"{column} | std"] = fraction(mean), fraction(std)
                rows.append(row)
    return rows


SHUFFLE_FIELDS = ["dataset", "strategy", "model", "seeds", *(c for k in RECALLS for c in (k, f"{k} | std"))]


def table6(scores: Sequence[ModelScores]) -> tuple[list[dict], dict[str, dict[str, float]]]:
    """Table 6's rows (task, then one column per model) and each model's metrics."""
    per_model: dict[str, dict[str, float]] = {}
    for s in scores:
        m = {"VG-Relation": vg_rules.macro(s.vg_relation.by_group(), vg_rules.TABLE2_RULE).accuracy,
             "VG-Attribution": vg_rules.macro(s.vg_attribution.by_group(), vg_rules.ATTRIBUTION_RULE).accuracy}
        for set_name, accs in s.order.items():
            m[ORDER_LABELS.get(set_name, set_name).replace("-Order", "-PRC")] = mean_std(accs)[0]
        for set_name, acc in s.classification.items():
            m[f"zero-shot {set_name}"] = acc
        for set_name, strategies in s.text_shuffle.items():
            plain = strategies[NO_SHUFFLE][0]
            m[f"{RETRIEVAL_NAMES.get(set_name, set_name)} Image R@1"] = plain["t2i_recall_at_1"]
            m[f"{RETRIEVAL_NAMES.get(set_name, set_name)} Text R@1"] = plain["i2t_recall_at_1"]
        per_model[s.key] = m
    tasks = list(next(iter(per_model.values())))
    rows = [{"task": task, **{s.label: fraction(per_model[s.key][task]) for s in scores}} for task in tasks]
    return rows, per_model


def task_measures(s: ModelScores, seeds: Sequence[int]) -> dict[str, Measure]:
    """A model's numbers as per-example outcomes, as the report card builds them (``measures``); a VG task whose
    rule keeps no group has none."""
    out = {}
    for kind in ("relation", "attribution"):
        macro = vg_measures(getattr(s, f"vg_{kind}"), kind)
        if macro:
            out[f"vg_{kind}"] = macro[0]
    for set_name, results in s.order_results.items():
        task = ORDER_LABELS.get(set_name, set_name).lower().replace("-", "_")
        out[task] = order_measure(set_name, [o for seed, r in zip(seeds, results) for o in seeded(r.outcomes, seed)],
                                  seeds)
    return out


def comparisons(scores: Sequence[ModelScores], profile: str, seeds: Sequence[int]) -> dict:
    """``COMPARED[profile]``'s first model minus its second on every task, in points with a 95% paired-bootstrap
    interval; when either was not scored (not in ``aro.models``), why there is no comparison."""
    a_name, b_name = COMPARED[profile]
    by_name = {s.key: s for s in scores}
    out: dict = {"compared": [a_name, b_name]}
    missing = [n for n in (a_name, b_name) if n not in by_name]
    if missing:
        return {**out, "skipped": f"{', '.join(missing)} not scored (aro.models.{profile})"}
    a, b = task_measures(by_name[a_name], seeds), task_measures(by_name[b_name], seeds)
    prefix = "negclip_minus_clip_ft"
    for task in ("vg_relation", "vg_attribution", *(t for t in a if t not in ("vg_relation", "vg_attribution"))):
        if task not in a:  # no group kept by the rule (a tiny set): the paper's macro is undefined too
            out[f"n_{task}"] = 0
            continue
        d = paired_difference(a[task], b[task])
        out.update({**interval_fields(f"{prefix}_{task}", d, d.value), f"n_{task}": a[task].n})
    out["method"] = "paired percentile bootstrap over examples (common.card.core); macro averages resampled within " \
                    "each kept group"
    return out


def figure1(per_model: dict[str, dict[str, float]], labels: dict[str, str], out_png: Path, title: str) -> Path:
    """Fig. 1's bars: each model on VG-Relation, VG-Attribution and the Order tasks, with chance marked."""
    plt = pyplot()
    tasks = [t for t in next(iter(per_model.values())) if t.startswith("VG-") or t.endswith("-PRC")]
    chance = {t: 0.5 if t.startswith("VG-") else 1 / len(OPTION_NAMES) for t in tasks}
    fig, ax = plt.subplots(figsize=(1.8 * len(tasks) + 2, 3.4))
    width = 0.8 / len(per_model)
    x = np.arange(len(tasks))
    for k, (name, m) in enumerate(per_model.items()):
        ax.bar(x + k * width - 0.4 + width / 2, [m[t] for t in tasks], width, label=labels[name])
    for i, t in enumerate(tasks):
        ax.hlines(chance[t], i - 0.45, i + 0.45, colors="grey", linestyles="--", lw=0.9)
    ax.set_xticks(x, tasks)
    ax.set_ylim(0, 1)
    ax.set_ylabel("accuracy (dashed: chance)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    return save_figure(fig, out_png)


def retrieval_figure(text_rows: list[dict], image_rows: list[dict], out_png: Path, title: str) -> Path:
    """Fig. 2's view of Tables 3 and 4: Recall@1 both ways under each shuffle, per model."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6), sharey=True)
    for ax, rows, name in ((axes[0], text_rows, "text shuffles (Table 3)"), (axes[1], image_rows, "image shuffles (Table 4)")):
        strategies = list(dict.fromkeys(r["strategy"] for r in rows))
        models = list(dict.fromkeys(r["model"] for r in rows))
        datasets = list(dict.fromkeys(r["dataset"] for r in rows))
        x = np.arange(len(strategies))
        bars = list(itertools.product(datasets, models))
        width = 0.8 / len(bars)
        for k, (d, m) in enumerate(bars):
            vals = {r["strategy"]: float(r["Text Recall@1"]) for r in rows if r["model"] == m and r["dataset"] == d}
            ax.bar(x + k * width - 0.4 + width / 2, [vals.get(s, np.nan) for s in strategies], width,
                   label=f"{m} ({d})" if len(datasets) > 1 else m)
        ax.set_xticks(x, [s.replace("Shuffle ", "").replace(" and ", " & ") for s in strategies], rotation=25,
                      ha="right", fontsize=7)
        ax.set_title(name, fontsize=9)
    axes[0].set_ylabel("Text Recall@1 (image to text)")
    axes[1].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return save_figure(fig, out_png)


def write_tables(scores: Sequence[ModelScores], seeds: Sequence[int], profile: str, out: Path) -> dict[str, Path]:
    """Tables 2-6 (CSV), the per-model metrics (DVC metrics) and the two figures, into ``out``."""
    labels = {s.key: s.label for s in scores}
    text_rows, image_rows = shuffle_table(scores, "text_shuffle"), shuffle_table(scores, "image_shuffle")
    rows6, per_model = table6(scores)
    tables = {"table2_vg_relation": vg_table(scores, "relation"), "vg_attribution": vg_table(scores, "attribution"),
              "table5_order": (order_table(scores, seeds), ["dataset", "model", "accuracy", "std",
                                                            *(f"seed{k}" for k in seeds)]),
              "table3_text_shuffle": (text_rows, SHUFFLE_FIELDS), "table4_image_shuffle": (image_rows, SHUFFLE_FIELDS),
              "table6": (rows6, ["task", *labels.values()])}
    paths = {stem: write_csv_atomic(out / f"{stem}.csv", rows, fields) for stem, (rows, fields) in tables.items()}
    for name, m in per_model.items():
        write_json_atomic(out / "metrics" / metrics_filename(name), {k: round(v, 4) for k, v in m.items()})
    paths["metrics"] = out / "metrics"
    paths["figure1"] = figure1(per_model, labels, out / "figure1.png", f"ARO Fig. 1 ({profile} profile)")
    paths["figure2"] = retrieval_figure(text_rows, image_rows, out / "figure2_shuffled_retrieval.png",
                                        f"ARO Tables 3-4: retrieval without order ({profile} profile)")
    paths["comparisons"] = write_json_atomic(out / "comparisons.json", comparisons(scores, profile, seeds))
    paths["plot"] = write_csv_atomic(
        out / "figure1_plot.csv",
        [{"model": labels[n], "task": t, "accuracy": fraction(v)} for n, m in per_model.items() for t, v in m.items()],
        ["model", "task", "accuracy"])
    return paths


AUTHORS_PRECISION_WHY = {
    "fp16": ("clip.load on CUDA: fp16 weights and scores ("
             'mertyg/vision-language-models-are-bows@81fdd20d model_zoo/__init__.py:15 "clip.load(variant, device=device", '
             'mertyg/vision-language-models-are-bows@81fdd20d model_zoo/clip_models.py:73 "self.model.encode_image(i_option.to(self.device))"'
             "); here " + FP16_WHY)}


def scoring_context(scores: Sequence[ModelScores], plan: Sequence[Scoring]) -> dict[str, dict]:
    """Per column label, how it was scored and its exact ties: what the audit names each recomputation by."""
    by_key = {s.key: s for s in plan}
    out = {}
    for s in scores:
        scoring, spec = by_key[s.key], get_spec(s.name)
        why = ("reference beside the authors' precision" if scoring.reference
               else AUTHORS_PRECISION_WHY.get(s.precision, "the authors' precision"))
        out[s.label] = {"model": s.name, "precision": s.precision, "reference": scoring.reference, "why": why,
                        "variant_of": spec.variant_of, "variant_note": spec.variant_note, "ties": s.ties}
    return out


def training_context(models: Sequence[str]) -> dict[str, dict]:
    """Per fine-tune trained here (a ``build:`` checkpoint), its sidecar's run and recipe, for the audit's notes."""
    specs = {name: get_spec(name) for name in with_variants(list(models))}
    return records.training_context({name: spec.checkpoint_path() for name, spec in specs.items()
                                     if spec.finetuned_from and (spec.checkpoint or "").startswith("build:")})


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, __doc__)
    parser.parse_args(argv)
    device = best_device()
    if device == "cpu":  # same bits on any x86-64 CPU of one vendor (common.pipeline.reproducible), as SugarCrepe's table
        reproducible.pin()
    params = own_params()
    profile = params["profile"]
    seeds = [int(s) for s in params["aro"]["seeds"]]
    models = params["aro"]["models"][profile]
    # the authors' precision is a full-profile matter (the mini profile's tiny CLIPs are no author's models)
    authors_precision = dict(params["aro"]["full"]["authors_precision"]) if profile == "full" else {}
    aro = AroSet.load(build_root() / profile / "aro" / "benchmarks")
    config = engine_config(params)
    out_dir = RESULTS / "aro" / profile
    note = ("mini profile: tiny CLIPs on the rendered mini world; not comparable to the paper's numbers"
            if profile == "mini" else "full profile: the paper's benchmarks")
    with output_group(out_dir) as staging:
        variants = {name: text_variants(dataset, seeds) for name, dataset in aro.retrieval_sets().items()}
        scores, selection_scores = [], {}
        plan = scorings(models, authors_precision, config.precision)
        for name in dict.fromkeys(s.name for s in plan):
            model, select, selection_scores[name] = load_model(name, device)
            for scoring in (s for s in plan if s.name == name):
                print(f"scoring {scoring.key} ({scoring.precision})", flush=True)
                engine = Engine(model, dataclasses.replace(config, precision=scoring.precision))
                scores.append(score_model(name, aro, variants, engine, staging / "predictions", select, scoring))
        paths = write_tables(scores, seeds, profile, staging)
        paths["context"] = write_json_atomic(staging / "context.json", {
            "profile": profile, "note": note, "seeds": seeds, "models": {s.name: s.fingerprint for s in scores},
            "dataset": {k: v for k, v in aro.info.items() if k in ("profile", "world_version", "counts", "config")},
            "selection_scores": selection_scores,
            "rules": {"vg": ARO_VG_RULE.name + " (argmax([false, true]) == 1: a tie is wrong)",
                      "order": ARGMAX.name + " (argmax == 0 with the original first: a tie is correct)",
                      "std": "sample standard deviation over seeds (ddof=1)"},
            "spacy": spacy_info().as_dict(),
            "engine": {"precision": config.precision, **(reproducible.describe() if device == "cpu" else {})},
            **({"scoring": scoring_context(scores, plan)} if profile == "full" else {}),
            "training": training_context(models),
        })
        paths["predictions"] = staging / "predictions"
    return print_written({name: staged_to_final(path, staging, out_dir) for name, path in paths.items()})


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
