"""BiVLC (Miranda et al., NeurIPS 2024 D&B), Tables 2-4 (and Table 5's detectors) in the full profile: the released
benchmark ``imirandam/BiVLC`` (split ``test``, 2,933 instances) scored by every obtainable model of
``bivlc.full.models`` (row -> zoo model), SugarCrepe beside it, and the detectors of ``bivlc.full.detector_rows``.

Data: the Hugging Face snapshot of registry entry ``bivlc/BiVLC`` (``python -m common fetch bivlc/BiVLC``): parquet
files of the ``test`` split with columns image, caption, negative_caption, negative_image, type, subtype, each
image a struct {bytes, path}. The image bytes are written once to a content-addressed cache
(``build/full/bivlc/images/<sha256>.<ext>``: a file's name is its content, so the cache cannot go stale) and each
instance becomes a ``GroupItem`` (C0/I0 the COCO caption and photo, C1/I1 the negative caption and generated image)
whose group is its category ``<type>-<subtype>`` (``replace-obj`` ... ``add-att``).

Scores (``common.scoring.group``): the cosine of normalised embeddings, strict comparisons (a tie is wrong and
counted), as the released ``evaluate_BiVLC`` computes them
(``IMirandaM/BiVLC@84f0d175 src/CLIP_fine_tuning/CLIP_utils.py:161`` "Ipos_2T = s_C0_I0 > s_C1_I0"); the engine encodes
every distinct image and caption once. SugarCrepe is read by SugarCrepe's own loader (``common.benchmarks.caption_negatives``:
the set ``build/full/sugarcrepe``, written by SugarCrepe's ``full-set`` stage) and decided strictly
(``common.scoring.selection.STRICT``); its column is the micro average over all examples pooled, which is what
BiVLC's SugarCrepe column reports (CLIP 76.56 = 5,751 / 7,512, ``papers.bivlc.released``). The authors pooled the
7,512 rows of their own copy (``IMirandaM/BiVLC@84f0d175 source_data/SugarCrepe/test_SugarCrepe.csv``, the default
of ``IMirandaM/BiVLC@84f0d175 evaluation_SugarCrepe.py:25`` "default='./source_data/SugarCrepe/test_SugarCrepe.csv')",
read whole by ``IMirandaM/BiVLC@84f0d175 evaluation_SugarCrepe.py:59`` "df = pd.read_csv(args.data_path," and pooled
by ``IMirandaM/BiVLC@84f0d175 evaluation_SugarCrepe.py:69`` "checkpoint SUGARCREPE OVERALL: {(np.mean(correct)):.4}"),
whose swap_obj has 246 examples; SugarCrepe's release (``RAIVNLab/sugar-crepe@0047054b data/swap_obj.json``) has 245
(the COCO image 000000310622.jpg's "A West 32nd sign under a Korea Way road sign." is not in it), so the column here
is over 7,511 examples (``context.json``'s ``sugarcrepe_examples``).

Detectors (Sec. 5.3, ``papers.bivlc.detection``): per row of ``bivlc.full.detector_rows``, the image and text heads
on the frozen encoder's raw tower outputs (``papers.bivlc.detector_heads``: ``visual(x)`` and ``encode_text(x)``
unnormalised, as the authors' probes) give P(synthetic) of every image and caption; retrieval by the authors'
procedure, detection accuracy at 0.5. The heads are the authors' released ones (rows ``clipdet``,
``trohn-img-det``: imirandam/CLIP_Detector and imirandam/CLIP_TROHN-Img_Detector, compared instance by instance with
their released outputs ``IMirandaM/BiVLC@84f0d175 src/Detectors/results/BiVLC_Classifier_CORRECT_CLIP_baseline.csv``
and ``IMirandaM/BiVLC@84f0d175 src/Detectors/results/BiVLC_Classifier_CORRECT_CLIP_TROHN-Img.csv``) or trained here
(``ft-clipdet``, ``ft-trohn-img-det``: ``DetectorLoss.head`` saved by ``papers.bivlc.detectors_full``).

Stage ``tables-full`` (``python -m papers.bivlc.tables_full``) writes ``results/bivlc/full/`` as one output group:

* ``table2.csv``: per model row, model, label, I2T, T2I, group, Ipos2T, Ineg2T, Tpos2I, Tneg2I (points), sugarcrepe
  (points, micro average), n, ties (comparisons whose two similarities are equal);
* ``table4.csv``: per model, per type (replace, swap, add) and per category (``replace-obj`` ...): I2T, T2I,
  group (points) and n, as columns ``<type or category>_<metric>``;
* ``table5.csv`` (a header only when no detector row is scored): per detector row the heads' origin, text and image
  detection accuracy, I2T, T2I, group and the finer four (points), SugarCrepe (the positive caption judged strictly
  more natural), n, ties, and the agreement with the released per-instance outputs (``TABLE5_FIELDS``);
* ``comparisons.json``: the paper's findings with paired-bootstrap 95% intervals over the instances, by the mini
  profile's code and under its keys (``papers.bivlc.findings``): ``clip_i2t_minus_t2i`` (Finding 1),
  ``clip_i2t_minus_group`` (Finding 2), ``trohn_img_minus_clip_t2i`` / ``_group`` (the released TROHN-Img; the
  re-training's ``ft_trohn_img_minus_clip_*``), each with ``_ci_low`` / ``_ci_high``, every row's scores, Finding 3's
  best rows and the detector rows (``comparisons``);
* ``summary.json``: DVC metrics, at most twelve flat numbers; ``context.json``: the data files and their sha256, the
  category counts, each model's fingerprint and ties, rows left out and why, where the authors' code and this differ;
* ``predictions/<model>.csv``: every instance's four similarities and decisions under the released files' column
  names (``papers.bivlc.released`` rescores them), so every cell can be recounted.

A model that cannot be loaded stops the stage with the zoo's message; with ``skip_unavailable`` it is left out and
named in ``context.json``.
"""
from __future__ import annotations

import argparse
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from common.errors import WorkspaceError
from common.io import atomic_path, output_group, sha256_file, staged_to_final, write_csv_atomic, write_json_atomic
from common.jsonl import read_json
from common.paths import build_dir
from common.scoring.group import GroupResult
from common.scoring.selection import STRICT, SelectionResult
from common.tasks import DatasetError, GroupItem, ImageToTextItem
from common.training.records import training_context
from common.zoo import ModelFactory
from common.zoo import create_model as zoo_create
from common.zoo.available import each_model
from papers.bivlc import findings
from papers.bivlc.detection import score_detectors

DATA_FILES = ("papers/bivlc/models.toml", "papers/bivlc/sources.toml")
"""Read at run time (``common.stage_deps``): the zoo entries of ``bivlc.full.models``' names (BiVLC's released
fine-tunes and re-trainings; ARO's NegCLIP is in the shared ``common/zoo/models.toml``) and, for a model that cannot
be loaded, the note of its download entry."""
SOURCE = "bivlc/BiVLC"
SPLIT = "test"
N_INSTANCES = 2933
"""The released test split's size (the paper's and the dataset card's)."""
COLUMNS = ("image", "caption", "negative_caption", "negative_image", "type", "subtype")
TYPES = ("replace", "swap", "add")
CATEGORIES = ("replace-obj", "replace-att", "replace-rel", "swap-obj", "swap-att", "add-obj", "add-att")
"""As ``papers.bivlc.released.CATEGORIES`` (a test checks they agree; not imported, so that this stage does not
depend on the audit's code)."""
MAIN = ("I2T", "T2I", "group")
FINER = ("Ipos2T", "Ineg2T", "Tpos2I", "Tneg2I")
TABLE2_FIELDS = ("row", "model", "label", *MAIN, *FINER, "sugarcrepe", "n", "ties")
TABLE4_KEYS = (*TYPES, *CATEGORIES)
TABLE4_FIELDS = ("row", "model", "label", *(f"{k}_{m}" for k in TABLE4_KEYS for m in (*MAIN, "n")))
"""One row per model, wide as the mini table and the audit read it: per type, then per category, I2T/T2I/group
(points) and n (a category the split lacks is left empty)."""
TABLE5_FIELDS = ("row", "encoder", "label", "heads", "text_detection", "image_detection", *MAIN, *FINER, "sugarcrepe",
                 "n", "text_ties", "image_ties", "released_max_abs_diff", "released_instances_differing")
"""``heads``: "released" (the authors' files) or "trained here"; ``released_*``: against the authors' per-instance
outputs of the same heads (largest |P difference| over both towers, instances whose decisions differ; empty when the
row names none or it could not be fetched)."""
PREDICTION_FIELDS = ("item_id", "type", "subtype", "sim_C0_I0", "sim_C0_I1", "sim_C1_I0", "sim_C1_I1",
                     "text_score_i0", "text_score_i1", "image_score_c0", "image_score_c1", "text_score",
                     "image_score", "group_score")
"""The released ``results/BiVLC_<model>.csv`` columns (their ``sim_*`` names), so ``released.py`` rescores them."""
_PREDICTION_METRICS = {"text_score_i0": "Ipos2T", "text_score_i1": "Ineg2T", "image_score_c0": "Tpos2I",
                       "image_score_c1": "Tneg2I", "text_score": "I2T", "image_score": "T2I", "group_score": "group"}
SUMMARY_MAX = 12
GAIN_ROWS = ("trohn-img", "ft-trohn-img")
"""The TROHN-Img rows ``comparisons.json`` pairs with CLIP (``<row>_minus_clip_t2i``, ``..._group``): the released
fine-tune and this workspace's re-training."""
PAPER_VS_CODE: dict[str, str] = {
    "rule": ("code (evaluate_BiVLC, "
             'IMirandaM/BiVLC@84f0d175 src/CLIP_fine_tuning/CLIP_utils.py:161 "Ipos_2T = s_C0_I0 > s_C1_I0"): '
             "s_C0_I0 > s_C1_I0 etc. on normalised embeddings, strict; the same here (common.scoring.group), ties "
             "counted in table2.csv"),
    "precision": "code: open_clip models on a GPU in fp32 (no autocast); here the engine's precision "
                 "(params.yaml engine.precision)",
    "preprocess": "code: open_clip's evaluation transform of each model; the same here (the zoo's transform)",
    "sugarcrepe": ("code ("
                   'IMirandaM/BiVLC@84f0d175 src/CLIP_fine_tuning/CLIP_utils.py:133 "pos_score.item() > neg_score.item()"): '
                   "pos_score > neg_score per example, "
                   "the accuracy over the 7,512 rows of the authors' copy "
                   "(IMirandaM/BiVLC@84f0d175 source_data/SugarCrepe/test_SugarCrepe.csv, swap_obj 246) pooled "
                   '(IMirandaM/BiVLC@84f0d175 evaluation_SugarCrepe.py:69 "(np.mean(correct)):.4"); here the same '
                   "rule (SugarCrepe's loader, STRICT, micro average) over SugarCrepe's release, 7,511 examples (its "
                   "swap_obj.json has 245: 000000310622.jpg's 'A West 32nd sign under a Korea Way road sign.' is not "
                   "in it)"),
    "detectors": ('code (IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_evaluation_BiVLC.py:23-48 "x = self.classifier(x)"): '
                  "Linear(512, 1) on the tower's raw (unnormalised) output, fp32; the same here "
                  "(papers.bivlc.detector_heads), for the released heads and those trained here (DetectorLoss, "
                  "raw_features); the decision rule is the released detector evaluation's "
                  '(IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_evaluation_BiVLC.py:172 "np.round(i0) == 0"; '
                  "papers.bivlc.detection)"),
}


class BivlcFullError(WorkspaceError):
    """Nothing to score, an unusable snapshot, or scores that do not line up with the items."""


# ------------------------------------------------------------------------------------------------------------------
# Data
# ------------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BivlcSet:
    """The test split as group items, with what identifies the files it came from."""

    items: tuple[GroupItem, ...]
    files: tuple[Path, ...]
    sha256: dict[str, str]
    image_dir: Path

    def counts(self) -> dict[str, int]:
        found = [it.group for it in self.items]
        return {c: found.count(c) for c in CATEGORIES if c in found}

    def capped(self, cap: int) -> "BivlcSet":
        """The first ``cap`` instances of each category, in file order (``params.yaml full_inputs.cap``; every row
        was read and checked)."""
        seen: dict[str, int] = {}
        kept = []
        for it in self.items:
            seen[it.group] = seen.get(it.group, 0) + 1
            if seen[it.group] <= cap:
                kept.append(it)
        return BivlcSet(tuple(kept), self.files, self.sha256, self.image_dir)


def parquet_files(snapshot: Path) -> list[Path]:
    """The split's parquet shards of a Hugging Face dataset snapshot (``data/test-00000-of-0000N.parquet``, or any
    ``*test*.parquet`` below it), in name order."""
    snapshot = Path(snapshot)
    if not snapshot.is_dir():
        raise BivlcFullError(f"{snapshot}: no BiVLC snapshot here; fetch it with `python -m common fetch {SOURCE}`")
    files = sorted(p for p in snapshot.rglob("*.parquet")
                   if p.name.split("-")[0] == SPLIT or SPLIT in p.relative_to(snapshot).parts[:-1])
    if not files:
        raise BivlcFullError(f"{snapshot}: no parquet file of split {SPLIT!r} (expected data/{SPLIT}-*.parquet)")
    return files


def _extension(data: bytes) -> str:
    if data.startswith(b"\x89PNG"):
        return ".png"
    if data.startswith(b"\xff\xd8"):
        return ".jpg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return ".webp"
    return ".img"


def cache_image(data: bytes, image_dir: Path) -> Path:
    """The image's file in the content-addressed cache, written (atomically) when it is not there yet."""
    digest = hashlib.sha256(data).hexdigest()
    path = Path(image_dir) / f"{digest}{_extension(data)}"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            Path(tmp).write_bytes(data)
    return path


def _image_bytes(where: str, column: str, value) -> bytes:
    data = value.get("bytes") if isinstance(value, dict) else value
    if not isinstance(data, (bytes, bytearray)) or not data:
        raise DatasetError(f"{where}: column {column!r} holds no image bytes")
    return bytes(data)


def _text(where: str, column: str, value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise DatasetError(f"{where}: column {column!r} is {value!r:.40}, not a caption")
    return value


def _category(where: str, kind, sub) -> str:
    category = f"{str(kind).strip().lower()}-{str(sub).strip().lower()}"
    if category not in CATEGORIES:
        raise DatasetError(f"{where}: unknown category type={kind!r} subtype={sub!r} (known: {', '.join(CATEGORIES)})")
    return category


def load_bivlc(snapshot: Path, image_dir: Path, expected: int | None = N_INSTANCES) -> BivlcSet:
    """Every instance of the snapshot's test split, in file order, as a ``GroupItem``; ``expected`` (None: any) is
    the number of instances the split must have."""
    import pyarrow.parquet as pq

    files = parquet_files(snapshot)
    items: list[GroupItem] = []
    for path in files:
        handle = pq.ParquetFile(path)
        missing = [c for c in COLUMNS if c not in handle.schema_arrow.names]
        if missing:
            raise DatasetError(f"{path}: no column(s) {missing} (found {handle.schema_arrow.names})")
        row = 0
        for batch in handle.iter_batches(batch_size=64, columns=list(COLUMNS)):
            for record in batch.to_pylist():
                where = f"{path.name}: row {row}"
                images = (cache_image(_image_bytes(where, "image", record["image"]), image_dir),
                          cache_image(_image_bytes(where, "negative_image", record["negative_image"]), image_dir))
                captions = (_text(where, "caption", record["caption"]),
                            _text(where, "negative_caption", record["negative_caption"]))
                items.append(GroupItem(f"bivlc-{len(items):04d}", _category(where, record["type"], record["subtype"]),
                                       images, captions, origin=where))
                row += 1
    if not items:
        raise DatasetError(f"{Path(snapshot)}: the {SPLIT} split has no rows")
    if expected is not None and len(items) != expected:
        raise DatasetError(f"{Path(snapshot)}: {len(items)} instances in the {SPLIT} split, expected {expected}")
    return BivlcSet(tuple(items), tuple(files), {p.name: sha256_file(p) for p in files}, Path(image_dir))


# ------------------------------------------------------------------------------------------------------------------
# Scoring
# ------------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DetectorSpec:
    """One row of Table 5: a frozen encoder (zoo model) and the two heads applied to its towers' raw outputs (the
    heads trained here, or the authors' released ones: ``papers.bivlc.detector_heads``). ``released_outputs``: the
    registry key of the authors' per-instance outputs of these heads on BiVLC, compared with what is recomputed here
    (empty: none)."""

    encoder: str
    image_head: Path
    text_head: Path
    label: str = ""
    released_outputs: str = ""

    @classmethod
    def from_params(cls, section: Mapping) -> "DetectorSpec":
        return cls(str(section["encoder"]), head_path(section["image_head"]), head_path(section["text_head"]),
                   str(section.get("label", "")), str(section.get("released_outputs", "")))


def head_path(where: str | Path) -> Path:
    """``data:<path>`` (a fetched file: the released heads) and ``build:<path>`` against the workspace roots; any
    other path as given (relative to the repository root, where the stage runs)."""
    from common.paths import build_root, data_root

    scheme, sep, rel = str(where).partition(":")
    roots = {"data": data_root, "build": build_root}
    return roots[scheme]() / rel if sep and scheme in roots else Path(where)


def shown_path(path: Path) -> str:
    """A head file as ``context.json`` names it: ``data:<path>`` / ``build:<path>`` under those roots, else as given
    (the context must not name this machine's folders)."""
    from common.paths import build_root, data_root

    for scheme, root in (("data", data_root()), ("build", build_root())):
        if Path(path).is_absolute() and Path(path).is_relative_to(root):
            return f"{scheme}:{Path(path).relative_to(root).as_posix()}"
    return str(path)


@dataclass(frozen=True)
class DetectorProbabilities:
    """P(synthetic) of each instance's (natural, synthetic) image and caption, and of SugarCrepe's (positive,
    negative) captions."""

    image: np.ndarray
    text: np.ndarray
    sugarcrepe_text: np.ndarray | None = None


@dataclass(frozen=True)
class Scored:
    row: str
    model: str
    label: str
    bivlc: GroupResult
    sugarcrepe: SelectionResult | None
    fingerprint: str


@dataclass(frozen=True)
class ScoredDetector:
    row: str
    spec: DetectorSpec
    probabilities: DetectorProbabilities
    fingerprint: str
    heads: dict = field(default_factory=dict)
    released: dict | None = None
    """The comparison with the authors' per-instance outputs (``_released_comparison``), when the row names them."""


def model_label(name: str) -> str:
    """The zoo entry's label; a model the zoo does not register (a stand-in in tests) is labelled by its name."""
    from common.zoo import get_spec

    try:
        return get_spec(name).label
    except KeyError:
        return name


def _check_order(row: str, ids: Sequence[str], items: Sequence) -> None:
    if list(ids) != [it.item_id for it in items]:
        raise BivlcFullError(f"row {row!r}: the outcomes are not in the items' order")


def score_models(models: Mapping[str, str], items: Sequence[GroupItem],
                 sugarcrepe: Sequence[ImageToTextItem] | None = None, engine_config=None, device: str = "cpu",
                 create: ModelFactory = zoo_create, skip_unavailable: bool = False
                 ) -> tuple[list[Scored], dict[str, str]]:
    """Every (row -> zoo model) on BiVLC (and SugarCrepe, when given), one model loaded at a time."""
    from common.engine import Engine
    from common.scoring import group, selection

    scored, skipped = [], {}
    for row, name, model in each_model(models, skipped, create=create, device=device,
                                       skip_unavailable=skip_unavailable, what="BiVLC row"):
        engine = Engine(model, engine_config)
        result = group.evaluate(engine, items)
        _check_order(row, [o.item_id for o in result.outcomes], items)
        sc = None
        if sugarcrepe is not None:
            sc = selection.evaluate(engine, sugarcrepe, STRICT)
            _check_order(row, [o.item_id for o in sc.outcomes], sugarcrepe)
        scored.append(Scored(row, name, model_label(name), result, sc, model.fingerprint))
        del model, engine
    return scored, skipped


def detector_probabilities(model, heads: Mapping, items: Sequence[GroupItem],
                           sugarcrepe: Sequence[ImageToTextItem] | None = None) -> DetectorProbabilities:
    """Both heads on the towers' raw outputs (``detector_heads.tower_outputs``: what the authors' probes read)."""
    from papers.bivlc.detector_heads import probabilities, tower_outputs

    img, txt = tower_outputs(model, [i for it in items for i in it.images], [c for it in items for c in it.captions])
    image = probabilities(heads["image"], img).reshape(len(items), 2)
    text = probabilities(heads["text"], txt).reshape(len(items), 2)
    sc = None
    if sugarcrepe is not None:
        _, feats = tower_outputs(model, (), [c for it in sugarcrepe for c in it.captions[:2]])
        sc = probabilities(heads["text"], feats).reshape(len(sugarcrepe), 2)
    return DetectorProbabilities(image, text, sc)


def _released_comparison(spec: DetectorSpec, probs: DetectorProbabilities, fetch: Callable[[str], Path]) -> dict | None:
    """The recomputed probabilities against the authors' released ones (``released_outputs``); a file that cannot be
    fetched is recorded, not fatal (the comparison is a check, the scores stand without it)."""
    from common.registry.errors import FetchError, RegistryError
    from papers.bivlc.detector_heads import compare_with_released, read_released_outputs

    if not spec.released_outputs:
        return None
    try:
        path = fetch(spec.released_outputs)
    except (FetchError, RegistryError) as exc:
        return {"file": spec.released_outputs, "comparable": False,
                "why": f"not fetched: {(str(exc).splitlines() or [''])[0][:200]}"}
    image, text = read_released_outputs(path)
    return {"file": spec.released_outputs, "sha256": sha256_file(path),
            **compare_with_released(probs.image, probs.text, image, text)}


def _default_fetch(key: str) -> Path:
    from common.registry.fetch import fetch

    return fetch(key, progress=False)


def score_detectors_rows(detectors: Mapping[str, DetectorSpec], items: Sequence[GroupItem],
                         sugarcrepe: Sequence[ImageToTextItem] | None = None, device: str = "cpu",
                         create: ModelFactory = zoo_create, skip_unavailable: bool = False,
                         fetch: Callable[[str], Path] = _default_fetch
                         ) -> tuple[list[ScoredDetector], dict[str, str]]:
    """Every detector row: its heads on its encoder's raw tower outputs, the released heads' saved towers checked
    against the encoder, and the released per-instance outputs compared where the row names them. A missing head
    file is an error; an encoder that cannot be loaded follows ``skip_unavailable``."""
    from papers.bivlc.detector_heads import load_head, tower_agreement

    out, skipped = [], {}
    encoders = {row: spec.encoder for row, spec in detectors.items()}
    for row, _name, model in each_model(encoders, skipped, create=create, device=device,
                                        skip_unavailable=skip_unavailable, what="BiVLC detector row"):
        spec = detectors[row]
        heads = {"image": load_head(spec.image_head, "image"), "text": load_head(spec.text_head, "text")}
        probs = detector_probabilities(model, heads, items, sugarcrepe)
        described = {k: {"file": shown_path(p), "sha256": sha256_file(p), "kind": "released" if heads[k].tower_state
                         else "trained here", "tower_agreement": tower_agreement(heads[k], model.model)}
                     for k, p in (("image", spec.image_head), ("text", spec.text_head))}
        out.append(ScoredDetector(row, spec, probs, model.fingerprint, described,
                                  _released_comparison(spec, probs, fetch)))
        del model
    return out, skipped


# ------------------------------------------------------------------------------------------------------------------
# Tables
# ------------------------------------------------------------------------------------------------------------------
def _pct(x: float) -> float:
    return round(100.0 * float(x), 2)


def sugarcrepe_micro(result: SelectionResult) -> float:
    """Accuracy over all examples pooled (BiVLC's SugarCrepe column), a fraction."""
    if not result.outcomes:
        raise BivlcFullError("SugarCrepe: no examples scored")
    return float(np.mean([o.correct for o in result.outcomes]))


def table2_row(s: Scored) -> dict:
    acc = s.bivlc.accuracy()
    return {"row": s.row, "model": s.model, "label": s.label, **{m: _pct(acc[m]) for m in (*MAIN, *FINER)},
            "sugarcrepe": "" if s.sugarcrepe is None else _pct(sugarcrepe_micro(s.sugarcrepe)),
            "n": len(s.bivlc.outcomes), "ties": sum(s.bivlc.tie_counts().values())}


def table4_row(s: Scored) -> dict:
    """Per type, then per category: I2T/T2I/group in points and n (empty where no instance has that key)."""
    row = {"row": s.row, "model": s.model, "label": s.label}
    for key in TABLE4_KEYS:
        chosen = [o for o in s.bivlc.outcomes if key in (o.group, o.group.split("-")[0])]
        acc = s.bivlc.accuracy(chosen) if chosen else {}
        row.update({f"{key}_{m}": _pct(acc[m]) if chosen else "" for m in MAIN})
        row[f"{key}_n"] = len(chosen) if chosen else ""
    return row


def table5_row(d: ScoredDetector) -> dict:
    p = d.probabilities
    outcome = score_detectors(p.image, p.text)
    acc = outcome.accuracy()
    sc = "" if p.sugarcrepe_text is None else _pct(np.mean(p.sugarcrepe_text[:, 0] < p.sugarcrepe_text[:, 1]))
    kinds = sorted({h["kind"] for h in d.heads.values()}) if d.heads else ["trained here"]
    compared = d.released if d.released and d.released.get("comparable") else None
    return {"row": d.row, "encoder": d.spec.encoder, "label": d.spec.label or d.row, "heads": " + ".join(kinds),
            "text_detection": _pct(outcome.text_detection), "image_detection": _pct(outcome.image_detection),
            **{m: _pct(acc[m]) for m in (*MAIN, *FINER)}, "sugarcrepe": sc, "n": len(p.image),
            "text_ties": outcome.text_ties, "image_ties": outcome.image_ties,
            "released_max_abs_diff": "" if compared is None else
            max(compared["image_max_abs_diff"], compared["text_max_abs_diff"]),
            "released_instances_differing": "" if compared is None else compared["instances_with_a_decision_differing"]}


def summary(rows2: Sequence[Mapping], rows5: Sequence[Mapping] = ()) -> dict[str, float]:
    """DVC metrics, at most ``SUMMARY_MAX``: each model row's group, each detector row's group, then the model rows'
    T2I (the paper's finding: T2I lags I2T) while room is left."""
    out: dict[str, float] = {}
    candidates = [(f"{r['row']}_group", r["group"]) for r in rows2]
    candidates += [(f"{r['row']}_group", r["group"]) for r in rows5]
    candidates += [(f"{r['row']}_t2i", r["T2I"]) for r in rows2]
    for key, value in candidates:
        key = key.replace("-", "_")
        if len(out) < SUMMARY_MAX and key not in out:
            out[key] = float(value)
    return out


def prediction_rows(result: GroupResult) -> list[dict]:
    rows = []
    for o in result.outcomes:
        kind, sub = o.group.split("-")
        (c0i0, c0i1), (c1i0, c1i1) = o.similarities
        rows.append({"item_id": o.item_id, "type": kind, "subtype": sub, "sim_C0_I0": repr(c0i0),
                     "sim_C0_I1": repr(c0i1), "sim_C1_I0": repr(c1i0), "sim_C1_I1": repr(c1i1),
                     **{col: o.decisions[m] for col, m in _PREDICTION_METRICS.items()}})
    return rows


def pretrained_rows(scored: Sequence[Scored]) -> list[str]:
    """The rows whose zoo model is no fine-tune (its entry has no ``finetuned_from``): the rows Finding 1's "every
    pretrained model" ranges over. A model the zoo does not register (a stand-in) is not counted."""
    from common.zoo import get_spec

    out = []
    for s in scored:
        try:
            spec = get_spec(s.model)
        except KeyError:
            continue
        if spec.finetuned_from is None:
            out.append(s.row)
    return out


def comparisons(scored: Sequence[Scored], rows2: Sequence[Mapping], rows5: Sequence[Mapping] = ()) -> dict:
    """``comparisons.json``: the paper's findings with paired-bootstrap intervals over the 2,933 instances, by the
    mini profile's code (``papers.bivlc.findings.compare``): CLIP's I2T minus T2I and I2T minus group, every other
    row's scores, each TROHN-Img row (the released ``trohn-img``, the re-training ``ft-trohn-img``) minus CLIP on
    T2I and group, Finding 3's best rows and the detector rows. A row left out of the run leaves its keys out."""
    return findings.compare({r["row"]: r for r in rows2}, {s.row: s.bivlc for s in scored},
                            {r["row"]: r for r in rows5}, runs=[s.row for s in scored if s.row != findings.BASE],
                            pretrained=pretrained_rows(scored), gains=GAIN_ROWS)


def write_outputs(out_dir: Path, scored: Sequence[Scored], detectors: Sequence[ScoredDetector],
                  context: Mapping) -> dict[str, Path]:
    """table2.csv, table4.csv, (table5.csv), comparisons.json, summary.json, context.json and predictions/ as one
    output group."""
    rows2 = [table2_row(s) for s in scored]
    rows5 = [table5_row(d) for d in detectors]
    out_dir = Path(out_dir)
    with output_group(out_dir) as staging:
        paths = {
            "table2": write_csv_atomic(staging / "table2.csv", rows2, TABLE2_FIELDS),
            "table4": write_csv_atomic(staging / "table4.csv", [table4_row(s) for s in scored], TABLE4_FIELDS),
            "table5": write_csv_atomic(staging / "table5.csv", rows5, TABLE5_FIELDS),
            "comparisons": write_json_atomic(staging / "comparisons.json", comparisons(scored, rows2, rows5)),
            "summary": write_json_atomic(staging / "summary.json", summary(rows2, rows5)),
            "context": write_json_atomic(staging / "context.json", dict(context)),
        }
        predictions = staging / "predictions"
        for s in scored:
            write_csv_atomic(predictions / f"{s.model.replace('/', '__')}.csv", prediction_rows(s.bivlc),
                             PREDICTION_FIELDS)
        paths["predictions"] = predictions
    return {k: staged_to_final(p, staging, out_dir) for k, p in paths.items()}


def evaluate_tables(models: Mapping[str, str], data: BivlcSet, out_dir: Path,
                    sugarcrepe: Sequence[ImageToTextItem] | None = None, detectors: Mapping[str, DetectorSpec] = {},
                    engine_config=None, device: str = "cpu", create: ModelFactory = zoo_create,
                    skip_unavailable: bool = False, context: Mapping | None = None,
                    fetch: Callable[[str], Path] = _default_fetch) -> dict[str, Path]:
    """Score every model (and detector) and write the tables; nothing is written when a model fails or none could
    be scored."""
    if not models:
        raise BivlcFullError("bivlc.full.models is empty: no BiVLC row to score")
    scored, skipped = score_models(models, data.items, sugarcrepe, engine_config, device, create, skip_unavailable)
    if not scored:
        raise BivlcFullError(f"no model of bivlc.full.models could be loaded: {skipped}")
    dets, skipped_dets = score_detectors_rows(detectors, data.items, sugarcrepe, device, create, skip_unavailable,
                                              fetch)
    full_context = {
        **dict(context or {}), "profile": "full",
        "rule": "strict: s(C0,I0) > s(C1,I0) etc. on normalised embeddings, a tie is wrong (common.scoring.group)",
        "data": {"source": SOURCE, "split": SPLIT, "files": {p.name: data.sha256[p.name] for p in data.files},
                 "instances": len(data.items), "categories": data.counts(), "image_cache": str(data.image_dir)},
        "sugarcrepe_examples": None if sugarcrepe is None else len(sugarcrepe),
        "models": {s.row: {"model": s.model, "label": s.label, "fingerprint": s.fingerprint,
                           "ties": s.bivlc.tie_counts(), "n": len(s.bivlc.outcomes),
                           "sugarcrepe_ties": None if s.sugarcrepe is None else s.sugarcrepe.ties} for s in scored},
        "detectors": {d.row: {"encoder": d.spec.encoder, "fingerprint": d.fingerprint, "heads": d.heads,
                              "features": "the towers' raw outputs (encode_*(normalize=False)), fp32",
                              "threshold": "p > 0.5 is synthetic (np.round: 0.5 is natural)",
                              "released_outputs": d.released} for d in dets},
        "skipped": {**skipped, **{f"detector:{r}": why for r, why in skipped_dets.items()}},
        "paper_vs_code": PAPER_VS_CODE,
    }
    return write_outputs(out_dir, scored, dets, full_context)


# ------------------------------------------------------------------------------------------------------------------
# Entry point
# ------------------------------------------------------------------------------------------------------------------
def load_sugarcrepe(manifest: Path) -> tuple[list[ImageToTextItem], dict]:
    """SugarCrepe's set through its own loader (every example, or a ``DatasetError``)."""
    from common.benchmarks.caption_negatives import PreparedSet

    prepared = PreparedSet.load(Path(manifest))
    return prepared.items(), prepared.describe()


def default_image_dir() -> Path:
    return build_dir("full", "bivlc") / "images"


def training_records(models: Mapping[str, str], detectors: Mapping[str, "DetectorSpec"]) -> dict[str, dict]:
    """The context's ``training``: each re-training's (``ft-<run>``, a ``build:`` checkpoint) and each head trained
    here's (``detection.head_run``) sidecar record and recipe, for the audit's notes; released weights and heads have
    no sidecar and no entry."""
    from common.zoo import get_spec
    from papers.bivlc.detection import head_run

    weights = {row: get_spec(name).checkpoint_path() for row, name in models.items()
               if (get_spec(name).checkpoint or "").startswith("build:")}
    weights.update({head_run(row, tower): head for row, spec in detectors.items()
                    for tower, head in (("image", spec.image_head), ("text", spec.text_head))})
    return training_context(weights)


def run_tables(args: argparse.Namespace) -> int:
    from common.evaluate import best_device, engine_config
    from common.inputs import full_inputs
    from common.params import own_section
    from common.paths import RESULTS, data_root

    params, section = own_section("bivlc.full")
    inputs = full_inputs(params)
    device = args.device or best_device()
    data = load_bivlc(Path(args.data or data_root() / "bivlc" / "BiVLC"), Path(args.images or default_image_dir()),
                      None if args.any_size or not inputs.published else N_INSTANCES)
    if inputs.cap is not None:
        data = data.capped(inputs.cap)
    sugarcrepe, described = None, None
    if not args.no_sugarcrepe:
        sugarcrepe, described = load_sugarcrepe(
            Path(args.sugarcrepe or build_dir("full", "sugarcrepe") / "manifest.json"))
    rows5 = dict(section.get("detector_rows") or {})
    detectors = {row: DetectorSpec.from_params(spec) for row, spec in rows5.items()}
    context = {"device": device, "engine": params.get("engine", {}), "sugarcrepe_set": described,
               "training": training_records(dict(section["models"]), detectors)}
    paths = evaluate_tables(dict(section["models"]), data, Path(args.out or RESULTS / "bivlc" / "full"), sugarcrepe,
                            detectors, engine_config(params), device, create=zoo_create,
                            skip_unavailable=bool(section["skip_unavailable"]), context=context)
    for name, path in paths.items():
        print(f"{name}: {path}")
    print(paths["table2"].read_text(encoding="utf-8"))
    print(json.dumps(read_json(paths["summary"]), indent=2))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m papers.bivlc.tables_full", description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help=f"the {SOURCE} snapshot (default: <data root>/bivlc/BiVLC)")
    parser.add_argument("--images", default=None, help="the image cache (default: build/full/bivlc/images)")
    parser.add_argument("--sugarcrepe", default=None,
                        help="SugarCrepe's set manifest (default: build/full/sugarcrepe/manifest.json)")
    parser.add_argument("--no-sugarcrepe", action="store_true", help="leave the sugarcrepe column empty")
    parser.add_argument("--any-size", action="store_true", help=f"accept a split of other than {N_INSTANCES} rows "
                        "(inputs that are not the published files, params.yaml full_inputs.published: false, are "
                        "accepted at their size)")
    parser.add_argument("--out", default=None, help="default: results/bivlc/full")
    parser.add_argument("--device", default=None, help="default: cuda when available, else cpu")
    return run_tables(parser.parse_args(argv))


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
