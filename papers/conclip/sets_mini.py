"""CoN-CLIP (Singh et al.) in the mini profile: CC-Neg's analog and the fine-tuning set, rendered from the world.

Stages ``mini-test-set`` (``set``) and ``mini-finetune-set`` (``finetune-set``): the README's stage table and "Mini
profile". K and the negation word are drawn with CC-Neg's evaluation-split frequencies, the only ones published. The
sets are read back by ``benchmark_mini`` and ``finetune_rows``, so that an edit here reruns neither runs nor tables.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch

from common.files.io import atomic_path, output_group, sha256_file, write_json_atomic, write_text_atomic
from common.files.tasks import DatasetError
from common.miniworld import VERSION
from common.miniworld.build import scene_to_json, stream
from common.miniworld.classification import ClassificationSetConfig, write_classification_set
from common.miniworld.negation import MAX_PAIRS, NEGATION_WORDS, distractor_scene, sample_negation
from common.miniworld.render import NATURAL, render
from common.miniworld.scene import contains_heldout, sample_scene
from common.paths import build_dir
from common.pipeline.cli import stage_parser
from common.pipeline.params import own_section
from common.text.crepe_style import crepe_negatives, describe as describe_crepe
from common.zoo import get_spec
from common.zoo.trained import tokenizer_for
from papers.conclip.benchmark_mini import KS, group_name
from papers.conclip.finetune_rows import FinetuneSet

TEST_STREAM = "test-conclip"
FINETUNE_STREAM = "conclip-finetune-train"
CCNEG_SPLIT_SIZES: dict[str, tuple[int, ...]] = {
    "no": (166, 160, 75, 28, 8), "not": (11910, 10081, 3047, 722, 188), "without": (4850, 5466, 2328, 680, 203)}
"""CC-Neg's evaluation split by negation word and K = 1..5 (Tables 7-9's split sizes): the training draws' weights."""


# --- 1. The benchmark ---
@dataclass(frozen=True)
class TestSetConfig:
    examples_per_cell: int = 60
    classification_images: int = 560
    image_size: int = 48
    seed: int = 0


def build_test_set(config: TestSetConfig, out_dir: Path) -> dict:
    """The benchmark's images, ``scenes.jsonl``, ``manifest.json`` and classification set, as one output group."""
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


# --- 2. The fine-tuning set ---
@dataclass(frozen=True)
class FinetuneSetConfig:
    train_images: int = 3000
    image_size: int = 48
    seed: int = 0


def _name(scene, index: int) -> str:
    """An object's colour and shape: unique within a scene (eq. 4's subject and object texts)."""
    obj = scene.objects[index]
    return f"{obj.color} {obj.shape}"


def render_finetune_set(config: FinetuneSetConfig) -> tuple[FinetuneSet, dict]:
    """The fine-tuning set (CREPE-Negate analogs filled in by ``build_finetune_set``) and its counts."""
    rng = stream(config.seed, FINETUNE_STREAM)
    cells = [(w, k) for w in NEGATION_WORDS for k in KS]
    weights = [CCNEG_SPLIT_SIZES[w][k - 1] for w, k in cells]
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


def build_finetune_set(config: FinetuneSetConfig, out_dir: Path,
                       tokenize: Callable[[Sequence[str]], torch.Tensor] | None = None) -> dict:
    """Write ``images.npy``, ``distractors.npy``, ``rows.json`` and ``manifest.json`` into ``out_dir``. With
    ``tokenize`` (the base model's), a scene whose negation (either kind) tokenizes exactly like its caption (the
    change falls past the context length, so the loss would push a text away from itself) is dropped for every run,
    so that all runs train on the same scenes; the manifest counts the drops."""
    data, counts = render_finetune_set(config)
    # CREPE-Negate's analog of each caption (common.text.crepe_style's NEGATE kind; None where it does not apply)
    crepe = crepe_negatives(data.texts("caption"), ("negate",), config.seed)["negate"]
    missing = [i for i, c in enumerate(crepe) if c is None]
    if missing:
        raise DatasetError(f"caption {missing[0]} ({data.rows[missing[0]]['caption']!r}) gets no CREPE-Negate "
                           f"analog ({len(missing)} such captions)")
    for row, negated in zip(data.rows, crepe):
        row["crepe_negated"] = negated
    dropped = {}
    if tokenize is not None:
        captions = tokenize(data.texts("caption"))
        dropped = {field: (tokenize(data.texts(field)) == captions).all(-1).nonzero().flatten().tolist()
                   for field in ("negated", "crepe_negated")}
    drop = sorted({i for rows in dropped.values() for i in rows})
    if drop:
        keep = np.setdiff1d(np.arange(len(data.rows)), drop)
        data = FinetuneSet(data.images[keep], data.distractors[keep], [data.rows[i] for i in keep])
    counts["dropped_unreadable_negation"] = {field: len(rows) for field, rows in dropped.items()}
    counts["rows"] = len(data.rows)
    out_dir = Path(out_dir)
    with output_group(out_dir) as staging:
        for name, array in (("images.npy", data.images), ("distractors.npy", data.distractors)):
            np.save(staging / name, array)  # the staging folder is already all or nothing
        write_json_atomic(staging / "rows.json", data.rows, indent=None)
        manifest = {"kind": "conclip-finetune", "profile": "mini", "world_version": VERSION,
                    "stream": FINETUNE_STREAM, "config": asdict(config), "counts": counts,
                    "draws": "K and negation word drawn with CC-Neg's evaluation-split sizes (Tables 7-9)",
                    "crepe_negate": describe_crepe(),
                    "sha256": {f: sha256_file(staging / f) for f in ("images.npy", "distractors.npy", "rows.json")}}
        write_json_atomic(staging / "manifest.json", manifest)
    return manifest


def _cmd_set(args) -> int:
    params, section = own_section("conclip.mini")
    config = TestSetConfig(examples_per_cell=section["test_examples_per_cell"],
                           classification_images=section["classification_images"],
                           image_size=params["mini"]["world"]["image_size"], seed=section["seed"])
    print(json.dumps(build_test_set(config, Path(args.out or build_dir("mini", "conclip") / "test")), indent=2))
    return 0


def _cmd_finetune_set(args) -> int:
    params, section = own_section("conclip.mini")
    config = FinetuneSetConfig(train_images=section["train_images"],
                               image_size=params["mini"]["world"]["image_size"], seed=section["seed"])
    tokenize = tokenizer_for(get_spec(section["base"]).arch)
    out = Path(args.out or build_dir("mini", "conclip") / "finetune")
    print(json.dumps(build_finetune_set(config, out, tokenize)["counts"], indent=2))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, __doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("set", help="render the negation benchmark (K x negation word) and the classification set")
    p.add_argument("--out", default=None, help="default: build/mini/conclip/test")
    p.set_defaults(func=_cmd_set)
    p = sub.add_parser("finetune-set", help="render the fine-tuning set: captions, negations, distractor images")
    p.add_argument("--out", default=None, help="default: build/mini/conclip/finetune")
    p.set_defaults(func=_cmd_finetune_set)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
