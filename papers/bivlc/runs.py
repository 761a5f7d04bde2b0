"""BiVLC's runs as data, both profiles: the three fine-tunes (CLIP_COCO, CLIP_TROHN-Text, CLIP_TROHN-Img) and the
natural-vs-synthetic detectors (CLIPDet, CLIPTROHN-Img/Det).

One catalogue, so that the mini and the full profile train the same runs with the same losses, and the tables list
them in the same order (``train``, ``detectors``, ``tables``).
"""
from __future__ import annotations

from dataclasses import dataclass

from common.errors import WorkspaceError, unknown_name
from common.paths import ROOT
from common.training.losses import ClipLoss
from common.training.recipes import Recipe, load_recipe
from common.zoo import register_local_configs
from papers.bivlc.losses import TrohnImgLoss, TrohnTextLoss

RECIPES = "papers/bivlc/recipes.toml"
DATA_FILES = ("papers/bivlc/recipes.toml",)


class BivlcRunError(WorkspaceError):
    """A run or detector that cannot be built as named (the message says why)."""


@dataclass(frozen=True)
class RunSpec:
    """One fine-tune: its table label, its loss, its training data, and the segments of one sample (``images``,
    ``texts``, in the order the loss reads them)."""

    label: str
    loss: type
    dataset: str
    """'coco' (images, captions), 'trohn-text' (+ negative captions) or 'trohn-img' (+ negative captions and images)."""
    images: tuple[str, ...]
    texts: tuple[str, ...]


RUNS: dict[str, RunSpec] = {
    "clip-coco": RunSpec("CLIP_COCO (in-batch negatives only)", ClipLoss, "coco", ("image",), ("caption",)),
    "trohn-text": RunSpec("CLIP_TROHN-Text (negative captions)", TrohnTextLoss, "trohn-text", ("image",),
                          ("caption", "negative")),
    "trohn-img": RunSpec("CLIP_TROHN-Img (negative captions and images)", TrohnImgLoss, "trohn-img",
                         ("image", "negative_image"), ("caption", "negative")),
}


def run_spec(run: str) -> RunSpec:
    if run not in RUNS:
        raise unknown_name("BiVLC run", run, RUNS)
    return RUNS[run]


DETECTOR_ENCODERS: tuple[str, ...] = ("clip", "trohn-img")
"""CLIPDet (heads on the base's frozen towers) and CLIPTROHN-Img/Det (on the TROHN-Img run's)."""
DETECTOR_TOWERS: tuple[str, ...] = ("image", "text")
DETECTOR_EPOCHS = {"image": 1, "text": 10}
"""The authors' epochs: 1 for the image detector, 10 for the text detector (their ``--epoch`` defaults:
``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_img_classifier.py:36`` "'--epoch', type=int, default=1)" and
``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_text_classifier.py:38`` "'--epoch', type=int, default=10)")."""


def embed_dim_of(arch: str) -> int:
    """The joint embedding's width: the detector head's input (512 for ViT-B/32)."""
    # deferred: loads open_clip only when called
    import open_clip

    register_local_configs()
    config = open_clip.get_model_config(arch)
    if config is None:
        raise BivlcRunError(f"{arch}: no open_clip model config")
    return int(config["embed_dim"])


def recipe(name: str) -> Recipe:
    """A table of ``papers/bivlc/recipes.toml``: each fine-tune's (the authors' AdamW, embeddings decayed, no clamp)
    and ``detectors`` (the authors' Adam at a constant rate on the frozen towers' raw outputs), in both profiles."""
    return load_recipe(ROOT / RECIPES, name)
