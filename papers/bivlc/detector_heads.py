"""BiVLC's natural-vs-synthetic heads applied to images and captions, both profiles: the towers' raw outputs (what the
authors' probes read), the heads (trained here, or released by the authors) and the released per-instance outputs
they are compared with.

The authors' probe is ``Linear(512, 1)`` on the tower's unnormalised output: ``classifier(encoder_model.visual(x))``
(``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_img_classifier.py:29-30`` "x = self.image_encoder(x) x =
self.classifier(x)") and ``classifier(encoder_model.encode_text(x))``
(``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_text_classifier.py:31-32`` "x = self.text_encoder.encode_text(x)
x = self.classifier(x)"), both heads ``Linear(in_features=512, out_features=1)``
(``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_img_classifier.py:25`` "torch.nn.Linear(in_features=512,"), and
so the released evaluation applies them (``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_evaluation_BiVLC.py:23-48``
"x = self.text_encoder.encode_text(x)"), in fp32 without autocast; open_clip's ``encode_image(x, normalize=False)``
is ``visual(x)``. So are the heads trained here (``DetectorLoss``, ``raw_features=True``).

Head files:

* trained here: the trainer's ``<stem>[.best].loss.safetensors`` of ``DetectorLoss`` (``head.weight``, ``head.bias``);
* released (imirandam/CLIP_Detector, imirandam/CLIP_TROHN-Img_Detector): the ``torch.save`` of the image head's
  script (``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_img_classifier.py:157-164`` "'model_state_dict':
  model.state_dict(),") and of the text head's (``IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_text_classifier.py:162-169``
  "'optimizer_state_dict': optimizer.state_dict(),"), ``{"epoch", "model_state_dict",
  "optimizer_state_dict", "loss"}``, whose ``model_state_dict`` holds ``classifier.weight``/``classifier.bias`` and
  the frozen tower it was trained on (``image_encoder.*``: the visual tower; ``text_encoder.*``: the CLIP model with
  ``visual = None``). The tower is compared with the encoder the head is applied to (``tower_agreement``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from common.errors import WorkspaceError
from common.files.tasks import Image, as_ref
from papers.bivlc.detection import detector_decisions, is_synthetic

RELEASED_TOWER_PREFIX = {"image": ("image_encoder.", "visual."), "text": ("text_encoder.", "")}
"""A released head's tower weights: (prefix in its ``model_state_dict``, prefix of the same tensor in open_clip's CLIP)."""
BATCH = 256


class DetectorHeadError(WorkspaceError):
    """A head file that is not one, or an encoder that has no raw outputs."""


@dataclass(frozen=True)
class Head:
    """A detector head and, for a released one, the tower weights saved with it (open_clip's names)."""

    linear: torch.nn.Linear
    tower: str
    tower_state: dict = field(default_factory=dict, repr=False)


def _linear(path: Path, state: dict, prefix: str) -> torch.nn.Linear:
    if f"{prefix}.weight" not in state or f"{prefix}.bias" not in state:
        raise DetectorHeadError(f"{path}: no '{prefix}.weight'/'{prefix}.bias' (found {sorted(state)[:6]})")
    weight, bias = state[f"{prefix}.weight"], state[f"{prefix}.bias"]
    if weight.ndim != 2 or weight.shape[0] != 1 or bias.shape != (1,):
        raise DetectorHeadError(f"{path}: head weight {tuple(weight.shape)} / bias {tuple(bias.shape)}, expected "
                                "(1, d) / (1,)")
    head = torch.nn.Linear(weight.shape[1], 1)
    head.load_state_dict({"weight": weight.float(), "bias": bias.float()})
    return head.eval()


def load_head(path: Path, tower: str) -> Head:
    """The head of ``tower`` in ``path``: a ``.safetensors`` written by the trainer, or a released torch file."""
    # deferred: loads PIL only when called
    from common.zoo.openclip import unwrap_training_dict

    path = Path(path)
    if not path.is_file():
        raise DetectorHeadError(f"{path}: no detector head; train it (a detectors stage) or fetch the released one")
    if path.suffix == ".safetensors":
        # deferred: loads safetensors only when called
        from safetensors.torch import load_file

        return Head(_linear(path, load_file(str(path)), "head"), tower)
    try:
        state = unwrap_training_dict(torch.load(path, map_location="cpu", weights_only=True))
    except Exception as exc:
        raise DetectorHeadError(f"{path}: not a released detector checkpoint ({exc})") from exc
    head = _linear(path, state, "classifier")
    ours, theirs = RELEASED_TOWER_PREFIX[tower]
    tower_state = {theirs + k[len(ours):]: v for k, v in state.items() if k.startswith(ours)}
    if not tower_state:
        raise DetectorHeadError(f"{path}: no '{ours}*' tensors: not the {tower} detector's checkpoint")
    return Head(head, tower, tower_state)


def tower_agreement(head: Head, net: torch.nn.Module) -> dict | None:
    """How the tower saved with a released head compares with ``net``'s (None for a head trained here): tensors
    compared, those that differ (or that ``net`` lacks) and the largest absolute difference."""
    if not head.tower_state:
        return None
    own = net.state_dict()
    differing, missing, largest = [], [], 0.0
    for name, saved in head.tower_state.items():
        if name not in own or own[name].shape != saved.shape:
            missing.append(name)
            continue
        diff = float((own[name].detach().cpu().double() - saved.double()).abs().max()) if saved.numel() else 0.0
        if diff:
            differing.append(name)
            largest = max(largest, diff)
    return {"tensors": len(head.tower_state), "differing": len(differing), "missing": len(missing),
            "max_abs_diff": largest, "first_differing": (missing + differing)[:3]}


@torch.no_grad()
def tower_outputs(model, images: Sequence[Image], texts: Sequence[str], batch: int = BATCH
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The towers' raw outputs, fp32 without autocast, full-length tokens (as the authors' evaluation), of a zoo
    model wrapping open_clip's CLIP; each distinct file or text encoded once."""
    net = getattr(model, "model", None)
    if not (isinstance(net, torch.nn.Module) and hasattr(net, "encode_image") and hasattr(net, "encode_text")):
        raise DetectorHeadError(f"{getattr(model, 'name', model)}: not an open_clip model; the detectors read the "
                                "towers' raw outputs (encode_image / encode_text)")
    device = next(net.parameters()).device
    refs = [as_ref(i) for i in images]
    if any(r.transform is not None for r in refs):
        raise DetectorHeadError("detector heads read plain images; a transformed image has no released counterpart")

    def encoded(keys: list, inputs, encode) -> dict:
        rows = {}
        for start in range(0, len(keys), batch):
            chunk = keys[start: start + batch]
            rows.update(zip(chunk, encode(inputs(chunk).to(device), normalize=False).float().cpu().numpy()))
        return rows

    img_rows = encoded(list(dict.fromkeys(r.path for r in refs)),
                       lambda chunk: torch.stack([model.load_image(p) for p in chunk]), net.encode_image)
    txt_rows = encoded(list(dict.fromkeys(texts)), model.tokenize, net.encode_text)
    dim = int(net.visual.output_dim)  # the joint width, whatever the text tower's projection is (empty inputs)
    image = np.stack([img_rows[r.path] for r in refs]) if refs else np.zeros((0, dim), np.float32)
    text = np.stack([txt_rows[t] for t in texts]) if texts else np.zeros((0, dim), np.float32)
    return image, text


def probabilities(head: Head | torch.nn.Linear, features: np.ndarray) -> np.ndarray:
    """sigmoid(head(features)): P(synthetic) of each row, as float64."""
    linear = head.linear if isinstance(head, Head) else head
    x = np.asarray(features, dtype=np.float32)
    if x.shape[-1] != linear.in_features:
        raise DetectorHeadError(f"detector head takes {linear.in_features}-d features, the encoder gives "
                                f"{x.shape[-1]}")
    with torch.no_grad():
        return torch.sigmoid(linear(torch.from_numpy(x)).squeeze(-1)).double().numpy()


def compare_with_released(image: np.ndarray, text: np.ndarray, released_image: np.ndarray,
                          released_text: np.ndarray) -> dict:
    """Recomputed against released per-instance probabilities: the largest |difference| of each tower, the inputs
    whose 0.5 decision differs, the instances whose retrieval decisions (any metric) differ."""
    if np.shape(image) != np.shape(released_image) or np.shape(text) != np.shape(released_text):
        return {"comparable": False, "why": f"{len(image)} instances here, {len(released_image)} released"}
    ours, theirs = detector_decisions(image, text), detector_decisions(released_image, released_text)
    differ = np.any([ours[m] != theirs[m] for m in ours], axis=0)
    return {"comparable": True, "instances": int(len(image)),
            "image_max_abs_diff": float(np.abs(np.asarray(image) - released_image).max(initial=0.0)),
            "text_max_abs_diff": float(np.abs(np.asarray(text) - released_text).max(initial=0.0)),
            "image_detection_differs": int((is_synthetic(image) != is_synthetic(released_image)).sum()),
            "text_detection_differs": int((is_synthetic(text) != is_synthetic(released_text)).sum()),
            "instances_with_a_decision_differing": int(differ.sum())}
