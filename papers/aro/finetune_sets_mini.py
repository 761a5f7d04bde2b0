"""The mini profile's COCO-train analog for NegCLIP / CLIP-FT: rendered scenes, 5 captions each, hard negatives.

Each split is rendered from its own random stream, so they share no scene with each other, with the mini family's
pretraining set or with any test set; no scene holds a held-out (colour, shape) pair. A caption without negatives is
dropped from fine-tuning (the paper, Appendix C.1): ``negatives.json`` keeps an empty list for it.

Layout (the mini world's training layout, ``common/miniworld/build.py``)::

    <out>/train/images.npy      (N, H, W, 3) uint8
    <out>/train/captions.json   N lists of captions_per_image captions
    <out>/train/negatives.json  N lists (one per caption) of [{"text", "kind"}, ...]
    <out>/val/images.npy, <out>/val/captions.json
    <out>/manifest.json

Stage ``mini-finetune-set``; read back by ``papers.aro.finetune_rows_mini``.
"""
from __future__ import annotations

import itertools
import json
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from common.files.io import atomic_path, output_group, sha256_file, write_json_atomic
from common.files.tasks import DatasetError
from common.miniworld import VERSION
from common.miniworld.build import stream
from common.miniworld.claims import sample_claim
from common.miniworld.render import NATURAL, render
from common.miniworld.scene import sample_scene
from common.pipeline.cli import stage_parser
from common.pipeline.params import own_params

SPLITS = ("train", "val")
NegativesFn = Callable[[list[str], int], list[list]]
"""``papers.aro.negatives.generate_negatives``: captions and a seed to one list of ``NegativeCaption`` per caption."""


@dataclass(frozen=True)
class FinetuneSetConfig:
    train_images: int = 4000
    val_images: int = 500
    captions_per_image: int = 5
    image_size: int = 48
    seed: int = 0


def render_split(config: FinetuneSetConfig, split: str) -> tuple[np.ndarray, list[list[str]]]:
    """``n`` scenes of the split's own stream, rendered, with ``captions_per_image`` true captions each."""
    rng = stream(config.seed, f"aro-finetune-{split}")
    n = {"train": config.train_images, "val": config.val_images}[split]
    images = np.empty((n, config.image_size, config.image_size, 3), dtype=np.uint8)
    captions: list[list[str]] = []
    for i in range(n):
        scene = sample_scene(rng, allow_heldout=False)
        images[i] = np.asarray(render(scene, config.image_size, NATURAL, seed=rng.randrange(2**31)))
        k = config.captions_per_image
        out: list[str] = []  # k true captions, distinct where the scene allows (one object has few), as COCO's five are
        for _ in range(50):
            text = sample_claim(rng, scene).text()
            if text not in out:
                out.append(text)
            if len(out) == k:
                break
        while len(out) < k:  # a scene with few true sentences repeats one: the layout needs k per image
            out.append(sample_claim(rng, scene).text())
        captions.append(out)
    return images, captions


def negatives_for(captions: list[list[str]], seed: int, generate: NegativesFn) -> list[list[list[dict]]]:
    """The generator's negatives for every caption, regrouped per image as ``{"text", "kind"}`` records."""
    flat = [c for caps in captions for c in caps]
    produced = generate(flat, seed)
    if len(produced) != len(flat):
        raise DatasetError(f"negative generator returned {len(produced)} lists for {len(flat)} captions")
    records = iter([{"text": n.text, "kind": n.kind} for n in negs] for negs in produced)
    return [list(itertools.islice(records, len(caps))) for caps in captions]


def build_finetune_set(config: FinetuneSetConfig, out_dir: Path, generate: NegativesFn | None = None) -> dict:
    """Render both splits and the training negatives into ``out_dir`` (one output group); returns the manifest."""
    out_dir = Path(out_dir)
    with output_group(out_dir.parent) as staging:
        target = staging / out_dir.name
        if generate is None:
            # deferred: `generate` is also bound locally
            from papers.aro.negatives import generate_negatives as generate
        counts: dict[str, dict] = {}
        for split in SPLITS:
            images, captions = render_split(config, split)
            with atomic_path(target / split / "images.npy") as tmp, open(tmp, "wb") as fh:
                np.save(fh, images)
            write_json_atomic(target / split / "captions.json", captions, indent=None)
            counts[split] = {"images": len(images), "captions": sum(map(len, captions))}
            if split == "train":
                negatives = negatives_for(captions, config.seed, generate)
                write_json_atomic(target / split / "negatives.json", negatives, indent=None)
                per_caption = [len(n) for image in negatives for n in image]
                kinds = Counter(n["kind"] for image in negatives for negs in image for n in negs)
                counts[split].update({
                    "captions_with_negatives": sum(1 for k in per_caption if k),
                    "images_with_negatives": sum(1 for image in negatives if any(image)),
                    "negatives": sum(per_caption), "negatives_by_kind": dict(sorted(kinds.items())),
                })
        manifest = {
            "kind": "aro-finetune", "profile": "mini", "world_version": VERSION, "config": asdict(config),
            "counts": counts,
            "sha256": {f"{s}/{f}": sha256_file(target / s / f) for s in SPLITS
                       for f in ("images.npy", "captions.json", "negatives.json") if (target / s / f).is_file()},
        }
        write_json_atomic(target / "manifest.json", manifest)
    return manifest


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, __doc__)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    params = own_params()
    finetune = params["aro"]["mini"]["finetune"]
    config = FinetuneSetConfig(train_images=finetune["train_images"], val_images=finetune["val_images"],
                               captions_per_image=params["aro"]["mini"]["captions_per_image"],
                               image_size=params["mini"]["world"]["image_size"], seed=finetune["seed"])
    manifest = build_finetune_set(config, args.out)
    print(json.dumps(manifest["counts"], indent=2))
    return 0


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
