"""The blind baseline (docs/card.md): each benchmark's own scoring code run with ``BlindEngine``, a text-only scorer
(the caption's n-gram fluency whatever the image), fitted as SugarCrepe's ``mini-blind`` stage fits it.
"""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Iterable

import numpy as np

from common.blind.ngram import NgramFluency
from common.evaluation.engine import Embeddings, EngineConfig
from common.files.jsonl import read_json
from common.files.tasks import DatasetError, Image, as_ref
from common.paths import build_root

MINI_LM_IMAGES = 8000
"""Mini-world training images (3 captions each) whose captions fit the language model."""
SCORER = "ngram-lm"


class BlindEngine:
    """``Engine.embed`` with a text-only scorer: s(caption, image) = fluency(caption) for every image."""

    def __init__(self, lm: NgramFluency, corpus: str):
        self.lm = lm
        self.model = SimpleNamespace(name=f"blind/{SCORER}", fingerprint=f"{SCORER}:{corpus}", device="cpu")
        self.config = EngineConfig()
        self.identity = (self.model.name, self.model.fingerprint)

    def embed(self, image_owners: Iterable[tuple[Image, str]], texts: Iterable[str]) -> Embeddings:
        refs = list(dict.fromkeys(as_ref(image) for image, _ in image_owners))
        unique = list(dict.fromkeys(texts))
        fluency = self.lm.scores(unique) if unique else np.zeros(0)
        return Embeddings(np.ones((len(refs), 1)), np.asarray(fluency, dtype=np.float64).reshape(-1, 1),
                          {r: i for i, r in enumerate(refs)}, {t: i for i, t in enumerate(unique)})


def mini_world_captions(path: Path, n_images: int = MINI_LM_IMAGES) -> list[str]:
    """The captions of the first ``n_images`` mini-world training images (``captions.json``: one list per image)."""
    if not path.is_file():
        raise DatasetError(f"{path}: the mini world's training captions are missing; run `dvc repro mini/world`")
    per_image = read_json(path, list)
    if len(per_image) < n_images or not all(isinstance(e, list) and all(isinstance(c, str) and c for c in e)
                                            for e in per_image[:n_images]):
        raise DatasetError(f"{path}: expected at least {n_images} lists of non-empty captions; rebuild the world "
                           f"(`dvc repro mini/world`)")
    return [c for entry in per_image[:n_images] for c in entry]


def blind_engine(profile: str) -> tuple[BlindEngine | None, str]:
    """The profile's blind engine and what it is, or None and why there is none."""
    if profile != "mini":
        return None, ("not computed in the full profile yet: the real-text blind stage cross-fits its language "
                      "model per benchmark (papers/sugarcrepe/blind_real.py), which the card does not do")
    captions_file = build_root() / "mini" / "world" / "train" / "captions.json"
    corpus = f"{captions_file.name} of the first {MINI_LM_IMAGES} mini-world training images"
    engine = BlindEngine(NgramFluency(seed=0).fit(mini_world_captions(captions_file)), corpus)
    return engine, f"{engine.model.name}: n-gram fluency fitted on {corpus}"
