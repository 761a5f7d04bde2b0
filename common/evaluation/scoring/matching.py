"""Selection by image-text matching (ITM): one image and K captions, each pair scored by a cross-encoder.

Why a module apart from ``selection``: an ITM head (BLIP's, FLAVA's) reads an image and a caption *together*, so a
pair's score is not a function of one embedding per image and one per text: nothing is cached (``Engine`` does not
apply), and each (image, caption) pair costs a forward pass. The decision is the same ``DecisionRule`` as for
contrastive scores, so a paper's rule (strict, argmax) applies unchanged.
"""
from __future__ import annotations

from pathlib import Path
from typing import Protocol, Sequence

import numpy as np
import torch
from tqdm import tqdm

from common.evaluation.outcomes import Outcome
from common.evaluation.scoring.selection import STRICT, DecisionRule, SelectionResult
from common.files.io import sha256_file
from common.files.tasks import DatasetError, ImageRef, ImageToTextItem, as_ref


class MatchingModel(Protocol):
    """What ITM scoring needs from a model."""

    name: str
    fingerprint: str

    def load_image(self, path: Path) -> torch.Tensor: ...
    def match_scores(self, pixels: torch.Tensor, texts: Sequence[str]) -> torch.Tensor: ...


def _score_fn(model: MatchingModel, score: str):
    if score == "itm":
        return model.match_scores
    if not hasattr(model, "pair_scores"):
        raise ValueError(f"model {model.name!r} offers only ITM match scores, not {score!r}")
    return lambda pixels, texts: model.pair_scores(pixels, texts, kind=score)


class _Images:
    """Preprocessed (and transformed) images, the last one kept: an item's K pairs share it, and neighbouring items
    often share an image."""

    def __init__(self, model: MatchingModel):
        self.model = model
        self.last: tuple[ImageRef, torch.Tensor] | None = None
        self.file_keys: dict[Path, str] = {}

    def get(self, ref: ImageRef, owner: str) -> torch.Tensor:
        if self.last is not None and self.last[0] == ref:
            return self.last[1]
        try:
            pixels = self.model.load_image(ref.path)
        except Exception as exc:
            raise DatasetError(f"unreadable image {ref.path} (used by {owner}): {exc}") from exc
        if ref.transform is not None:  # the engine's convention: transforms are seeded by the file's sha256
            if ref.path not in self.file_keys:
                self.file_keys[ref.path] = sha256_file(ref.path)
            try:
                pixels = ref.transform(pixels, self.file_keys[ref.path])
            except Exception as exc:
                raise DatasetError(f"image {ref.path} (used by {owner}): transform {ref.transform.identity} "
                                   f"cannot be applied to this model's preprocessed image: {exc}") from exc
        self.last = (ref, pixels)
        return pixels


def image_to_text(model: MatchingModel, items: Sequence[ImageToTextItem], rule: DecisionRule = STRICT,
                  batch_size: int = 64, score: str = "itm", progress: bool = False) -> SelectionResult:
    """Choose among K captions for each image by the model's ITM match probability of each (image, caption) pair.

    ``score`` other than ``"itm"`` asks ``model.pair_scores`` for another pair score (``common.zoo.hf.SCORES``,
    e.g. ARO's BLIP ranking ``"itm_logit+itc"``); the task is then named ``image_to_text_<score>``.
    """
    if not items:
        raise DatasetError("no items to score")
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, not {batch_size}")
    scorer = _score_fn(model, score)
    images = _Images(model)
    scores: list[float] = []
    pixels: list[torch.Tensor] = []
    texts: list[str] = []

    def flush() -> None:
        if texts:
            out = scorer(torch.stack(pixels), texts)
            scores.extend(torch.as_tensor(out, dtype=torch.float64).reshape(-1).tolist())
            pixels.clear()
            texts.clear()

    bar = tqdm(total=sum(len(it.captions) for it in items), desc=f"ITM pairs [{model.name}]", disable=not progress,
               mininterval=2)
    try:
        for it in items:
            image = images.get(as_ref(it.image), it.origin or it.item_id)
            for caption in it.captions:
                pixels.append(image)
                texts.append(caption)
                if len(texts) == batch_size:
                    bar.update(len(texts))
                    flush()
        bar.update(len(texts))
        flush()
    finally:
        bar.close()
    result = SelectionResult(model.name, model.fingerprint, f"image_to_text_{score}", rule.name)
    start = 0
    for it in items:
        item_scores = np.asarray(scores[start: start + len(it.captions)])
        start += len(it.captions)
        result.outcomes.append(Outcome(it.item_id, it.group, tuple(item_scores.tolist()), *rule.decide(item_scores)))
    return result
