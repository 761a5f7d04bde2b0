"""BiVLC (Miranda et al.) in the mini profile: the training sets of the fine-tunes and detectors (stage
``mini-train-set``): the COCO, TROHN-Text and TROHN-Img analogs (the README's stage table), and their reader
(``TrainSet.load``). Training scenes have no held-out pairs; each caption's negative is of a category drawn uniformly
among those that apply; the last ``val_fraction`` of the scenes is the validation split.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np
import torch

from common.files.arrays import load_array
from common.files.io import output_group, sha256_file, write_json_atomic
from common.files.jsonl import read_json
from common.files.tasks import DatasetError
from common.miniworld import VERSION
from common.miniworld.build import stream
from common.miniworld.render import NATURAL, STYLES, render
from common.miniworld.scene import sample_scene
from common.paths import build_dir
from common.pipeline.cli import stage_parser
from common.pipeline.params import own_section
from common.training.rendered import caption_tokens, refuse_same_tokens
from common.zoo import get_spec
from common.zoo.trained import tokenizer_for
from papers.bivlc import selection as sel
from papers.bivlc.sets_mini import CATEGORIES, MAX_DRAWS, BivlcMiniError, draw_instance

TRAIN_STREAM = "bivlc-trohn-train"
BUILD_IT = "run the mini-train-set stage (`python -m papers.bivlc.finetune_sets_mini train-set`)"


@dataclass(frozen=True)
class TrainSetConfig:
    train_images: int = 3000
    captions_per_image: int = 3
    image_size: int = 48
    negative_style: str = "synthetic"
    val_fraction: float = 0.2
    seed: int = 0

    def __post_init__(self):
        if self.negative_style not in STYLES:
            raise BivlcMiniError(f"negative_style {self.negative_style!r}: not one of {sorted(STYLES)}")
        if not 0.0 < self.val_fraction < 1.0:
            raise BivlcMiniError(f"val_fraction {self.val_fraction}: must lie strictly between 0 and 1")

    @property
    def n_train(self) -> int:
        """Scenes of the training split (the first ones; the rest validate)."""
        return int(round(self.train_images * (1.0 - self.val_fraction)))


@dataclass(frozen=True)
class TrainSet:
    """``images`` (N, H, W, 3) and ``negative_images`` (N, P, H, W, 3) uint8; per scene P captions, their negatives
    and categories; ``kept``: the (scene, caption) pairs of the TROHN-Img analog; ``n_train``: scenes before the
    validation split."""

    images: np.ndarray
    negative_images: np.ndarray
    captions: list[list[str]]
    negatives: list[list[str]]
    categories: list[list[str]]
    kept: list[tuple[int, int]]
    n_train: int

    @classmethod
    def load(cls, root: Path) -> "TrainSet":
        root = Path(root)
        try:
            images = load_array(root / "images.npy")
            negative_images = load_array(root / "negative_images.npy")
        except FileNotFoundError as exc:
            raise BivlcMiniError(f"{exc.filename}: no training set here; {BUILD_IT}") from None
        path = root / "rows.json"
        rows = read_json(path, dict, remedy=BUILD_IT)
        if any(k not in rows for k in ("captions", "negatives", "categories", "kept", "n_train")):
            raise DatasetError(f"{path}: needs captions, negatives, categories, kept and n_train")
        n, p = negative_images.shape[:2]
        for field in ("captions", "negatives", "categories"):
            if len(rows[field]) != n or any(len(r) != p for r in rows[field]):
                raise DatasetError(f"{path}: {field} must hold {p} entries for each of the {n} scenes")
        kept = [tuple(k) for k in rows["kept"]]
        bad = [k for k in kept if not (0 <= k[0] < n and 0 <= k[1] < p)]
        if bad:
            raise DatasetError(f"{path}: kept pair {list(bad[0])} is outside {n} scenes x {p} captions")
        return cls(images, negative_images, rows["captions"], rows["negatives"], rows["categories"], kept,
                   int(rows["n_train"]))


def render_train_set(config: TrainSetConfig) -> TrainSet:
    """Scenes, captions, negatives and negative images (``kept`` empty: ``build_train_set`` selects)."""
    rng = stream(config.seed, TRAIN_STREAM)
    style = STYLES[config.negative_style]
    n, p, s = config.train_images, config.captions_per_image, config.image_size
    images = np.empty((n, s, s, 3), dtype=np.uint8)
    negative_images = np.empty((n, p, s, s, 3), dtype=np.uint8)
    captions, negatives, categories = [], [], []
    for i in range(n):
        scene = sample_scene(rng, allow_heldout=False)
        seed = rng.randrange(2**31)
        images[i] = np.asarray(render(scene, s, NATURAL, seed=seed))
        row = []
        for j in range(p):
            for _ in range(MAX_DRAWS):
                found = draw_instance(rng, rng.choice(CATEGORIES), scene=scene)
                if found is not None:
                    break
            else:  # pragma: no cover
                raise BivlcMiniError(f"training scene {i}: no negative in {MAX_DRAWS} draws")
            negative_images[i, j] = np.asarray(render(found.negative_scene, s, style, seed=seed + 1 + j))
            row.append(found)
        captions.append([f.caption for f in row])
        negatives.append([f.negative for f in row])
        categories.append([f.category for f in row])
    return TrainSet(images, negative_images, captions, negatives, categories, [], config.n_train)


def build_train_set(config: TrainSetConfig, out_dir: Path, grammar_texts: Sequence[str], selection: Mapping,
                    tokenize: Callable[[Sequence[str]], torch.Tensor] | None = None) -> dict:
    """Write ``images.npy``, ``negative_images.npy``, ``rows.json`` and ``manifest.json`` into ``out_dir``."""
    data = render_train_set(config)
    if tokenize is not None:  # a negative the tokenizer cannot tell from its caption would push a text from itself
        refuse_same_tokens(caption_tokens(tokenize, data.captions), caption_tokens(tokenize, data.negatives),
                           data.captions, "negative caption", "the mini TROHN training set")
    # the TROHN-Img analog: the pairs ``papers.bivlc.selection`` keeps, with the world's scorers (the grammar
    # analog's n-gram model fitted on ``grammar_texts``)
    pairs = [sel.CaptionPair(f"{i}/{j}", data.categories[i][j], data.captions[i][j], data.negatives[i][j])
             for i in range(len(data.captions)) for j in range(len(data.captions[i]))]
    result = sel.select_negatives(pairs, sel.WorldPriorPlausibility(), sel.NgramGrammar.fit(grammar_texts),
                                  quantile=selection["quantile"], min_chars=selection["min_chars"],
                                  bins=selection["bins"], seed=config.seed)
    kept = sorted(tuple(int(x) for x in pid.split("/")) for pid in result.kept_ids)
    if not kept:
        raise BivlcMiniError("the selection kept no pair: nothing to train TROHN-Img on")
    rows = {"captions": data.captions, "negatives": data.negatives, "categories": data.categories,
            "kept": [list(k) for k in kept], "n_train": data.n_train}
    with output_group(Path(out_dir)) as staging:
        for name, array in (("images.npy", data.images), ("negative_images.npy", data.negative_images)):
            np.save(staging / name, array)  # the staging folder is already all or nothing
        write_json_atomic(staging / "rows.json", rows, indent=None)
        counts = {"scenes": len(data.captions), "train_scenes": data.n_train,
                  "trohn_text_pairs": sum(len(c) for c in data.captions),
                  "trohn_img_pairs": len(kept),
                  "trohn_img_train_pairs": sum(i < data.n_train for i, _ in kept),
                  "by_category": dict(Counter(c for row in data.categories for c in row)),
                  "kept_by_category": dict(Counter(data.categories[i][j] for i, j in kept))}
        manifest = {"kind": "bivlc-trohn", "profile": "mini", "world_version": VERSION, "stream": TRAIN_STREAM,
                    "config": asdict(config), "selection": {"params": dict(selection), "steps": result.describe()},
                    "counts": counts,
                    "sha256": {f: sha256_file(staging / f) for f in ("images.npy", "negative_images.npy",
                                                                      "rows.json")}}
        write_json_atomic(staging / "manifest.json", manifest)
    return manifest


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, __doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("train-set", help="render the COCO / TROHN-Text / TROHN-Img analogs and run the selection")
    p.add_argument("--out", default=None, help="default: build/mini/bivlc/train")
    p.add_argument("--world", default=None, help="the world's training set (default: build/mini/world/train)")
    args = parser.parse_args(argv)
    params, section = own_section("bivlc.mini")
    config = TrainSetConfig(section["train_images"], section["captions_per_image"],
                            params["mini"]["world"]["image_size"], section["negative_style"], section["val_fraction"],
                            section["seed"])
    # the grammar analog's corpus: the captions of the world training set's first grammar_corpus_images images
    captions = read_json(Path(args.world or build_dir("mini", "world") / "train") / "captions.json", list,
                         remedy="run the mini/world stage (`python -m common world train`)")
    corpus = [c for row in captions[:section["selection"]["grammar_corpus_images"]] for c in row]
    manifest = build_train_set(config, Path(args.out or build_dir("mini", "bivlc") / "train"), corpus,
                               section["selection"], tokenizer_for(get_spec(section["base"]).arch))
    print(json.dumps({"counts": manifest["counts"], "selection": manifest["selection"]["steps"]}, indent=2))
    return 0


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
