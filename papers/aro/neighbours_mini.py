"""NegCLIP's hard negative images in the mini profile: each training image's nearest training images by the base
model's image embeddings (the full profile reads them from the released TSV's ``neg_image`` column).

Only images with at least one caption that has a negative are eligible (the others never enter fine-tuning), and an
image is never its own neighbour. Stage ``mini-finetune-neighbours`` of ``papers/aro/dvc.yaml``.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from common.files.io import output_group, sha256_file, write_json_atomic
from common.pipeline import reproducible
from common.pipeline.cli import stage_parser
from common.pipeline.params import own_section
from papers.aro.finetune_rows_mini import AroFinetuneError, FinetuneSplit
from papers.aro.images import ArrayImages, encode_images


def nearest_images(features: torch.Tensor, k: int, eligible: np.ndarray | None = None, chunk: int = 1024) -> np.ndarray:
    """(N, k): for each image, the k most cosine-similar *other* eligible images (stable order on ties)."""
    n = len(features)
    eligible = np.ones(n, dtype=bool) if eligible is None else np.asarray(eligible, dtype=bool)
    if eligible.sum() - 1 < k:
        raise AroFinetuneError(f"{int(eligible.sum())} eligible images cannot give {k} neighbours each")
    feats = features.double().numpy()
    out = np.empty((n, k), dtype=np.int64)
    for start in range(0, n, chunk):
        sim = feats[start: start + chunk] @ feats.T
        sim[:, ~eligible] = -np.inf
        sim[np.arange(len(sim)), np.arange(start, start + len(sim))] = -np.inf  # never the image itself
        out[start: start + chunk] = np.argsort(-sim, axis=1, kind="stable")[:, :k]
    return out


def compute_neighbours(set_dir: Path, base: str, k: int, out_dir: Path) -> dict:
    """``neighbours.npy`` (N, k): each training image's k nearest eligible training images by the base model, with
    ``neighbours.json``; the folder is one output group (both files replace the previous pair together, or neither)."""
    # deferred: loads PIL only when called
    from common.zoo import create_model

    split = FinetuneSplit.load(set_dir, "train")
    if split.negatives is None:
        raise AroFinetuneError(f"{Path(set_dir) / 'train'}: no negatives.json")
    eligible = np.array([any(bool(n) for n in negs) for negs in split.negatives])
    served = create_model(base)
    features = encode_images(served.model, ArrayImages.from_nhwc(split.images))
    neighbours = nearest_images(features, k, eligible)
    out_dir = Path(out_dir)
    sims = (features[:, None, :] * features[torch.from_numpy(neighbours)]).sum(-1)
    with output_group(out_dir.parent) as staging:
        staged = staging / out_dir.name
        staged.mkdir()
        np.save(staged / "neighbours.npy", neighbours)
        info = {"base": base, "k": k, "images": len(neighbours), "eligible_images": int(eligible.sum()),
                "train_images_sha256": sha256_file(Path(set_dir) / "train" / "images.npy"),
                "neighbours_sha256": sha256_file(staged / "neighbours.npy"),
                "mean_cosine_by_rank": [round(float(x), 4) for x in sims.mean(0)]}
        write_json_atomic(staged / "neighbours.json", info)
    return info


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, __doc__)
    parser.add_argument("--set", type=Path, required=True, help="the fine-tuning set (papers.aro.finetune_sets_mini)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    reproducible.pin()
    _, section = own_section("aro.mini.finetune")
    info = compute_neighbours(args.set, section["base"], section["nearest_images"], args.out)
    print(json.dumps(info, indent=2))
    return 0


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
