"""Fine-tuning a zoo model on a rendered caption set: the pieces every paper's mini fine-tunes share.

A paper's fine-tuning module (``papers/sugarcrepe/negclip_mini.py``, ``papers/hard_positives/mini.py``) owns its
data set, its loss and its runs; what is the same for all of them lives here:

* ``CaptionBatches``: images with several captions each, plus any number of aligned extra text segments (a hard
  negative, a hard positive, ...) per caption; the batch of a step is a pure function of (seed, step), and the
  draws ignore the extras, so runs that leave an extra out still see the same images and captions in the same order;
* ``caption_tokens`` / ``refuse_same_tokens``: texts per image tokenized into the (N, P, L) grids the batches take,
  and the check that an extra text never tokenizes like its caption (a loss would push a text away from itself);
* ``tokenizer_for``, ``served``: the tokenizer of a zoo architecture, a checkpoint trained here behind the engine's
  interface;
* ``RunParams``: the optimiser settings every run of a paper shares (one ``params.yaml`` section);
* ``resume_path``: where a run's resume state lives, outside DVC's outputs, keyed by everything that defines the run.

Nothing here is in ``common/training/`` on purpose: editing that package re-trains the mini family.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Protocol, Sequence

import numpy as np
import torch

from common.errors import WorkspaceError
from common.tasks import DatasetError
from common.training import FromCheckpoint, TrainConfig

Tokenize = Callable[[Sequence[str]], torch.Tensor]


class FinetuneError(WorkspaceError):
    """An input of a fine-tuning run that cannot be used as given (the message names the file or run)."""


class CaptionBatches:
    """Image-caption pairs, each caption with the aligned texts of ``extras`` as further text segments.

    ``images`` (N, 3, H, W) uint8, ``captions`` (N, P, L) tokens (P captions per image), each extra (N, P, L) with
    extra[i, j] belonging to caption j of image i. A batch holds ``images`` (B, 1, 3, H, W) and ``texts``
    (B, 1 + len(extras), L): [caption, *extras] per sample.

    The batch of step s is a pure function of (seed, s): an epoch is a permutation of the images
    (``default_rng([seed, 0, epoch])``, the tail that does not fill a batch dropped) and ``default_rng([seed, 1, s])``
    picks one caption per image. The draws ignore ``extras``, so runs with different extras see the same captions
    in the same order. ``fields`` are what ``describe`` reports beyond the name and sizes (default: the number of
    extra segments); they enter the trainer's record and resume key.
    """

    def __init__(self, images: torch.Tensor, captions: torch.Tensor, extras: Sequence[torch.Tensor] = (),
                 name: str = "captions", fields: Mapping | None = None):
        if images.ndim != 4 or captions.ndim != 3 or len(images) != len(captions):
            raise ValueError("CaptionBatches: need images (N, 3, H, W) and caption tokens (N, captions_per_image, L)")
        for k, extra in enumerate(extras):
            if extra.shape != captions.shape:
                raise ValueError(f"CaptionBatches: extra text segment {k} {tuple(extra.shape)} must match captions "
                                 f"{tuple(captions.shape)}")
        self.images, self.captions, self.extras, self.name = images, captions, tuple(extras), name
        self.fields = dict(fields) if fields is not None else {"extra_text_segments": len(self.extras)}
        self._perm: tuple[tuple[int, int], np.ndarray] | None = None

    def steps_per_epoch(self, size: int) -> int:
        if size > len(self.images):
            raise ValueError(f"batch of {size} is larger than the {len(self.images)} training images")
        return len(self.images) // size

    def draws(self, seed: int, step: int, size: int) -> tuple[np.ndarray, np.ndarray]:
        """(image indices, caption index per image) of one step's global batch."""
        epoch, j = divmod(step, self.steps_per_epoch(size))
        if self._perm is None or self._perm[0] != (seed, epoch):
            self._perm = ((seed, epoch), np.random.default_rng([seed, 0, epoch]).permutation(len(self.images)))
        idx = self._perm[1][j * size: (j + 1) * size]
        pick = np.random.default_rng([seed, 1, step]).integers(0, self.captions.shape[1], size)
        return idx, pick

    def batch(self, seed: int, step: int, size: int, rows: slice = slice(None)) -> dict[str, torch.Tensor]:
        idx, pick = self.draws(seed, step, size)
        idx, pick = torch.from_numpy(idx[rows]), torch.from_numpy(pick[rows])
        texts = [self.captions[idx, pick], *(extra[idx, pick] for extra in self.extras)]
        return {"images": self.images[idx].unsqueeze(1), "texts": torch.stack(texts, dim=1)}

    def describe(self) -> dict:
        return {"name": self.name, "n_images": len(self.images), "captions_per_image": int(self.captions.shape[1]),
                **self.fields}


def pixels(images: np.ndarray) -> torch.Tensor:
    """(N, H, W, 3) uint8 as rendered to the (N, 3, H, W) uint8 the batches hold (the trainer normalises)."""
    return torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2).contiguous()


def caption_tokens(tokenize: Tokenize, texts: Sequence[Sequence[str]]) -> torch.Tensor:
    """Texts per image (N lists of P) tokenized into an (N, P, L) grid."""
    n = len(texts)
    per_image = {len(t) for t in texts}
    if len(per_image) != 1:
        raise ValueError(f"caption_tokens: every image needs the same number of texts, got {sorted(per_image)}")
    return tokenize([t for image in texts for t in image]).view(n, per_image.pop(), -1)


def refuse_same_tokens(captions: torch.Tensor, other: torch.Tensor, texts: Sequence[Sequence[str]], what: str,
                       where: str) -> None:
    """A ``DatasetError`` naming the first (image, caption) whose ``what`` tokenizes exactly like the caption (cut at
    the context length, lowercased by CLIP's tokenizer): a loss would push a text away from itself."""
    same = (other == captions).all(-1).nonzero()
    if len(same):
        i, j = (int(x) for x in same[0])
        raise DatasetError(f"{where}: image {i}: caption {j}: its {what} tokenizes like the caption "
                           f"({texts[i][j]!r}; {len(same)} such pairs)")


def tokenizer_for(arch: str) -> Tokenize:
    """open_clip's tokenizer of ``arch`` (the zoo's local configs registered first)."""
    import open_clip

    from common.zoo import register_local_configs

    register_local_configs()
    return open_clip.get_tokenizer(arch)


class ServedEntry(Protocol):
    """What ``served`` needs of a table row: its name, its weights (None: the zoo model ``name``), its label."""

    name: str
    checkpoint: Path | None

    @property
    def label(self) -> str: ...


def served(entry: ServedEntry, arch: str, device: str = "cpu", family: str = "mini"):
    """The model behind the engine's interface: the zoo's, or a checkpoint of ``arch`` trained here, loaded
    strictly (``family``: the zoo family its spec is filed under)."""
    import open_clip

    from common.zoo import ModelSpec, OpenClipModel, create_model

    if entry.checkpoint is None:
        return create_model(entry.name, device=device)
    if not Path(entry.checkpoint).is_file():
        raise FinetuneError(f"{entry.checkpoint}: no weights for {entry.name}; run the stage that trains it")
    built = FromCheckpoint(arch, Path(entry.checkpoint)).build()
    spec = ModelSpec(name=entry.name, arch=arch, family=family, label=entry.label)
    return OpenClipModel(spec, built.model, built.transform, open_clip.get_tokenizer(arch), device)


@dataclass(frozen=True)
class RunParams:
    """A ``params.yaml`` section's optimiser settings, shared by every run of one paper's fine-tunes."""

    base: str = "mini/xs-32k"
    steps: int = 200
    batch_size: int = 128
    lr: float = 1e-3
    warmup_steps: int = 20
    weight_decay: float = 0.1
    seed: int = 0

    KEYS = ("base", "steps", "batch_size", "lr", "warmup_steps", "weight_decay", "seed")

    @classmethod
    def from_params(cls, section: Mapping) -> "RunParams":
        return cls(**{k: section[k] for k in cls.KEYS})

    def trainer_config(self) -> TrainConfig:
        return TrainConfig(steps=self.steps, batch_size=self.batch_size, lr=float(self.lr),
                           warmup_steps=self.warmup_steps, weight_decay=self.weight_decay, seed=self.seed)


def resume_path(name: str, key: Mapping, code: Sequence[Path]) -> Path:
    """``<cache root>/training/<name>/<digest>.resume.pt``: outside the stage's outputs (DVC deletes those before a
    rerun), keyed by ``key`` (everything that defines the run), the torch version and the bytes of the code that
    trains it (``code``: the caller's modules; this module and ``common/training/*.py`` are added)."""
    from common.paths import cache_root

    digest = hashlib.sha256(torch.__version__.encode())
    here = Path(__file__).resolve()
    files = [*(Path(p).resolve() for p in code), here, *sorted((here.parent / "training").glob("*.py"))]
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    run_key = hashlib.sha256(json.dumps({**key, "code": digest.hexdigest()}, sort_keys=True, default=str).encode())
    return cache_root() / "training" / name / f"{run_key.hexdigest()[:16]}.resume.pt"
