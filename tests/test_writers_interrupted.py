"""Every multi-file writer of a mini set, interrupted at every moment it moves a file, leaves the previous set whole.

The rule (docs/robustness.md, "Writers: all or nothing"): a stage's outputs appear together or not at all. Here each
writer first builds a set, then is rerun with another seed and interrupted (``KeyboardInterrupt``, what
``common.errors.sigterm_as_interrupt`` makes of SIGTERM) at the k-th ``os.replace`` for every k of the rerun: each
file completed in staging and each move of the commit is one such moment. After every interruption the folder must
hold the previous set, byte for byte, and nothing the writer staged or set aside; the uninterrupted rerun must then
change it (so the check can fail). Before 2026-11-29 six of these writers (the mini world's training set, ARO's fine-tuning set and neighbours,
hard positives' test and fine-tuning sets, SugarCrepe's NegCLIP set) wrote straight into their folder and failed it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest
import torch

from interrupt_support import count_moves, digest as _digest, interrupt_at_every_move, unchanged


def mini_world(out: Path, seed: int) -> None:
    from common.miniworld.build import TrainSetConfig, build_train_set

    build_train_set(TrainSetConfig(n_images=6, captions_per_image=2, image_size=24, seed=seed), out, progress=False)


def _aro_negatives(captions, seed):
    from papers.aro.negatives import NegativeCaption

    return [[] if len(c.split()) < 4 else [NegativeCaption(" ".join(reversed(c.split())), "NN")] for c in captions]


def aro_finetune(out: Path, seed: int) -> None:
    from papers.aro.finetune_sets_mini import FinetuneSetConfig, build_finetune_set

    build_finetune_set(FinetuneSetConfig(train_images=6, val_images=3, captions_per_image=2, image_size=24,
                                         seed=seed), out, generate=_aro_negatives)


def aro_neighbours(out: Path, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The base model is replaced by a fixed projection of the pixels: the writer, not the model, is under test."""
    import common.zoo
    from papers.aro import neighbours_mini

    set_dir = out.parent / "finetune-set"
    if not set_dir.exists():
        aro_finetune(set_dir, 0)
    monkeypatch.setattr(common.zoo, "create_model", lambda base: type("Served", (), {"model": None})())

    def features(model, images):
        pixels = images.pixels.reshape(len(images), -1).double()
        projected = pixels @ torch.randn(pixels.shape[1], 8, dtype=torch.float64,
                                         generator=torch.Generator().manual_seed(seed))
        return torch.nn.functional.normalize(projected, dim=-1).float()

    monkeypatch.setattr(neighbours_mini, "encode_images", features)
    neighbours_mini.compute_neighbours(set_dir, "mini-stand-in", 2, out)


def hard_positives_test(out: Path, seed: int) -> None:
    from papers.hard_positives.sets_mini import TestSetConfig, build_test_set

    build_test_set(TestSetConfig(examples_per_group=2, image_size=24, seed=seed), out)


def hard_positives_finetune(out: Path, seed: int) -> None:
    from papers.hard_positives.finetune_sets_mini import FinetuneSetConfig, build_finetune_set

    build_finetune_set(FinetuneSetConfig(train_images=6, captions_per_image=2, image_size=24, seed=seed), out)


def sugarcrepe_negclip(out: Path, seed: int) -> None:
    from papers.sugarcrepe import negclip_sets_mini as sm

    sm.build_set(sm.SetConfig(train_images=12, captions_per_image=2, image_size=24, seed=seed), out,
                 refine_config=sm.RefineConfig(folds=3))


def conclip_test(out: Path, seed: int) -> None:
    from papers.conclip.sets_mini import TestSetConfig, build_test_set

    build_test_set(TestSetConfig(examples_per_cell=1, classification_images=28, image_size=24, seed=seed), out)


def bivlc_test(out: Path, seed: int) -> None:
    from papers.bivlc.sets_mini import TestSetConfig, build_test_set

    build_test_set(TestSetConfig(instances_per_category=2, image_size=24, seed=seed), out)


WRITERS: dict[str, Callable] = {
    "mini/world": mini_world,
    "aro/mini-finetune-set": aro_finetune,
    "aro/mini-finetune-neighbours": aro_neighbours,
    "hard_positives/mini-test-set": hard_positives_test,
    "hard_positives/mini-finetune-set": hard_positives_finetune,
    "sugarcrepe/negclip-mini-set": sugarcrepe_negclip,
    "conclip/mini-test-set": conclip_test,
    "bivlc/mini-test-set": bivlc_test,
}


@pytest.mark.parametrize("stage", sorted(WRITERS))
def test_an_interrupted_set_writer_leaves_the_previous_set_whole(stage, tmp_path, monkeypatch):
    write = WRITERS[stage]
    call = (lambda out, seed: write(out, seed, monkeypatch)) if stage.endswith("neighbours") else write
    out = tmp_path / "outputs" / "set"
    call(out, 0)
    before = _digest(out)
    assert before, f"{stage}: the writer wrote nothing"

    total = count_moves(lambda: call(tmp_path / "outputs" / "count", 1))  # counted in a folder of its own
    interrupt_at_every_move(lambda: call(out, 1), total, unchanged(out, before, stage))

    call(out, 1)
    assert _digest(out) != before, f"{stage}: another seed wrote the same set, so the check above proves nothing"
    assert _digest(out) == _digest(tmp_path / "outputs" / "count")


def _train(out: Path, seed: int) -> None:
    """A few steps of the trainer with a validated best and a loss with its own parameters: five files at the end
    (weights, loss weights, best weights, best loss weights, sidecar)."""
    import functools

    from common.training import FromScratch, SyntheticBatches, TrainConfig, train
    from papers.bivlc.losses import DetectorLoss

    def score(model: torch.nn.Module) -> float:
        return -float(model.visual.conv1.weight.detach().abs().mean())

    train(TrainConfig(steps=3, batch_size=4, lr=2e-3, warmup_steps=1, seed=seed, validate_every=1),
          FromScratch("mini-vit-xs"), SyntheticBatches(labels=True), functools.partial(DetectorLoss, 64, "text"),
          out / "run.safetensors", validate=score)


def test_an_interrupted_training_run_leaves_the_previous_weights_and_sidecar_whole(tmp_path):
    """The trainer's final files are one group (``common.training.trainer``): a rerun interrupted at any move leaves
    the previous run's weights, best weights and sidecar, all of them, and the other files of the folder untouched.
    Before 2026-11-29 the best weights were written as validation went and the sidecar after the weights, so an
    interrupted rerun left new best weights (or new weights) beside the previous sidecar."""
    from common.zoo import register_local_configs

    register_local_configs()
    out = tmp_path / "models"
    out.mkdir()
    (out / "other.safetensors").write_bytes(b"another stage's model")
    _train(out, 0)
    before = _digest(out)
    assert {"run.safetensors", "run.loss.safetensors", "run.best.safetensors", "run.best.loss.safetensors",
            "run.json", "other.safetensors"} == set(before), sorted(before)

    (tmp_path / "count").mkdir()
    total = count_moves(lambda: _train(tmp_path / "count", 1))
    assert total >= 5  # each of the five files moved at least once
    interrupt_at_every_move(lambda: _train(out, 1), total, unchanged(out, before, "training"))

    _train(out, 1)
    after = _digest(out)
    assert after["other.safetensors"] == before["other.safetensors"]
    assert all(after[name] != before[name] for name in before if name.startswith("run.")), "another seed, same files"
