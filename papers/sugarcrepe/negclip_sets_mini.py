"""The mini NegCLIP fine-tuning set (stage ``negclip-mini-set``): rendered scenes, true captions, one rule-based
negative of each kind per caption, and per kind the rows adversarial refinement keeps.

The mini analog of Tables 5 and 10's training data (Sec. 5.2, App. D.3), from its own random stream (``STREAM``;
training scenes never hold the held-out colour-shape pairs). Only captions that every kind applies to are kept, so
that the runs train on the same captions; the manifest counts what was set aside. ``refined.json``: per kind, the
(image, caption) rows whose negative survives Algorithm 1 against two cross-fitted blind scorers.
"""
from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from common.blind.classifier import PairwiseTextClassifier
from common.blind.crossfit import TextPair, crossfit
from common.blind.ngram import NgramFluency
from common.blind.refine import refine, refine_report
from common.files.io import atomic_path, output_group, sha256_file, write_json_atomic
from common.miniworld import VERSION
from common.miniworld.build import stream
from common.miniworld.claims import Claim, sample_claim
from common.miniworld.render import NATURAL, render
from common.miniworld.scene import Scene, sample_scene
from common.miniworld.templates import template_negative
from common.paths import build_dir
from common.pipeline import reproducible
from common.pipeline.cli import stage_parser
from common.pipeline.params import own_params
from papers.sugarcrepe.negclip_rows import FinetuneSet
from papers.sugarcrepe.runs import KINDS

STREAM = "sugarcrepe-finetune-train"

NegativeFn = Callable[[Scene, Claim, str, random.Random], "str | None"]
"""``common.miniworld.templates.template_negative``: (scene, true claim, kind, rng) -> negative caption or None."""


@dataclass(frozen=True)
class SetConfig:
    train_images: int = 2000
    captions_per_image: int = 3
    image_size: int = 48
    seed: int = 0
    kinds: tuple[str, ...] = KINDS
    tries_per_image: int = 40
    """Claims drawn per scene before settling for fewer captions (a one-object scene has few true sentences)."""


@dataclass(frozen=True)
class RefineConfig:
    """``params.yaml sugarcrepe.blind``: the blind scorers' cross-fitting folds and Algorithm 1's grid and seed."""

    folds: int = 5
    bins: int = 50
    seed: int = 0


def _captions_for(rng: random.Random, scene: Scene, config: SetConfig, negative: NegativeFn,
                  rejected: dict[str, int]) -> tuple[list[str], list[dict[str, str]]]:
    """Up to ``captions_per_image`` distinct true captions that every kind gives a negative for (padded by repeating
    the first ones, as a scene with few such sentences allows), or nothing when no claim qualifies."""
    captions: list[str] = []
    negatives: list[dict[str, str]] = []
    for _ in range(config.tries_per_image):
        claim = sample_claim(rng, scene)
        text = claim.text()
        if text in captions:
            continue
        drawn = {kind: negative(scene, claim, kind, rng) for kind in config.kinds}
        missing = [k for k, v in drawn.items() if not v or v.lower() == text.lower()]  # CLIP's tokenizer lowercases
        for kind in missing:
            rejected[kind] += 1
        if missing:
            continue
        captions.append(text)
        negatives.append(drawn)  # type: ignore[arg-type]
        if len(captions) == config.captions_per_image:
            break
    k = len(captions)
    for i in range(config.captions_per_image - k if k else 0):
        captions.append(captions[i % k])
        negatives.append(negatives[i % k])
    return captions, negatives


def render_set(config: SetConfig, negative: NegativeFn | None = None) -> tuple[FinetuneSet, dict]:
    """The fine-tuning set and the counts of what was set aside (scenes without a qualifying caption, captions by
    the kind that did not apply, padded images)."""
    negative = negative or template_negative
    rng = stream(config.seed, STREAM)
    images = np.empty((config.train_images, config.image_size, config.image_size, 3), dtype=np.uint8)
    captions: list[list[str]] = []
    negatives: list[list[dict[str, str]]] = []
    rejected = {k: 0 for k in config.kinds}
    skipped_scenes = padded_images = 0
    while len(captions) < config.train_images:
        scene = sample_scene(rng, allow_heldout=False)
        caps, negs = _captions_for(rng, scene, config, negative, rejected)
        if not caps:
            skipped_scenes += 1
            continue
        padded_images += len(set(caps)) < len(caps)
        images[len(captions)] = np.asarray(render(scene, config.image_size, NATURAL, seed=rng.randrange(2**31)))
        captions.append(caps)
        negatives.append(negs)
    counts = {"images": config.train_images, "captions": config.train_images * config.captions_per_image,
              "distinct_captions": len({c for caps in captions for c in caps}),
              "scenes_without_a_qualifying_caption": skipped_scenes, "images_with_repeated_captions": padded_images,
              "claims_rejected_by_kind": rejected}
    return FinetuneSet(images, captions, negatives), counts


def refine_negatives(data: FinetuneSet, config: RefineConfig) -> dict[str, dict]:
    """Per kind, the (image, caption) rows whose negative survives Algorithm 1 (App. D.3), with ``mini_blind``'s two
    scorers standing in for Vera and the grammar model, cross-fitted with folds grouped by caption text (a caption
    shared by two images is never scored by a model fitted on it)."""
    def fluency(fit: Sequence[TextPair]):
        return NgramFluency(seed=config.seed).fit([p.positive for p in fit])

    def classifier(fit: Sequence[TextPair]):
        return PairwiseTextClassifier().fit([p.positive for p in fit], [p.negative for p in fit])

    rows = data.rows()
    out = {}
    for kind in data.kinds():
        pairs = [TextPair("negclip-mini-finetune", kind, data.captions[i][j], data.captions[i][j],
                          data.negatives[i][j][kind], f"{i}/{j}") for i, j in rows]
        scored = [crossfit(pairs, fit, config.folds, config.seed) for fit in (fluency, classifier)]
        kept = refine(scored[0].gap, scored[1].gap, config.bins, config.seed)
        report = refine_report(scored[0].gap, scored[1].gap, kept)
        out[kind] = {
            "n_in": report.n_in, "n_kept": report.n_kept,
            "blind_accuracy_before": {s.scorer: round(float(s.correct.mean()), 4) for s in scored},
            "blind_accuracy_after": {s.scorer: round(float(s.correct[kept].mean()), 4) if kept.size else None
                                     for s in scored},
            "kept": [list(rows[k]) for k in kept],
        }
    return out


def build_set(config: SetConfig, out_dir: Path, negative: NegativeFn | None = None,
              refine_config: RefineConfig | None = RefineConfig()) -> dict:
    """Write ``images.npy``, ``captions.json``, ``negatives.json``, ``refined.json`` (unless ``refine_config`` is
    None) and ``manifest.json`` into ``out_dir`` as one output group."""
    data, counts = render_set(config, negative)
    with output_group(Path(out_dir).parent) as staging:
        out = staging / Path(out_dir).name
        with atomic_path(out / "images.npy") as tmp, open(tmp, "wb") as fh:
            np.save(fh, data.images)
        write_json_atomic(out / "captions.json", data.captions, indent=None)
        write_json_atomic(out / "negatives.json", data.negatives, indent=None)
        files = ["images.npy", "captions.json", "negatives.json"]
        refined_counts = None
        if refine_config is not None:
            refined = refine_negatives(data, refine_config)
            write_json_atomic(out / "refined.json", {"config": asdict(refine_config), "kinds": refined}, indent=None)
            files.append("refined.json")
            refined_counts = {k: {"n_kept": v["n_kept"], "blind_accuracy_before": v["blind_accuracy_before"],
                                  "blind_accuracy_after": v["blind_accuracy_after"]} for k, v in refined.items()}
        manifest = {
            "kind": "sugarcrepe-negclip-finetune", "profile": "mini", "world_version": VERSION, "stream": STREAM,
            "config": {**asdict(config), "kinds": list(config.kinds)}, "counts": counts,
            "refined": refined_counts, "sha256": {f: sha256_file(out / f) for f in files},
        }
        write_json_atomic(out / "manifest.json", manifest)
    return manifest


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, __doc__)
    parser.add_argument("--out", type=Path, default=None, help="default: build/mini/sugarcrepe_negclip/set")
    args = parser.parse_args(argv)
    reproducible.pin()  # the blind scorers' gaps decide refinement: the same floats on every machine
    params = own_params()
    section, blind = params["sugarcrepe"]["negclip_mini"], params["sugarcrepe"]["blind"]
    config = SetConfig(train_images=section["train_images"], captions_per_image=section["captions_per_image"],
                       image_size=params["mini"]["world"]["image_size"], seed=section["seed"])
    refine = RefineConfig(folds=blind["folds"], bins=blind["refine_bins"], seed=blind["seed"])
    manifest = build_set(config, args.out or build_dir("mini", "sugarcrepe_negclip") / "set", refine_config=refine)
    print(json.dumps({"counts": manifest["counts"], "refined": manifest["refined"]}, indent=2))
    return 0


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
