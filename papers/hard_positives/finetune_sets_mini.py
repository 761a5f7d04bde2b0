"""Kamath et al. (hard positives), the mini profile's fine-tuning set (stage ``mini-finetune-set``): rendered
training scenes (no held-out colour-shape pairs), each caption with one type (drawn among those that give both) and
one hard positive and one hard negative of it, drawn independently as in the paper (LLM rewrites and CREPE-style
negatives are made apart); what was set aside is counted in the manifest. Format: ``finetune_rows``.
"""
from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from common.files.io import atomic_path, output_group, sha256_file, write_json_atomic
from common.miniworld import VERSION
from common.miniworld.build import stream
from common.miniworld.claims import Claim, sample_claim
from common.miniworld.negatives import EDIT_TYPES
from common.miniworld.positives import hard_positive
from common.miniworld.render import NATURAL, render
from common.miniworld.scene import Scene, sample_scene
from common.paths import build_dir
from common.pipeline.cli import stage_parser
from common.pipeline.params import own_section
from papers.hard_positives.finetune_rows import FinetuneSet, TrainingRow
from papers.hard_positives.runs import TYPES

NEGATIVE_EDITS: dict[str, tuple[str, ...]] = {"replace": ("replace_att", "replace_rel", "replace_obj"),
                                              "swap": ("swap_att", "swap_obj")}
"""Each type's fluent hard negatives (SugarCrepe's categories), the analog of the paper's CREPE-process ones."""
FINETUNE_STREAM = "hard-positives-finetune-train"


@dataclass(frozen=True)
class FinetuneSetConfig:
    train_images: int = 2000
    captions_per_image: int = 3
    image_size: int = 48
    seed: int = 0
    tries_per_image: int = 40
    """Claims drawn per scene before settling for fewer captions (a one-object scene has few true sentences)."""


@dataclass
class SetAside:
    """What the fine-tuning set's draws left out, by reason (the manifest's ``counts``)."""

    scenes_without_a_qualifying_caption: int = 0
    repeated_claims: int = 0
    claims_without_a_type: int = 0
    no_positive: Counter = field(default_factory=Counter)
    no_negative: Counter = field(default_factory=Counter)


def _perturbations(scene: Scene, claim: Claim, rng: random.Random, aside: SetAside) -> dict[str, TrainingRow]:
    """Per type, a row with one hard positive and one hard negative of it (drawn independently), where both exist."""
    caption = claim.text()
    out = {}
    for kind in TYPES:
        positive = hard_positive(scene, claim, kind, rng)
        edits = list(NEGATIVE_EDITS[kind])
        rng.shuffle(edits)
        negative, edit = None, ""
        for edit in edits:
            negative = EDIT_TYPES[edit](scene, claim, rng)
            if negative is not None:
                break
        aside.no_positive[kind] += positive is None
        aside.no_negative[kind] += negative is None
        if positive is None or negative is None:
            continue
        texts = {caption.lower(), positive.text.lower(), negative.text().lower()}
        if len(texts) != 3:  # pragma: no cover - a true and a false claim never read alike
            raise AssertionError(f"{caption!r}: hard positive and negative coincide with it or each other")
        out[kind] = TrainingRow(caption, kind, positive.text, negative.text(), positive.variant, edit)
    return out


def _rows_for(rng: random.Random, scene: Scene, config: FinetuneSetConfig, aside: SetAside) -> list[TrainingRow]:
    """Up to ``captions_per_image`` rows with distinct captions, padded by repeating the first ones (a scene may have
    few such sentences); nothing when no claim of the scene qualifies."""
    rows: list[TrainingRow] = []
    for _ in range(config.tries_per_image):
        claim = sample_claim(rng, scene)
        if any(r.caption == claim.text() for r in rows):
            aside.repeated_claims += 1
            continue
        options = _perturbations(scene, claim, rng, aside)
        if not options:
            aside.claims_without_a_type += 1
            continue
        rows.append(options[rng.choice(sorted(options))])
        if len(rows) == config.captions_per_image:
            break
    k = len(rows)
    return rows + [rows[i % k] for i in range(config.captions_per_image - k if k else 0)]


def render_finetune_set(config: FinetuneSetConfig) -> tuple[FinetuneSet, dict]:
    """The fine-tuning set and its counts (rows by type and rule, and what was set aside)."""
    rng = stream(config.seed, FINETUNE_STREAM)
    images = np.empty((config.train_images, config.image_size, config.image_size, 3), dtype=np.uint8)
    rows: list[list[TrainingRow]] = []
    aside = SetAside()
    padded = 0
    while len(rows) < config.train_images:
        scene = sample_scene(rng, allow_heldout=False)
        image_rows = _rows_for(rng, scene, config, aside)
        if not image_rows:
            aside.scenes_without_a_qualifying_caption += 1
            continue
        padded += len({r.caption for r in image_rows}) < len(image_rows)
        images[len(rows)] = np.asarray(render(scene, config.image_size, NATURAL, seed=rng.randrange(2**31)))
        rows.append(image_rows)
    distinct = {r for image_rows in rows for r in image_rows}
    counts = {
        "images": config.train_images, "rows": config.train_images * config.captions_per_image,
        "distinct_rows": len(distinct),
        "distinct_rows_by_type": dict(sorted(Counter(r.type for r in distinct).items())),
        "positive_variants": dict(sorted(Counter(r.positive_variant for r in distinct).items())),
        "negative_edits": dict(sorted(Counter(r.negative_edit for r in distinct).items())),
        "images_with_repeated_rows": padded,
        "scenes_without_a_qualifying_caption": aside.scenes_without_a_qualifying_caption,
        "repeated_claims": aside.repeated_claims, "claims_without_a_type": aside.claims_without_a_type,
        "claims_without_a_positive_by_type": {k: aside.no_positive[k] for k in TYPES},
        "claims_without_a_negative_by_type": {k: aside.no_negative[k] for k in TYPES},
    }
    return FinetuneSet(images, rows), counts


def build_finetune_set(config: FinetuneSetConfig, out_dir: Path) -> dict:
    """Write ``images.npy``, ``rows.json`` and ``manifest.json`` into ``out_dir``, as one output group."""
    data, counts = render_finetune_set(config)
    out_dir = Path(out_dir)
    with output_group(out_dir.parent) as staging:
        target = staging / out_dir.name
        with atomic_path(target / "images.npy") as tmp, open(tmp, "wb") as fh:
            np.save(fh, data.images)
        write_json_atomic(target / "rows.json", [[asdict(r) for r in rows] for rows in data.rows], indent=None)
        manifest = {"kind": "hard-positives-finetune", "profile": "mini", "world_version": VERSION,
                    "stream": FINETUNE_STREAM, "config": asdict(config), "counts": counts,
                    "sha256": {f: sha256_file(target / f) for f in ("images.npy", "rows.json")}}
        write_json_atomic(target / "manifest.json", manifest)
    return manifest


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, "Render the mini fine-tuning set: captions with a hard positive and "
                                                  "a hard negative")
    parser.add_argument("--out", type=Path, default=None, help="default: build/mini/hard_positives/finetune")
    args = parser.parse_args(argv)
    params, section = own_section("hard_positives.mini")
    config = FinetuneSetConfig(train_images=section["train_images"], captions_per_image=section["captions_per_image"],
                               image_size=params["mini"]["world"]["image_size"], seed=section["seed"])
    manifest = build_finetune_set(config, args.out or build_dir("mini", "hard_positives") / "finetune")
    print(json.dumps(manifest["counts"], indent=2))
    return 0


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
