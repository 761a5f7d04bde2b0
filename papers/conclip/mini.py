"""CoN-CLIP (Singh et al.) in the mini profile: CC-Neg's analog rendered from the world, and mini/xs-32k fine-tuned
with CoN-CLIP's loss and its ablations.

CC-Neg pairs an image with its caption c and a negated caption c' (one of the caption's K predicate-object pairs
negated with "no", "not" or "without"); CoN-CLIP fine-tunes CLIP's text tower on (I, c, c', I') with a distractor
image I' (subject present, negated object absent). The world makes all of it true by construction
(``common.miniworld.negation``): a caption's truth, its negation's falsity and the distractor (the scene without
the negated object, rendered) follow from the scene graph.

Top to bottom:

1. ``set``: the benchmark, ``examples_per_cell`` examples per (K = 1..5, negation word) cell on scenes of K + 1 or
   K + 2 objects (own random stream; held-out colour-shape pairs may appear), PNG images and ``manifest.json``;
   beside it the world's zero-shot classification set (``classification/``), whose prompts are asked standard
   ("this is a photo of a red circle.") and negated ("this is not a photo of a red circle.").
2. ``finetune-set``: ``train_images`` training scenes (no held-out pairs), one example each, K and the negation word
   drawn with CC-Neg's evaluation-split frequencies (the only ones published: Tables 7-9's split sizes), the image,
   the distractor image, c, c' and the CREPE-Negate analog of c' (``common.crepe_style``'s NEGATE: "There is no
   X." appended or "not" inserted before a noun; Table 6's last row trains on these). A scene whose negation the
   base model's tokenizer cannot see (past its 32-token context) is dropped for every run, and counted.
3. ``run <name>``: mini/xs-32k fine-tuned by the shared trainer with ``papers.conclip.losses.ConClipLoss``, image
   tower frozen, the same examples, order, seed, steps and optimiser for every run of ``RUNS``: L_conclip, L1, L2,
   L1 + L2 (CC-Neg), and L1 on the CREPE-Negate negatives.
4. The tables: ``papers.conclip.mini_tables`` (a module of its own, so that table edits do not retrain the runs).

Stages (``papers/conclip/dvc.yaml``): ``mini-test-set``, ``mini-finetune-set``, ``mini-finetune@<run>``.
"""
from __future__ import annotations

import argparse
import functools
import json
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np
import torch

from common.errors import WorkspaceError
from common.training.recipe import RunParams
from common.training.rendered import caption_tokens, pixels, refuse_same_tokens
from common.training.legacy import resume_path
from common.zoo.trained import tokenizer_for
from common.io import atomic_path, output_group, sha256_file, write_json_atomic, write_text_atomic
from common.miniworld import VERSION
from common.miniworld.build import scene_to_json, stream
from common.miniworld.negation import MAX_PAIRS, NEGATION_WORDS, distractor_scene, sample_negation
from common.miniworld.render import NATURAL, render
from common.miniworld.scene import contains_heldout, sample_scene
from common.training.rendered import PairedImageBatches
from common.tasks import DatasetError, ImageToTextItem
from common.training import FromZoo, Init, TrainResult, train
from papers.conclip.losses import ConClipLoss
from papers.conclip.runs import RUNS, run_spec

TEST_STREAM = "test-conclip"
FINETUNE_STREAM = "conclip-finetune-train"
TEST_STAGE = "papers/conclip/dvc.yaml:mini-test-set"
FINETUNE_SET_STAGE = "papers/conclip/dvc.yaml:mini-finetune-set"
RUN_STAGE = "papers/conclip/dvc.yaml:mini-finetune@{run}"
CHECKPOINT_EVERY = 50
KS: tuple[int, ...] = tuple(range(1, MAX_PAIRS + 1))
CCNEG_SPLIT_SIZES: dict[str, tuple[int, ...]] = {
    "no": (166, 160, 75, 28, 8), "not": (11910, 10081, 3047, 722, 188), "without": (4850, 5466, 2328, 680, 203)}
"""CC-Neg's evaluation split by negation word and K = 1..5 (Tables 7-9's split sizes): the training draws' weights."""
STANDARD_PROMPT = "this is a photo of {a} {}."
NEGATED_PROMPT = "this is not a photo of {a} {}."
"""The paper's prompts (Sec. 5.1); the released zeroshot_classification.py asks the bare class name instead of the
standard prompt (recorded in the audit notes)."""


class ConclipMiniError(WorkspaceError):
    """An input of the mini CoN-CLIP runs that cannot be used as given (the message names the file)."""


def _read_json(path: Path):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConclipMiniError(f"{path}: missing (run the stage that builds it)") from None
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}: not valid JSON ({exc})") from None


def group_name(word: str, k: int) -> str:
    """An item's group: its negation word and K ("not/k2")."""
    return f"{word}/k{k}"


# ------------------------------------------------------------------------------------------------------------------
# 1. The benchmark
# ------------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TestSetConfig:
    examples_per_cell: int = 60
    classification_images: int = 560
    image_size: int = 48
    seed: int = 0


def build_test_set(config: TestSetConfig, out_dir: Path) -> dict:
    """``images/*.png``, ``scenes.jsonl``, ``manifest.json`` (the examples, with counts) and ``classification/``
    (the world's classification set), written as one output group."""
    from common.miniworld.classification import ClassificationSetConfig, write_classification_set

    rng = stream(config.seed, TEST_STREAM)
    records, scene_lines = [], []
    out_dir = Path(out_dir)
    with output_group(out_dir) as staging:
        for round_ in range(config.examples_per_cell):
            for k in KS:
                for word in NEGATION_WORDS:
                    scene = sample_scene(rng, n_objects=min(MAX_PAIRS + 1, k + 1 + rng.randrange(2)))
                    example = sample_negation(rng, scene, k, word)
                    index = len(records)
                    filename = f"neg_{index:06d}.png"
                    with atomic_path(staging / "images" / filename) as tmp:
                        render(scene, config.image_size, NATURAL, seed=index).save(tmp, format="PNG")
                    records.append({"id": f"{group_name(word, k)}/{round_}", "word": word, "k": k,
                                    "filename": filename, "caption": example.caption.text(),
                                    "negated": example.negated.text(), "heldout_combination": contains_heldout(scene)})
                    scene_lines.append(json.dumps({"filename": filename, "scene": scene_to_json(scene),
                                                   "subject": example.subject_index,
                                                   "objects": list(example.object_indices),
                                                   "negated_pair": example.negated.negated}))
        write_text_atomic(staging / "scenes.jsonl", "\n".join(scene_lines) + "\n")
        classification = write_classification_set(
            ClassificationSetConfig(config.classification_images, config.image_size, config.seed),
            staging / "classification")
        manifest = {"kind": "conclip-negation-test", "profile": "mini", "world_version": VERSION,
                    "stream": TEST_STREAM, "config": asdict(config),
                    "counts": {group_name(w, k): config.examples_per_cell for w in NEGATION_WORDS for k in KS},
                    "heldout_examples": sum(r["heldout_combination"] for r in records),
                    "classification": classification["counts"],
                    "scenes_sha256": sha256_file(staging / "scenes.jsonl"), "examples": records}
        write_json_atomic(staging / "manifest.json", manifest, indent=1)
    return {k: v for k, v in manifest.items() if k != "examples"}


TEST_FIELDS = ("id", "word", "filename", "caption", "negated")


def load_test_items(root: Path) -> list[ImageToTextItem]:
    """The benchmark as (c, c') items grouped by word and K; a bad record is a ``DatasetError`` naming the file and
    the record."""
    root = Path(root)
    path = root / "manifest.json"
    manifest = _read_json(path)
    examples = manifest.get("examples") if isinstance(manifest, dict) else None
    if not isinstance(examples, list) or not examples:
        raise DatasetError(f"{path}: no 'examples' list (rebuild the test set: the mini-test-set stage)")
    items, seen = [], set()
    for n, record in enumerate(examples):
        where = f"{path}: record {n}"
        if not isinstance(record, dict) or any(not isinstance(record.get(f), str) or not record[f]
                                               for f in TEST_FIELDS):
            raise DatasetError(f"{where}: needs non-empty {list(TEST_FIELDS)}")
        if record["word"] not in NEGATION_WORDS or record.get("k") not in KS:
            raise DatasetError(f"{where}: word {record['word']!r} / k {record.get('k')!r} is not a CC-Neg cell")
        if record["caption"] == record["negated"]:
            raise DatasetError(f"{where}: the negated caption equals the caption")
        if record["id"] in seen:
            raise DatasetError(f"{where}: id {record['id']!r} repeats an earlier record")
        seen.add(record["id"])
        image = root / "images" / record["filename"]
        if not image.is_file():
            raise DatasetError(f"{where}: image {image} is missing")
        items.append(ImageToTextItem(record["id"], group_name(record["word"], record["k"]), image,
                                     (record["caption"], record["negated"]), where))
    return items


# ------------------------------------------------------------------------------------------------------------------
# 2. The fine-tuning set
# ------------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FinetuneSetConfig:
    train_images: int = 3000
    image_size: int = 48
    seed: int = 0


@dataclass(frozen=True)
class FinetuneSet:
    """Images and distractor images (N, H, W, 3) uint8, and per image its caption, negated caption, the
    CREPE-Negate analog, K, negation word, subject, negated object and every object of its scene (colour and shape:
    what eq. 4's mining is checked against)."""

    images: np.ndarray
    distractors: np.ndarray
    rows: list[dict]

    def __post_init__(self):
        if self.images.shape != self.distractors.shape or len(self.images) != len(self.rows):
            raise ValueError("FinetuneSet: images, distractors and rows need one entry per example")

    def texts(self, name: str) -> list[str]:
        return [r[name] for r in self.rows]

    @classmethod
    def load(cls, root: Path) -> "FinetuneSet":
        root = Path(root)
        try:
            images = np.load(root / "images.npy", allow_pickle=False)
            distractors = np.load(root / "distractors.npy", allow_pickle=False)
        except FileNotFoundError as exc:
            raise ConclipMiniError(f"{exc.filename}: no fine-tuning set here; run the mini-finetune-set stage "
                                   "(`python -m papers.conclip.mini finetune-set`)") from None
        path = root / "rows.json"
        rows = _read_json(path)
        if not isinstance(rows, list) or len(rows) != len(images):
            raise DatasetError(f"{path}: expected {len(images)} rows (one per image)")
        for i, row in enumerate(rows):
            bad = [f for f in ROW_FIELDS if not isinstance(row, dict) or not isinstance(row.get(f), str) or not row[f]]
            if bad:
                raise DatasetError(f"{path}: row {i}: no {bad[0]!r}")
        try:
            return cls(images, distractors, rows)
        except ValueError as exc:
            raise DatasetError(f"{root}: {exc}") from None


ROW_FIELDS = ("caption", "negated", "crepe_negated", "word", "subject", "negated_object")


def _weights() -> tuple[list[tuple[str, int]], list[int]]:
    cells = [(w, k) for w in NEGATION_WORDS for k in KS]
    return cells, [CCNEG_SPLIT_SIZES[w][k - 1] for w, k in cells]


def _name(scene, index: int) -> str:
    """An object's colour and shape ("red circle"): unique within a scene (eq. 4's subject and object texts)."""
    obj = scene.objects[index]
    return f"{obj.color} {obj.shape}"


def render_finetune_set(config: FinetuneSetConfig) -> tuple[FinetuneSet, dict]:
    """The fine-tuning set (CREPE-Negate analogs filled in by ``build_finetune_set``) and its counts."""
    rng = stream(config.seed, FINETUNE_STREAM)
    cells, weights = _weights()
    shape = (config.train_images, config.image_size, config.image_size, 3)
    images, distractors = np.empty(shape, dtype=np.uint8), np.empty(shape, dtype=np.uint8)
    rows = []
    for i in range(config.train_images):
        word, k = rng.choices(cells, weights=weights)[0]
        scene = sample_scene(rng, n_objects=min(MAX_PAIRS + 1, k + 1 + rng.randrange(2)), allow_heldout=False)
        example = sample_negation(rng, scene, k, word)
        seed = rng.randrange(2**31)
        images[i] = np.asarray(render(scene, config.image_size, NATURAL, seed=seed))
        distractors[i] = np.asarray(render(distractor_scene(scene, example), config.image_size, NATURAL, seed=seed))
        rows.append({"caption": example.caption.text(), "negated": example.negated.text(), "crepe_negated": "",
                     "word": word, "k": k, "subject": _name(scene, example.subject_index),
                     "negated_object": _name(scene, example.negated_object),
                     "objects": [_name(scene, j) for j in range(len(scene.objects))]})
    counts = {"images": config.train_images,
              "by_word": dict(sorted(Counter(r["word"] for r in rows).items())),
              "by_k": {str(k): v for k, v in sorted(Counter(r["k"] for r in rows).items())}}
    return FinetuneSet(images, distractors, rows), counts


def crepe_negations(captions: Sequence[str], seed: int) -> list[str | None]:
    """CREPE-Negate's analog of each caption (``common.crepe_style``'s NEGATE kind; None where it does not apply)."""
    from common.crepe_style import crepe_negatives

    return crepe_negatives(list(captions), ("negate",), seed)["negate"]


def unreadable_negations(data: FinetuneSet, tokenize: Callable[[Sequence[str]], torch.Tensor]) -> dict[str, list[int]]:
    """Per negation field, the rows whose negation tokenizes exactly like the caption: the change falls past the
    text tower's context length (CREPE-Negate's "There is no X." appended to a long caption), so the loss would
    push a text away from itself."""
    captions = tokenize(data.texts("caption"))
    return {field: (tokenize(data.texts(field)) == captions).all(-1).nonzero().flatten().tolist()
            for field in ("negated", "crepe_negated")}


def build_finetune_set(config: FinetuneSetConfig, out_dir: Path,
                       tokenize: Callable[[Sequence[str]], torch.Tensor] | None = None) -> dict:
    """Write ``images.npy``, ``distractors.npy``, ``rows.json`` and ``manifest.json`` into ``out_dir``.

    With ``tokenize`` (the base model's tokenizer), a scene whose negation (either kind) the tokenizer cannot see is
    dropped for every run, so that all runs train on the same scenes; the manifest counts the drops."""
    from common.crepe_style import describe as describe_crepe

    data, counts = render_finetune_set(config)
    crepe = crepe_negations(data.texts("caption"), config.seed)
    missing = [i for i, c in enumerate(crepe) if c is None]
    if missing:
        raise DatasetError(f"caption {missing[0]} ({data.rows[missing[0]]['caption']!r}) gets no CREPE-Negate "
                           f"analog ({len(missing)} such captions)")
    for row, negated in zip(data.rows, crepe):
        row["crepe_negated"] = negated
    dropped = unreadable_negations(data, tokenize) if tokenize is not None else {}
    drop = sorted({i for rows in dropped.values() for i in rows})
    if drop:
        keep = np.setdiff1d(np.arange(len(data.rows)), drop)
        data = FinetuneSet(data.images[keep], data.distractors[keep], [data.rows[i] for i in keep])
    counts["dropped_unreadable_negation"] = {field: len(rows) for field, rows in dropped.items()}
    counts["rows"] = len(data.rows)
    out_dir = Path(out_dir)
    with output_group(out_dir) as staging:
        for name, array in (("images.npy", data.images), ("distractors.npy", data.distractors)):
            with atomic_path(staging / name) as tmp:
                with open(tmp, "wb") as fh:
                    np.save(fh, array)
        write_json_atomic(staging / "rows.json", data.rows, indent=None)
        manifest = {"kind": "conclip-finetune", "profile": "mini", "world_version": VERSION,
                    "stream": FINETUNE_STREAM, "config": asdict(config), "counts": counts,
                    "draws": "K and negation word drawn with CC-Neg's evaluation-split sizes (Tables 7-9)",
                    "crepe_negate": describe_crepe(),
                    "sha256": {f: sha256_file(staging / f) for f in ("images.npy", "distractors.npy", "rows.json")}}
        write_json_atomic(staging / "manifest.json", manifest)
    return manifest


# ------------------------------------------------------------------------------------------------------------------
# 3. Runs
# ------------------------------------------------------------------------------------------------------------------
class NegationBatches(PairedImageBatches):
    """One caption per image, the negated caption as the extra text, the distractor image as the second image
    segment: images [I, I'], texts [c, c'] per sample."""

    def __init__(self, images: torch.Tensor, distractors: torch.Tensor, captions: torch.Tensor,
                 negated: torch.Tensor, name: str, fields: Mapping | None = None):
        if distractors.shape != images.shape:
            raise ValueError("NegationBatches: one distractor image per image")
        super().__init__(images, captions, [distractors], [negated], name, fields)
        self.distractors = distractors


def batches_for(data: FinetuneSet, negatives: str, tokenize: Callable[[Sequence[str]], torch.Tensor],
                name: str, where: str = "the fine-tuning set") -> NegationBatches:
    """Texts per sample [caption, negated caption] (CC-Neg's, or CREPE-Negate's with ``negatives='crepe'``); a
    negation that tokenizes like its caption is refused."""
    field = {"ccneg": "negated", "crepe": "crepe_negated"}[negatives]
    captions = caption_tokens(tokenize, [[c] for c in data.texts("caption")])
    negated = caption_tokens(tokenize, [[c] for c in data.texts(field)])
    refuse_same_tokens(captions, negated, [[c] for c in data.texts("caption")], f"negation ({field})", where)
    return NegationBatches(pixels(data.images), pixels(data.distractors), captions, negated, name,
                           fields={"texts": ["caption", field], "images": ["image", "distractor"]})


def train_run(run: str, data: FinetuneSet, params: RunParams, out_path: Path, *, init: Init | None = None,
              tokenize: Callable[[Sequence[str]], torch.Tensor] | None = None, provenance: Mapping | None = None,
              checkpoint_every: int = CHECKPOINT_EVERY, progress: bool = False) -> TrainResult:
    """Fine-tune ``init`` (default: the zoo's ``params.base``) as ``run`` and write ``out_path`` with its sidecar;
    the image tower stays as it was (``ConClipLoss.frozen``)."""
    spec = run_spec(run)
    if len(data.images) < params.batch_size:
        raise ConclipMiniError(f"{run}: {len(data.images)} training images cannot fill a batch of "
                               f"{params.batch_size}")
    init = init or FromZoo(params.base)
    if tokenize is None:
        tokenize = tokenizer_for(init.describe()["arch"])
    batches = batches_for(data, spec.negatives, tokenize, f"conclip-mini-{spec.negatives}")
    provenance = {"run": run, "terms": list(spec.terms), "negatives": spec.negatives, **(provenance or {})}
    key = {"run": run, "params": asdict(params), "init": init.describe(), "data": batches.describe(),
           "provenance": provenance}
    code = [Path(__file__), Path(__file__).with_name("losses.py"), Path(__file__).with_name("runs.py")]
    return train(params.trainer_config(), init, batches, functools.partial(ConClipLoss, terms=spec.terms), out_path,
                 provenance=provenance, resume=True, progress=progress, checkpoint_every=checkpoint_every,
                 resume_path=resume_path(f"conclip-{run}", key, code))


# ------------------------------------------------------------------------------------------------------------------
# Entry points
# ------------------------------------------------------------------------------------------------------------------
def default_dir() -> Path:
    from common.paths import build_root

    return build_root() / "mini" / "conclip"


def _section(stage: str) -> tuple[dict, dict]:
    from common.params import stage_params

    params = stage_params(stage)
    return params, params["conclip"]["mini"]


def _cmd_set(args) -> int:
    params, section = _section(TEST_STAGE)
    config = TestSetConfig(examples_per_cell=section["test_examples_per_cell"],
                           classification_images=section["classification_images"],
                           image_size=params["mini"]["world"]["image_size"], seed=section["seed"])
    print(json.dumps(build_test_set(config, Path(args.out or default_dir() / "test")), indent=2))
    return 0


def _cmd_finetune_set(args) -> int:
    params, section = _section(FINETUNE_SET_STAGE)
    config = FinetuneSetConfig(train_images=section["train_images"],
                               image_size=params["mini"]["world"]["image_size"], seed=section["seed"])
    from common.zoo import get_spec

    tokenize = tokenizer_for(get_spec(section["base"]).arch)
    print(json.dumps(build_finetune_set(config, Path(args.out or default_dir() / "finetune"), tokenize)["counts"],
                     indent=2))
    return 0


def _cmd_run(args) -> int:
    from common import reproducible

    reproducible.reexec_pinned()  # before any tensor work: bit-identical weights on any x86-64 CPU
    reproducible.fix_threads()
    _, section = _section(RUN_STAGE.format(run=args.run))
    params = RunParams.from_params(section)
    set_dir = Path(args.set or default_dir() / "finetune")
    out = Path(args.out or default_dir() / "models" / f"{args.run}.safetensors")
    started = time.perf_counter()
    result = train_run(args.run, FinetuneSet.load(set_dir), params, out, progress=True, provenance={
        "set_manifest_sha256": sha256_file(set_dir / "manifest.json"), **reproducible.describe()})
    seconds = round(time.perf_counter() - started, 1)
    log = default_dir() / "logs" / f"{args.run}.json"
    write_json_atomic(log, {"run": args.run, "seconds": seconds, "train_seconds": result.train_seconds,
                            "resumed_from": result.resumed_from, "final_loss": result.final_loss,
                            "machine": reproducible.machine()})
    print(f"{args.run}: final loss {result.final_loss:.4f} after {params.steps} steps, {seconds} s; weights: {out}; "
          f"log (wall time, not a DVC output): {log}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m papers.conclip.mini", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("set", help="render the negation benchmark (K x negation word) and the classification set")
    p.add_argument("--out", default=None, help="default: build/mini/conclip/test")
    p.set_defaults(func=_cmd_set)
    p = sub.add_parser("finetune-set", help="render the fine-tuning set: captions, negations, distractor images")
    p.add_argument("--out", default=None, help="default: build/mini/conclip/finetune")
    p.set_defaults(func=_cmd_finetune_set)
    p = sub.add_parser("run", help="fine-tune the base model's text tower as one of the runs")
    p.add_argument("run", choices=list(RUNS))
    p.add_argument("--set", default=None, help="default: build/mini/conclip/finetune")
    p.add_argument("--out", default=None, help="default: build/mini/conclip/models/<run>.safetensors")
    p.set_defaults(func=_cmd_run)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
