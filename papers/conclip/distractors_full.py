"""CoN-CLIP's distractor images (Supplementary 0.B, eq. 4) in the full profile: eq. 4 mined again over COCO train
2017 for a seeded sample of CC-Neg's training entries, against the released ``distractor_image_mapping.pt``.

The authors released only eq. 4's result, k pool indices per training entry of which CoN-CLIP trains on the first
(``papers.conclip.coco_pool`` cites both). The mining code is not in the release: the paper's Supplementary 0.B is
all there is ("we take the subject s and the negated object o_n from the relation parsing output of PaLM-2", then
eq. 4 with "the CLIP similarity function"). This stage mines each sampled entry's top-k with
``conclip.full.distractors.model`` and compares the release's row with it (``DISTRACTOR_FIELDS``). Which texts stand
for s and o_n (the parse's bare subject mined beside them, the ``paper_*`` columns) and the chunked rule of the
``code_rule_*`` columns are this workspace's readings, not in the release (rules unverified, ``PAPER_VS_CODE``): the
data say which the release follows. The mini profile's columns (``eq4_precision``, ``eq4_chance``) need scene graphs,
which COCO lacks: agreement with the release takes their place.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from common.errors import WorkspaceError
from common.files.io import sha256_file, write_csv_atomic, write_json_atomic, write_output_group
from common.files.tasks import DatasetError, raise_problems
from common.paths import RESULTS
from common.pipeline.cli import DEVICE_HELP, print_written, stage_parser
from common.pipeline.params import own_section
from common.registry.fetch import fetch
from common.zoo import ModelFactory, ModelUnavailable, create_model as zoo_create
from common.zoo.available import why_unavailable
from papers.conclip import ccneg, coco_pool
from papers.conclip.columns import model_label
from papers.conclip.distractors import distractor_scores, mine_distractors

DATA_FILES = ("papers/conclip/sources.toml", "papers/conclip/models.toml")
"""Read at run time (``common.pipeline.stage_deps``): CC-Neg's and the mapping's download entries, the zoo's."""
SUBJECT_FIELD = "exclusion-prompt"
"""``sop_data`` field encoded as s: the "concept present" (a reading of the file's fields: ``PAPER_VS_CODE``)."""
OBJECT_FIELD = "sop_chosen_object"
"""``sop_data`` field encoded as o_n: the "concept absent" (not in the release, as ``SUBJECT_FIELD``)."""
CODE_CHUNK = 5000
"""Images per chunk of the hypothetical chunked rule (``code_rule_rows``), each chunk contributing its best image."""
WITHIN_KS: tuple[int, ...] = (1, 5, 10)
"""``released_in_top_<k>``: the released top-1 within our k best (k = 1 is top-1 agreement)."""
ENTRY_BATCH = 256
"""Entries scored against the whole pool at a time: (256, 118,287) float64 scores are 240 MB."""
DISTRACTOR_FIELDS = (
    "entry", "model", "subject", "negated_object", "released_top1", "ours_top1",
    *(f"released_in_top_{k}" for k in WITHIN_KS), "released_rank", "ours_score", "released_score", "score_gap",
    "released_in_ours_top_k", "code_rule_top1", "code_rule_agrees", "code_rule_row_agrees", "released_row",
    "ours_top_k", "code_rule_row", "released_top1_image", "ours_top1_image", "paper_subject", "paper_top1",
    "paper_agrees", "paper_released_rank")
SUMMARY_KEYS = (
    "n_entries", "pool_size", "top1_agreement", "released_in_top_5", "released_in_top_10", "released_rank_median",
    "score_gap_mean", "score_gap_median", "code_rule_top1_agreement", "code_rule_row_agreement",
    "paper_subject_top1_agreement", "paper_vs_code_texts_top1_agreement")
"""DVC metrics (rates in points): how often the release agrees with eq. 4 and with the chunked rule on our scores,
how far down our ranking its top-1 lies, and how much the paper's bare subject changes the picks."""
PAPER_VS_CODE: dict[str, str] = {
    "texts": "paper (Supplementary 0.B): s = the subject, o_n = the negated object, 'from the relation parsing output "
             "of PaLM-2'. Not in the release: the authors' mining code (no released file reads the texts it encoded). "
             "Here: s = sop_data['exclusion-prompt'] (the caption with the chosen predicate-object pair removed), "
             "o_n = sop_data['sop_chosen_object'] (a reading of the file's fields, rule unverified); the parse's "
             "subject (sop_data['sop_decomposition']['subject']) beside it in the paper_* columns",
    "selection": "paper: argmax over X of phi(x, s) - phi(x, o_n) (eq. 4). Not in the release: how the authors "
                 "selected. Here: ours = eq. 4's argmax (ties to the lower pool index); code_rule_* = a hypothetical "
                 "chunked rule on our scores (each chunk of 5,000 images' best image, the winners sorted by score "
                 "ascending, the first k kept), rule unverified: the data say whether the release follows it",
    "model": "paper: 'the CLIP similarity function' (its CLIP is ViT-B/32). Not in the release: which CLIP the "
             "authors mined with. Here: conclip.full.distractors.model through the zoo, at the engine's precision "
             "(params.yaml engine.precision)",
    "entries": "code: the training loader reads row idx of the mapping for training entry idx of "
               "ccneg_preprocessed.pt, "
               'jaisidhsingh/CoN-CLIP@503388ac src/data/finetuning_datasets.py:76 "mapping_cc3m_to_coco[idx]"'
               ". Here: row i of the mapping is training entry i (coco_pool.load_distractor_mapping); the texts the "
               "authors mined from are not in the release, so that both files list the entries in one order is "
               "assumed",
    "pool": "code: torchvision CocoCaptions over captions_train2017.json (images by ascending id), "
            'jaisidhsingh/CoN-CLIP@503388ac src/data/finetuning_datasets.py:58 "dsets.CocoCaptions("'
            "; the same here (coco_pool.coco_train_images)",
    "features": "paper: 'the CLIP similarity function'; here L2-normalised image and text embeddings, phi = their dot "
                "product",
}


class DistractorsFullError(WorkspaceError):
    """Parameters that cannot be honoured, or a mapping that cannot be lined up with CC-Neg's training entries."""


# --- The texts of the sampled entries ---
@dataclass(frozen=True)
class MiningTexts:
    """One training entry's eq. 4 texts (``SUBJECT_FIELD``, ``OBJECT_FIELD``) and the parse's bare subject, if any."""

    entry: int
    subject: str
    negated_object: str
    paper_subject: str | None


@dataclass(frozen=True)
class TrainingTexts:
    path: Path
    sha256: str
    n_entries: int
    eval_size: int
    texts: tuple[MiningTexts, ...]

    @property
    def n_training(self) -> int:
        return self.n_entries - self.eval_size


def sample_entries(n_training: int, n: int, seed: int) -> np.ndarray:
    """``n`` training-entry indices drawn without replacement, ascending; every entry when ``n >= n_training``."""
    if n < 1:
        raise DistractorsFullError(f"conclip.full.distractors.n must be positive, got {n}")
    if n >= n_training:
        return np.arange(n_training, dtype=np.int64)
    return np.sort(np.random.default_rng(seed).choice(n_training, size=n, replace=False)).astype(np.int64)


def _paper_subject(annotation: Any) -> str | None:
    """The parse's bare subject: the paper's s (Supplementary 0.B)."""
    node = annotation
    for part in ("sop_data", "sop_decomposition", "subject"):
        node = node.get(part) if isinstance(node, Mapping) else None
    if not isinstance(node, str) or not node.strip() or node.strip() == "None":
        return None  # a missing subject, or the text "None" standing for one: left out
    return node


def read_training_texts(pt_path: Path, n: int, seed: int, eval_size: int = ccneg.EVAL_SIZE) -> TrainingTexts:
    """The eq. 4 texts of ``n`` seeded training entries; every sampled entry without the two texts is reported."""
    pt_path = Path(pt_path)
    _, annotations, n_entries = ccneg.training_lists(pt_path, eval_size)
    texts: list[MiningTexts] = []
    problems: list[str] = []
    for entry in sample_entries(n_entries - eval_size, n, seed).tolist():
        origin = f"{pt_path}: entry {entry}"
        annotation = annotations[entry]
        try:
            subject = ccneg.annotation_text(annotation, "sop_data", SUBJECT_FIELD, entry, origin)
            negated = ccneg.annotation_text(annotation, "sop_data", OBJECT_FIELD, entry, origin)
        except DatasetError as exc:
            problems.append(f"{exc} (eq. 4's texts, as this stage reads them: SUBJECT_FIELD, OBJECT_FIELD)")
            continue
        texts.append(MiningTexts(entry, subject, negated, _paper_subject(annotation)))
    raise_problems(problems, "entries", where=str(pt_path))
    return TrainingTexts(pt_path, sha256_file(pt_path), n_entries, eval_size, tuple(texts))


# --- Rules on a score matrix ---
def rank_of(scores: np.ndarray, index: np.ndarray) -> np.ndarray:
    """(M,) 1-based rank of pool image ``index[m]`` in row m of ``scores`` (M, N), in ``mine_distractors``' order:
    higher scores first, ties to the lower pool index."""
    rows = np.arange(len(scores))
    own = scores[rows, index][:, None]
    before = (scores > own) | ((scores == own) & (np.arange(scores.shape[1])[None, :] < index[:, None]))
    return before.sum(axis=1) + 1


def code_rule_rows(scores: np.ndarray, k: int, chunk_size: int = CODE_CHUNK) -> np.ndarray:
    """(M, k) pool indices by the hypothetical chunked rule: each chunk's best image (the lower index among equals),
    the winners sorted by score ascending (stable), the first ``k`` kept. Not in the release: an earlier reading of
    the authors' code described it, but the code read is not in any commit of the repository."""
    n_images = scores.shape[1]
    starts = np.arange(0, n_images, chunk_size)
    if not 1 <= k <= len(starts):
        raise DistractorsFullError(f"the code's rule keeps one image per chunk: k={k} with {len(starts)} chunks of "
                                   f"{chunk_size} images")
    winners = np.stack([start + scores[:, start:start + chunk_size].argmax(axis=1) for start in starts], axis=1)
    values = np.take_along_axis(scores, winners, axis=1)
    order = np.argsort(values, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(winners, order, axis=1)


# --- The comparison ---
def _ids(indices: np.ndarray) -> str:
    return " ".join(str(int(i)) for i in indices)


def compare_with_release(texts: Sequence[MiningTexts], pool: Sequence[Path], mapping: np.ndarray, engine, top_k: int,
                         chunk_size: int) -> tuple[list[dict], int]:
    """One row per entry (``DISTRACTOR_FIELDS``) against the release's row ``mapping[entry]``, and how many released
    top-1s tie our top-1's score exactly (a different image that eq. 4 ranks below ours only by pool index)."""
    strings = [t for m in texts for t in (m.subject, m.negated_object, m.paper_subject) if t is not None]
    emb = engine.embed(((p, f"COCO train 2017 pool image {i}") for i, p in enumerate(pool)), strings)
    images = emb.images(list(pool))
    model = engine.model.name
    rows: list[dict] = []
    ties = 0
    for start in range(0, len(texts), ENTRY_BATCH):
        part = texts[start:start + ENTRY_BATCH]
        subjects, objects = emb.texts([m.subject for m in part]), emb.texts([m.negated_object for m in part])
        scores = distractor_scores(images, subjects, objects)
        ours = mine_distractors(images, subjects, objects, top_k=top_k)
        released = mapping[[m.entry for m in part]]
        ranks = rank_of(scores, released[:, 0])
        code = code_rule_rows(scores, released.shape[1], chunk_size)
        with_paper = [i for i, m in enumerate(part) if m.paper_subject is not None]
        paper_top1, paper_rank = {}, {}
        if with_paper:
            paper_subjects = emb.texts([part[i].paper_subject for i in with_paper])
            paper_scores = distractor_scores(images, paper_subjects, objects[with_paper])
            picks = mine_distractors(images, paper_subjects, objects[with_paper], top_k=1)[:, 0]
            paper_top1 = dict(zip(with_paper, picks.tolist()))
            paper_rank = dict(zip(with_paper, rank_of(paper_scores, released[with_paper, 0]).tolist()))
        for i, m in enumerate(part):
            rel, top = int(released[i, 0]), int(ours[i, 0])
            ours_score, rel_score = float(scores[i, top]), float(scores[i, rel])
            ties += rel != top and ours_score == rel_score
            rows.append({
                "entry": m.entry, "model": model, "subject": m.subject, "negated_object": m.negated_object,
                "released_top1": rel, "ours_top1": top,
                **{f"released_in_top_{k}": int(ranks[i] <= k) for k in WITHIN_KS},
                "released_rank": int(ranks[i]), "ours_score": round(ours_score, 6),
                "released_score": round(rel_score, 6), "score_gap": round(ours_score - rel_score, 6),
                "released_in_ours_top_k": int(np.isin(released[i], ours[i]).sum()),
                "code_rule_top1": int(code[i, 0]), "code_rule_agrees": int(code[i, 0] == rel),
                "code_rule_row_agrees": int(np.array_equal(code[i], released[i])),
                "released_row": _ids(released[i]), "ours_top_k": _ids(ours[i]), "code_rule_row": _ids(code[i]),
                "released_top1_image": Path(pool[rel]).name, "ours_top1_image": Path(pool[top]).name,
                "paper_subject": m.paper_subject or "",
                "paper_top1": paper_top1.get(i, ""),
                "paper_agrees": int(paper_top1[i] == rel) if i in paper_top1 else "",
                "paper_released_rank": paper_rank.get(i, ""),
            })
    return rows, int(ties)


def _pct(values: Sequence[float]) -> float:
    return round(100.0 * float(np.mean(values)), 2)


def summary(rows: Sequence[Mapping], pool_size: int) -> dict[str, float]:
    """``SUMMARY_KEYS`` from the per-entry rows (a rate over no entry is left out rather than written as NaN)."""
    paper = [r for r in rows if r["paper_top1"] != ""]
    gaps = [r["score_gap"] for r in rows]
    out = {
        "n_entries": float(len(rows)), "pool_size": float(pool_size),
        "top1_agreement": _pct([r["released_in_top_1"] for r in rows]),
        **{f"released_in_top_{k}": _pct([r[f"released_in_top_{k}"] for r in rows]) for k in WITHIN_KS[1:]},
        "released_rank_median": float(np.median([r["released_rank"] for r in rows])),
        "score_gap_mean": round(float(np.mean(gaps)), 6), "score_gap_median": round(float(np.median(gaps)), 6),
        "code_rule_top1_agreement": _pct([r["code_rule_agrees"] for r in rows]),
        "code_rule_row_agreement": _pct([r["code_rule_row_agrees"] for r in rows]),
    }
    if paper:
        out["paper_subject_top1_agreement"] = _pct([r["paper_agrees"] for r in paper])
        out["paper_vs_code_texts_top1_agreement"] = _pct([r["paper_top1"] == r["ours_top1"] for r in paper])
    return out


def evaluate_distractors(ccneg_path: Path, mapping_path: Path, pool: Sequence[Path], out_dir: Path, *, n: int,
                         seed: int, model: str, top_k: int, engine_config=None, device: str = "cpu",
                         create: ModelFactory = zoo_create, chunk_size: int = CODE_CHUNK,
                         eval_size: int = ccneg.EVAL_SIZE, context: Mapping | None = None) -> dict[str, Path]:
    """Read, check, mine and compare (the cheap checks first), then write the files as one output group."""
    # deferred: loads tqdm only when called
    from common.evaluation.engine import Engine

    pool = [Path(p) for p in pool]
    if not pool:
        raise DistractorsFullError("the COCO train 2017 pool is empty")
    texts = read_training_texts(ccneg_path, n, seed, eval_size)
    mapping_path = Path(mapping_path)
    mapping = coco_pool.load_distractor_mapping(mapping_path, pool_size=len(pool))
    if len(mapping) < texts.n_training:
        raise DistractorsFullError(
            f"{mapping_path}: {len(mapping)} rows for the {texts.n_training} training entries of {texts.path} (the "
            f"authors' loader reads mapping[idx] for every training entry idx: entry {len(mapping)} has no row); is "
            "this the mapping released with this ccneg_preprocessed.pt?")
    if not 1 <= top_k <= len(pool):
        raise DistractorsFullError(f"conclip.full.distractors.top_k={top_k} with a pool of {len(pool)} images")
    chunks = -(-len(pool) // chunk_size)
    if mapping.shape[1] > chunks:  # a release wider than the code's rule (one image per chunk) can rebuild
        raise DistractorsFullError(f"the release keeps {mapping.shape[1]} images per entry, but the code's rule keeps "
                                   f"one per chunk and a pool of {len(pool)} has {chunks} chunks of {chunk_size}")
    try:
        embedder = create(model, device=device)
    except ModelUnavailable as exc:
        raise ModelUnavailable(f"conclip.full.distractors.model: {why_unavailable(model, exc)}") from exc
    engine = Engine(embedder, engine_config)
    rows, released_ties_ours = compare_with_release(texts.texts, pool, mapping, engine, top_k, chunk_size)
    full_context = {
        **dict(context or {}), "profile": "full",
        "model": {"name": model, "label": model_label(model), "fingerprint": embedder.fingerprint},
        "pool": {"name": "COCO train 2017", "size": len(pool), "order": "torchvision CocoCaptions: ascending image "
                 "id (papers.conclip.coco_pool)", "images_dir": str(pool[0].parent), "first": pool[0].name,
                 "last": pool[-1].name},
        "data": {"ccneg": {"file": str(texts.path), "sha256": texts.sha256, "entries": texts.n_entries,
                           "eval_size": texts.eval_size, "training_entries": texts.n_training},
                 "mapping": {"file": str(mapping_path), "sha256": sha256_file(mapping_path), "rows": len(mapping),
                             "k": int(mapping.shape[1])}},
        "sample": {"n_requested": n, "n": len(rows), "seed": seed, "of": texts.n_training,
                   "how": "numpy.random.default_rng(seed).choice(training entries, n, replace=False), ascending "
                          "(every training entry when n >= their number)"},
        "texts": {"subject": f"sop_data[{SUBJECT_FIELD!r}]", "negated_object": f"sop_data[{OBJECT_FIELD!r}]",
                  "paper_subject": "sop_data['sop_decomposition']['subject']",
                  "why": "a reading of the file's fields (the authors' mining code is not in the release: rule "
                         "unverified); the paper's bare subject is mined beside them",
                  "paper_subject_missing": sum(m.paper_subject is None for m in texts.texts)},
        "rules": {"ours": "eq. 4: mine_distractors (argmax of phi(x, s) - phi(x, o_n) over the pool, ties to the "
                          "lower pool index); released_rank: 1-based rank of the released top-1 in that order",
                  "code_rule": f"a hypothetical chunked rule on our scores (not in the release: rule unverified): "
                               f"one winner per chunk of {chunk_size} images, sorted ascending, the first k kept",
                  "top_k": top_k, "within_ks": list(WITHIN_KS)},
        "released_ties_ours": released_ties_ours,
        "paper_vs_code": PAPER_VS_CODE,
        "provenance": {
            "mining_code": "not in the release (the paper's Supplementary 0.B, eq. 4)",
            "mapping": 'jaisidhsingh/CoN-CLIP@503388ac ccneg_dataset/README.md:18 "distractor_image_mapping.pt"',
            "mapping_use": 'jaisidhsingh/CoN-CLIP@503388ac src/data/finetuning_datasets.py:77 "topk_indices[0]"'},
    }
    return write_output_group(out_dir, lambda staging: {
        "distractors": write_csv_atomic(staging / "distractors.csv", rows, DISTRACTOR_FIELDS),
        "summary": write_json_atomic(staging / "distractors_summary.json", summary(rows, len(pool))),
        "context": write_json_atomic(staging / "distractors_context.json", full_context),
    })


def main(argv: Sequence[str] | None = None) -> int:
    # deferred: loads tqdm only when called
    from common.evaluation.evaluate import best_device, engine_config

    parser = stage_parser(__spec__.name, __doc__, out="default: results/conclip/full", device=DEVICE_HELP)
    parser.add_argument("--data", default=None,
                        help="ccneg_preprocessed.pt (default: the download registry's, <data root>/ccneg/)")
    parser.add_argument("--mapping", default=None, help="distractor_image_mapping.pt (default: the download "
                                                        "registry's, <data root>/ccneg/)")
    parser.add_argument("--data-root", default=None,
                        help="the data root holding coco/ (default: VLC_DATA, else data/)")
    parser.add_argument("--eval-size", type=int, default=None,
                        help=f"the evaluation split, the file's last N entries, never sampled (default: "
                             f"{ccneg.EVAL_SIZE}, the authors' configs.num_ccneg_eval_samples; with a cap, "
                             "params.yaml full_inputs.cap)")
    args = parser.parse_args(argv)
    params, section = own_section("conclip.full.distractors")
    device = args.device or best_device()
    pool = coco_pool.coco_train_images(Path(args.data_root) if args.data_root else None)
    paths = evaluate_distractors(
        Path(args.data) if args.data else fetch(ccneg.DATA_KEY, progress=False),
        Path(args.mapping) if args.mapping else fetch(coco_pool.MAPPING_KEY, progress=False), pool,
        Path(args.out or RESULTS / "conclip" / "full"), n=int(section["n"]), seed=int(section["seed"]),
        model=str(section["model"]), top_k=int(section["top_k"]), engine_config=engine_config(params),
        device=device, create=zoo_create, chunk_size=CODE_CHUNK,
        eval_size=args.eval_size or ccneg.eval_size_for(params),
        context={"device": device, "engine": params.get("engine", {})})
    return print_written(paths, "summary")


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
