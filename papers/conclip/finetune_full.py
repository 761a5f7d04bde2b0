"""CoN-CLIP (Singh et al.), the full profile's own fine-tunes: OpenAI CLIP ViT-B/32 on CC-Neg's training split with
distractor images from COCO train 2017, one run per row of Table 6 (``papers.conclip.runs.RUNS``).

The authors' recipe (Sec. 4-5 and jaisidhsingh/CoN-CLIP ``src/conclip_fine_tuning.py``, ``training_utils/helpers.py``,
``data/finetuning_datasets.py: FineTuningDatasetWithNegatives``): every CC-Neg entry but the last 40,000 (188,246),
each the image I, its caption c, its negated caption c' (commas removed) and the distractor I' = COCO train image
``mapping[idx][0]`` of the released ``distractor_image_mapping.pt`` (``papers.conclip.coco_pool``); image tower
frozen, text tower and logit scale trained; AdamW lr 1e-6, weight decay 0.2, cosine with 50 warmup steps, 5 epochs,
batch 200 (drop_last), mixed precision. Their fine-tuning entry point fails as published (a TypeError), so nothing
here runs their code; what differs, and why:

* Order: their ``DataLoader`` has no ``shuffle``: every epoch walks the file in order, the same 200 entries in
  every batch. We follow it by default (``shuffle: false``): the in-batch negatives of a contrastive loss depend on
  which entries share a batch, and file order is the only order their runs can have seen. ``shuffle: true`` draws a
  permutation per epoch instead (``common.training.files``' ``default_rng([seed, 0, epoch])``). Either way the batch
  of step s is a pure function of (seed, s), which resume and DDP sharding need.
* Precision: their "amp" is fp16 autocast with a GradScaler; the shared trainer offers bf16 autocast of the
  encoders (the loss in fp32), which needs no scaler: ``precision: bf16``.
* Images: resized (shorter side, bicubic) and centre-cropped as open_clip's evaluation transform, which is what
  ``clip.load``'s ``preprocess`` (their training transform) does.
* Unusable rows are dropped and counted in the manifest (the authors' loader would crash on a missing file):
  an entry with no mapping row, a missing image or distractor file, a negated caption that reads like its caption
  (after commas are removed; a loss would push a text away from itself), or one whose caption gets no CREPE-Negate
  negation. The last are dropped for every run, so that all five runs train on the same rows in the same order
  (Table 6 compares losses, not data).

Top to bottom:

1. ``set`` (stage ``finetune-full-set``): ``rows.jsonl`` (per training entry: its image, caption, negated caption,
   distractor file and pool index, and the CREPE-Negate negation of the caption, ``common.crepe_style``'s NEGATE
   called as the mini profile's ``crepe_negations`` calls it, not imported from there so that this stage does not
   depend on the mini world's code) and ``manifest.json`` (counts, drops by reason, inputs' sha256), one output
   group under ``build/full/conclip/finetune``.
2. ``run <name>`` (stage ``finetune-full@<name>``, under ``torchrun``): one run of ``RUNS`` through the shared
   trainer with ``ConClipLoss`` (its terms; the CREPE-Negate run's c' is the CREPE negation), from the zoo's
   ``base``; images [I, I'] and texts [c, c'] per sample, decoded per batch from the files. Weights in
   ``build/full/conclip/models/<run>.safetensors`` with the trainer's sidecar; zoo entries ``conclip/full-<run>``.
"""
from __future__ import annotations

import argparse
import functools
import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import torch

from common.errors import WorkspaceError
from common.training.files import FileCaptionBatches
from common.training.recipe import FileRunParams
from common.training.rendered import Tokenize
from common.training.legacy import launch_run, train_file_run
from common.zoo.trained import tokenizer_for
from common.training.files import FileImages
from common.io import output_group, sha256_file, write_json_atomic
from common.jsonl import read_jsonl, write_jsonl
from common.tasks import DatasetError
from common.training import DistributedContext, FromZoo, Init, TrainResult
from papers.conclip.ccneg import EVAL_SIZE, IMAGES_SUBFOLDER, load_ccneg_training
from papers.conclip.coco_pool import IMAGES as COCO_IMAGES
from papers.conclip.coco_pool import coco_train_images, load_distractor_mapping
from papers.conclip.losses import ConClipLoss
from papers.conclip.runs import RUNS, run_spec

SET_STAGE = "papers/conclip/dvc.yaml:finetune-full-set"
RUN_STAGE = "papers/conclip/dvc.yaml:finetune-full@{run}"
SET_KIND = "conclip-finetune-full-set"
DATA_FILES = ("papers/conclip/sources.toml",)
"""Read at run time (``common.stage_deps``): the download entries of CC-Neg and the distractor mapping (``set``)."""
CCNEG_IMAGES = Path("ccneg") / "ccneg_images" / IMAGES_SUBFOLDER
"""Under the data root: CC-Neg's JPEGs (registry entry ``conclip/ccneg/ccneg_images``)."""
CHECKPOINT_EVERY = 500
DROP_REASONS = ("no_mapping_row", "image_missing", "distractor_missing", "negation_reads_like_caption",
                "no_crepe_negation", "crepe_negation_reads_like_caption")
"""Why a training entry is not used, in the order the checks run (an entry counts under the first that applies)."""
EXAMPLES_PER_REASON = 5
NEGATIVE_FIELDS = {"ccneg": "negated", "crepe": "crepe_negated"}
"""``RunSpec.negatives`` -> the row field that is the run's c'."""


class ConclipFinetuneFullError(WorkspaceError):
    """An input of the full CoN-CLIP fine-tunes that cannot be used as given (the message names the file)."""


# ------------------------------------------------------------------------------------------------------------------
# 1. The training set
# ------------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FullRow:
    """One training entry: image and distractor as paths under their folders (CC-Neg's, COCO's), c, c' (commas
    removed) and the CREPE-Negate negation of c."""

    index: int
    """The entry's index in ``ccneg_preprocessed.pt`` (and its row of the mapping)."""
    image: str
    caption: str
    negated: str
    distractor: str
    distractor_index: int
    """The distractor's index in the COCO pool (``CocoCaptions`` order)."""
    crepe_negated: str


def reads_alike(a: str, b: str) -> bool:
    """Equal up to case and whitespace, as CLIP's tokenizer sees them (it lowercases and collapses whitespace)."""
    return " ".join(a.lower().split()) == " ".join(b.lower().split())


def make_rows(ccneg_path: Path, ccneg_images: Path, mapping_path: Path, data_root: Path, seed: int = 0,
              eval_size: int = EVAL_SIZE) -> tuple[list[FullRow], dict]:
    """The usable training entries as rows, in file order, and the counts (drops by reason, first entries of each)."""
    from common.crepe_style import crepe_negatives

    split = load_ccneg_training(ccneg_path, ccneg_images, eval_size)
    pool = coco_train_images(data_root)
    mapping = load_distractor_mapping(mapping_path, len(pool))
    dropped: dict[str, list[int]] = {r: [] for r in DROP_REASONS}
    images_root = Path(ccneg_images).resolve()
    kept = []
    for entry in split.entries:
        reason = None
        if entry.index >= len(mapping):
            reason = "no_mapping_row"
        elif not entry.image.is_file():
            reason = "image_missing"
        elif not pool[int(mapping[entry.index, 0])].is_file():
            reason = "distractor_missing"
        elif reads_alike(entry.negated, entry.caption):
            reason = "negation_reads_like_caption"
        if reason:
            dropped[reason].append(entry.index)
        else:
            kept.append(entry)
    distinct = list(dict.fromkeys(e.caption for e in kept))
    crepe = dict(zip(distinct, crepe_negatives(distinct, ("negate",), seed)["negate"]))
    rows = []
    for entry in kept:
        negated = crepe[entry.caption]
        if negated is None or reads_alike(negated, entry.caption):
            dropped["no_crepe_negation" if negated is None else "crepe_negation_reads_like_caption"].append(
                entry.index)
            continue
        top1 = int(mapping[entry.index, 0])
        rows.append(FullRow(entry.index, entry.image.relative_to(images_root).as_posix(), entry.caption,
                            entry.negated, pool[top1].relative_to(Path(data_root) / COCO_IMAGES).as_posix(), top1,
                            negated))
    counts = {"entries_in_file": split.n_entries, "eval_size": eval_size, "training_entries": len(split.entries),
              "mapping_rows": int(len(mapping)), "mapping_top_k": int(mapping.shape[1]), "pool_images": len(pool),
              "rows": len(rows), "dropped": {r: len(v) for r, v in dropped.items()},
              "dropped_examples": {r: v[:EXAMPLES_PER_REASON] for r, v in dropped.items() if v},
              "distinct_captions": len(distinct), "distinct_images": len({r.image for r in rows}),
              "distinct_distractors": len({r.distractor_index for r in rows})}
    return rows, counts


def build_set(ccneg_path: Path, ccneg_images: Path, mapping_path: Path, data_root: Path, out_dir: Path,
              seed: int = 0, eval_size: int = EVAL_SIZE) -> dict:
    """``rows.jsonl`` and ``manifest.json`` in ``out_dir`` (one output group)."""
    from common.crepe_style import describe as describe_crepe

    from papers.conclip.coco_pool import CAPTIONS

    rows, counts = make_rows(ccneg_path, ccneg_images, mapping_path, data_root, seed, eval_size)
    if not rows:
        raise DatasetError(f"{ccneg_path}: no usable training entry (dropped: {counts['dropped']})")
    manifest = {"kind": SET_KIND, "profile": "full", "seed": seed, "counts": counts,
                "order": "file order of ccneg_preprocessed.pt (training entries 0 .. N - eval_size - 1)",
                "distractor": "COCO train 2017 image mapping[index][0] (top-1), CocoCaptions order",
                "crepe_negate": describe_crepe(),
                "sha256": {"ccneg_preprocessed.pt": sha256_file(ccneg_path),
                           "distractor_image_mapping.pt": sha256_file(mapping_path),
                           "captions_train2017.json": sha256_file(Path(data_root) / CAPTIONS)}}
    with output_group(Path(out_dir)) as staging:
        write_jsonl(staging / "rows.jsonl", rows)
        write_json_atomic(staging / "manifest.json", manifest)
    return manifest


def load_rows(set_dir: Path) -> list[FullRow]:
    """The set's rows; a bad line is a ``DatasetError`` naming the file and the line."""
    path = Path(set_dir) / "rows.jsonl"
    if not path.is_file():
        raise ConclipFinetuneFullError(f"{path}: no training set here; run the finetune-full-set stage "
                                       "(`python -m papers.conclip.finetune_full set`)")
    kinds = {f.name: (int if f.type in (int, "int") else str) for f in fields(FullRow)}

    def parse(record: dict) -> FullRow:
        for name, kind in kinds.items():
            value = record.get(name) if isinstance(record, dict) else None
            ok = (isinstance(value, int) and not isinstance(value, bool) and value >= 0) if kind is int \
                else (isinstance(value, str) and bool(value.strip()))
            if not ok:
                raise DatasetError(f"no {name!r}" if value is None else f"{name!r} is {value!r:.40}")
        return FullRow(**{n: record[n] for n in kinds})

    rows = list(read_jsonl(path, parse, "a training row"))
    if not rows:
        raise DatasetError(f"{path}: no rows")
    return rows


# ------------------------------------------------------------------------------------------------------------------
# 2. Runs
# ------------------------------------------------------------------------------------------------------------------
FullFinetuneParams = FileRunParams
"""``params.yaml conclip.full.finetune``: what every run shares."""


class NegationFileBatches(FileCaptionBatches):
    """``FileCaptionBatches`` (the negated caption as the one extra text) whose samples carry the distractor image
    as a second image segment: images [I, I'], texts [c, c'] per sample, as ``papers.conclip.mini``'s
    ``NegationBatches`` over rendered arrays.

    ``shuffle=False`` walks the rows in order every epoch (the authors' loader): step s of an epoch is rows
    ``[j*B, (j+1)*B)``, the tail that does not fill a batch dropped; ``shuffle=True`` keeps the parent's permutation
    per epoch."""

    def __init__(self, images: FileImages, row_image: np.ndarray, row_distractor: np.ndarray,
                 captions: Sequence[str], negated: Sequence[str], tokenize: Tokenize, name: str,
                 fields: Mapping | None = None, shuffle: bool = False):
        super().__init__(images, row_image, captions, [negated], tokenize, name,
                         {**(fields or {}), "order": "shuffled per epoch" if shuffle else "file order"})
        if len(row_distractor) != len(captions):
            raise ValueError("NegationFileBatches: one distractor image per row")
        self.row_distractor, self.shuffle = np.asarray(row_distractor), shuffle

    def draws(self, seed: int, step: int, size: int) -> np.ndarray:
        if self.shuffle:
            return super().draws(seed, step, size)
        j = step % self.steps_per_epoch(size)
        return np.arange(j * size, (j + 1) * size)

    def batch(self, seed: int, step: int, size: int, rows: slice = slice(None)) -> dict[str, torch.Tensor]:
        out = super().batch(seed, step, size, rows)
        idx = self.draws(seed, step, size)[rows]
        distractors = self.images.get(self.row_distractor[idx]).unsqueeze(1)
        out["images"] = torch.cat([out["images"], distractors], dim=1)
        return out


def batches_for(run: str, rows: Sequence[FullRow], params: FullFinetuneParams, ccneg_images: Path,
                coco_images: Path, tokenize: Tokenize) -> NegationFileBatches:
    """The run's batches: c' is CC-Neg's negated caption, or the CREPE-Negate negation for a ``crepe`` run."""
    field = NEGATIVE_FIELDS[run_spec(run).negatives]
    files = list(dict.fromkeys([*(Path(ccneg_images) / r.image for r in rows),
                                *(Path(coco_images) / r.distractor for r in rows)]))
    where = {path: i for i, path in enumerate(files)}
    images = FileImages(tuple(files), params.image_size)
    return NegationFileBatches(
        images, np.array([where[Path(ccneg_images) / r.image] for r in rows], dtype=np.int64),
        np.array([where[Path(coco_images) / r.distractor] for r in rows], dtype=np.int64),
        [r.caption for r in rows], [getattr(r, field) for r in rows], tokenize,
        name=f"conclip-full-{run_spec(run).negatives}",
        fields={"texts": ["caption", field], "images": ["image", "distractor"]}, shuffle=params.shuffle)


def train_full_run(run: str, rows: Sequence[FullRow], params: FullFinetuneParams, ccneg_images: Path,
                   coco_images: Path, out_path: Path, *, init: Init | None = None,
                   world: DistributedContext | None = None, steps: int | None = None,
                   provenance: Mapping | None = None, checkpoint_every: int = CHECKPOINT_EVERY,
                   progress: bool = False) -> TrainResult:
    """Fine-tune ``init`` (default: the zoo's ``params.base``) as ``run`` and write ``out_path`` with its sidecar;
    the image tower stays as it was (``ConClipLoss.frozen``). ``steps`` overrides the schedule's epochs (smoke runs,
    tests)."""
    spec = run_spec(run)
    init = init or FromZoo(params.base)
    batches = batches_for(run, rows, params, ccneg_images, coco_images, tokenizer_for(init.describe()["arch"]))
    provenance = {"run": run, "terms": list(spec.terms), "negatives": spec.negatives, **(provenance or {})}
    here = Path(__file__)
    return train_file_run(f"conclip-full-{run}", batches, params, functools.partial(ConClipLoss, terms=spec.terms),
                          out_path, init, world=world, steps=steps, provenance=provenance, progress=progress,
                          checkpoint_every=checkpoint_every,
                          code=[here, here.with_name("losses.py"), here.with_name("runs.py")])


# ------------------------------------------------------------------------------------------------------------------
# Entry points
# ------------------------------------------------------------------------------------------------------------------
def default_dir() -> Path:
    from common.paths import build_root

    return build_root() / "full" / "conclip"


def _data_root() -> Path:
    from common.paths import data_root

    return data_root()


def _section(stage: str) -> dict:
    from common.params import stage_params

    return stage_params(stage)["conclip"]["full"]["finetune"]


def _cmd_set(args) -> int:
    from common.download import fetch

    from papers.conclip.ccneg import default_paths

    section = _section(args.stage)
    ccneg_path = Path(args.ccneg) if args.ccneg else None
    ccneg_images = Path(args.ccneg_images) if args.ccneg_images else None
    if ccneg_path is None or ccneg_images is None:
        default_pt, default_images = default_paths()
        ccneg_path, ccneg_images = ccneg_path or default_pt, ccneg_images or default_images
    mapping = Path(args.mapping) if args.mapping else fetch("conclip/ccneg/distractor_image_mapping.pt",
                                                            progress=False)
    manifest = build_set(ccneg_path, ccneg_images, mapping, Path(args.data or _data_root()),
                         Path(args.out or default_dir() / "finetune"), int(section["seed"]), args.eval_size)
    print(json.dumps({k: v for k, v in manifest["counts"].items() if k != "dropped_examples"}, indent=2))
    return 0


def _cmd_run(args) -> int:
    run_spec(args.run)
    params = FullFinetuneParams.from_params(_section(RUN_STAGE.format(run=args.run)))
    set_dir = Path(args.set or default_dir() / "finetune")
    rows = load_rows(set_dir)
    data = Path(args.data or _data_root())
    out = Path(args.out or default_dir() / "models" / f"{args.run}.safetensors")
    provenance = {"profile": "full", "set_manifest_sha256": sha256_file(set_dir / "manifest.json")}
    launch_run(args.run, args.device, out, default_dir() / "logs", lambda world, machine: train_full_run(
        args.run, rows, params, data / CCNEG_IMAGES, data / COCO_IMAGES, out, world=world, steps=args.steps,
        progress=True, provenance={**provenance, **machine}))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m papers.conclip.finetune_full",
                                     description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("set", help="CC-Neg's training entries with their distractor images and CREPE-Negate "
                                   "negations")
    p.add_argument("--ccneg", default=None, help="ccneg_preprocessed.pt (default: the download registry's, "
                                                 "<data root>/ccneg/)")
    p.add_argument("--ccneg-images", default=None, help=f"default: <data>/{CCNEG_IMAGES.as_posix()}")
    p.add_argument("--mapping", default=None, help="distractor_image_mapping.pt (default: the registry's)")
    p.add_argument("--data", default=None, help="the data root holding the COCO pool (default: <data>)")
    p.add_argument("--eval-size", type=int, default=EVAL_SIZE, help="the file's last N entries are the evaluation "
                                                                    "split (default: %(default)s)")
    p.add_argument("--out", default=None, help="default: build/full/conclip/finetune")
    p.add_argument("--stage", default=SET_STAGE, help="the DVC stage whose parameters to read")
    p.set_defaults(func=_cmd_set)
    p = sub.add_parser("run", help="fine-tune the base model as one of the runs (under torchrun, or as one process)")
    p.add_argument("run", choices=list(RUNS))
    p.add_argument("--device", default="cpu", help="cpu, or cuda (one GPU per torchrun rank)")
    p.add_argument("--set", default=None, help="default: build/full/conclip/finetune")
    p.add_argument("--data", default=None, help=f"the data root holding {CCNEG_IMAGES.as_posix()} and "
                                                f"{COCO_IMAGES.as_posix()} (default: <data>)")
    p.add_argument("--out", default=None, help="default: build/full/conclip/models/<run>.safetensors")
    p.add_argument("--steps", type=int, default=None, help="steps instead of the schedule's epochs (smoke runs)")
    p.set_defaults(func=_cmd_run)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
