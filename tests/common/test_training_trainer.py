"""The trainer on one process: it reproduces the mini family's original training loop, resumes
bit-exactly, keeps the best validated weights, accumulates without changing the gradient, freezes
what it is told, clamps the logit scale; the smoke CLI runs a paper's loss by import path. Tiny
data made here, the repo's ``mini-vit-xs``, a few steps each, CPU.
"""
from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

from common.training import (
    ClipLoss, FromCheckpoint, FromScratch, HardNegativeClipLoss, MiniWorldBatches, SyntheticBatches, Towers,
    TrainConfig, train, train_step)
from common.training.__main__ import main as smoke_main
from common.training.checkpoint import load_weights, portable_state, save_weights, seed_everything
from common.training.model_init import normalizer
from common.zoo import register_local_configs
from papers.bivlc.losses import DetectorLoss
from papers.conclip.losses import ConClipLoss
from training_support import Interrupted, KilledAt, pinned_run

ARCH = "mini-vit-xs"
WORDS = "red blue green small large cube ball cone left right of on under the a".split()


@pytest.fixture(scope="module")
def train_dir(tmp_path_factory) -> Path:
    """20 random 48x48 images with 2 random captions each, in the mini world's layout."""
    out = tmp_path_factory.mktemp("pairs")
    rng = np.random.default_rng(7)
    np.save(out / "images.npy", rng.integers(0, 256, (20, 48, 48, 3), dtype=np.uint8))
    captions = [[" ".join(rng.choice(WORDS, size=rng.integers(2, 9))) for _ in range(2)] for _ in range(20)]
    (out / "captions.json").write_text(json.dumps(captions))
    return out


@pytest.fixture(scope="module")
def pairs(train_dir) -> MiniWorldBatches:
    import open_clip

    register_local_configs()
    return MiniWorldBatches.load(train_dir, 20, open_clip.get_tokenizer(ARCH))




ORIGINAL_LOOP_SHA256 = "1025ab2bbe464c2fb9e8ec7dbfc46b0a9b96739059a9dc427326abf8b4ddb5fb"
"""sha256 of the weights the mini family's own loop (``common/training/family.py``, then ``common/train.py``,
before it called this trainer) wrote for the run below: ``train_clip(TrainConfig(arch="mini-vit-xs", n_images=20,
steps=5, batch_size=8, lr=2e-3, warmup_steps=2, seed=3), <train_dir fixture>, ...)``, one thread, final loss
2.2709240436553957."""
PINNED_LOOP = """
import sys, open_clip, torch
from pathlib import Path
from common.training import ClipLoss, FromScratch, MiniWorldBatches, TrainConfig, train
from common.zoo import register_local_configs
torch.set_num_threads(1)
register_local_configs()
pairs = MiniWorldBatches.load(Path(sys.argv[1]), 20, open_clip.get_tokenizer("mini-vit-xs"))
config = TrainConfig(steps=5, batch_size=8, lr=2e-3, warmup_steps=2, seed=3)
print(repr(train(config, FromScratch("mini-vit-xs"), pairs, ClipLoss, Path(sys.argv[2])).final_loss))
"""
"""The run pinned above, as ``training_support.pinned_run`` runs it under the CPU profile."""


def test_reproduces_the_original_training_loop_bit_for_bit(train_dir, tmp_path):
    """Same weights, byte for byte, under the CPU profile, as the loop ``common/training/family.py`` (then
    ``common/train.py``) ran before the trainer existed: batch 8 of 20 images drops a tail of 4 and draws a new
    permutation every 2 steps, so 5 steps cross two epoch boundaries (``MiniWorldBatches`` replays that stream)."""
    pinned = pinned_run(PINNED_LOOP, train_dir, tmp_path / "new.safetensors")
    assert pinned == (ORIGINAL_LOOP_SHA256, 2.2709240436553957), pinned


def _scores(model: torch.nn.Module) -> float:
    """A deterministic 'validation score' that depends on the weights."""
    return float(model.logit_scale.detach()) - float(model.visual.conv1.weight.detach().abs().mean())


CASES = {
    "clip-pairs": (ClipLoss, None, 1),
    "detector-synthetic-accum2": (functools.partial(DetectorLoss, 64, "text"), SyntheticBatches(labels=True), 2),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_resume_after_interrupt_is_bit_identical(case, pairs, tmp_path):
    """Killed at step 3 (last resume state at step 2), resumed: the same bytes as an uninterrupted run
    (weights, loss head, best weights, sidecar) and the same losses and validation record."""
    make_loss, batches, accum = CASES[case]
    batches = batches or pairs
    config = TrainConfig(steps=5, batch_size=8, lr=2e-3, warmup_steps=2, seed=1, accum=accum,
                         checkpoint_every=2, validate_every=2)

    def run(out: Path, source, **kw):
        return train(config, FromScratch(ARCH), source, make_loss, out / "m.safetensors", validate=_scores, **kw)

    whole = run(tmp_path / "whole", batches)
    with pytest.raises(Interrupted):
        run(tmp_path / "cut", KilledAt(batches, at=3))
    assert (tmp_path / "cut" / "m.resume.pt").is_file() and not (tmp_path / "cut" / "m.safetensors").exists()

    with pytest.raises(ValueError, match="different run"):  # a resume state is only continued by its own setup
        train(TrainConfig(steps=5, batch_size=8, lr=1e-3, warmup_steps=2, seed=1, accum=accum, checkpoint_every=2,
                          validate_every=2), FromScratch(ARCH), batches, make_loss,
              tmp_path / "cut" / "m.safetensors", validate=_scores)

    resumed = run(tmp_path / "cut", batches)
    assert resumed.resumed_from == 2 and whole.resumed_from is None
    assert resumed.losses == whole.losses and resumed.validation == whole.validation
    for name in sorted(p.name for p in (tmp_path / "whole").iterdir()):
        assert (tmp_path / "cut" / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name
    assert not (tmp_path / "cut" / "m.resume.pt").exists()  # removed once the weights are written
    sidecar = (tmp_path / "whole" / "m.json").read_text()
    assert str(tmp_path) not in sidecar and "seconds" not in sidecar  # portable, identical across reruns


def test_validation_keeps_the_best_weights(pairs, tmp_path):
    """Validated at steps 2, 4 and 5 (the end) with scripted scores: step 4 wins and its weights are kept."""
    scripted, seen = iter([0.1, 0.7, 0.3]), {}

    def validate(model):
        assert not model.training
        score = next(scripted)
        seen[score] = {k: v.clone() for k, v in portable_state(model).items()}
        return score

    result = train(TrainConfig(steps=5, batch_size=8, warmup_steps=1, validate_every=2), FromScratch(ARCH), pairs,
                   ClipLoss, tmp_path / "m.safetensors", validate=validate)
    assert result.validation == ((2, 0.1), (4, 0.7), (5, 0.3)) and (result.best_step, result.best_score) == (4, 0.7)
    best = load_weights(result.best_weights)
    assert all(torch.equal(best[k], seen[0.7][k]) for k in best)
    assert not torch.equal(best["visual.conv1.weight"], load_weights(result.weights)["visual.conv1.weight"])
    assert json.loads((tmp_path / "m.json").read_text())["validation"]["best_step"] == 4


def _gradients(make_loss, batch, accum: int) -> dict[str, torch.Tensor]:
    seed_everything(0)
    built = FromScratch(ARCH).build()
    loss = make_loss(world=None)
    core = Towers(built.model, loss, *normalizer(built.transform))
    for p in built.model.parameters():  # the detector's towers are frozen, as the trainer does
        p.requires_grad_(not isinstance(loss, DetectorLoss))
    train_step(core, core, batch, accum)
    return {n: p.grad for n, p in core.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("name", ["clip", "hard-negative-clip", "detector"])
def test_accumulation_equals_one_pass(name):
    """Micro-batches encode under no_grad and re-encode with grad spliced into the cached features, so
    the gradient is the full batch's. Tolerance: every tensor's gradient within 1e-5 of its norm
    (measured ~1e-6): the text tower trims padding to each micro-batch's longest caption, and
    smaller matrix products round differently; nothing else differs. The logit scale and the
    detector head, used directly by the loss, must be counted once, not once per micro-batch."""
    make_loss, k_img, k_txt = {"clip": (ClipLoss, 1, 1), "hard-negative-clip": (HardNegativeClipLoss, 2, 4),
                               "detector": (functools.partial(DetectorLoss, 64, "image"), 1, 1)}[name]
    batch = SyntheticBatches(images_per_sample=k_img, texts_per_sample=k_txt, labels=True).batch(0, 0, 8)
    one = _gradients(make_loss, batch, 1)
    for accum in (2, 4):
        many = _gradients(make_loss, batch, accum)
        assert one.keys() == many.keys()
        for k in one:
            err = (one[k] - many[k]).norm().item()
            assert err <= 1e-5 * one[k].norm().item() + 1e-9, (
                f"{name} accum {accum}: {k} gradient off by {err:.2e} (norm {one[k].norm().item():.2e}); "
                "tolerance 1e-5 relative")


def test_freezing_keeps_weights_bit_identical(tmp_path):
    """Start from a checkpoint; the frozen image tower (ConCLIP-style loss) and every tower of a detector
    come out byte-identical, while what is trained moves."""
    seed_everything(5)
    start = tmp_path / "start.safetensors"
    save_weights(start, portable_state(FromScratch(ARCH).build().model))
    init = FromCheckpoint(ARCH, start)
    initial = load_weights(start)

    conclip = train(TrainConfig(steps=2, batch_size=4, warmup_steps=1, freeze=("image",)), init,
                    SyntheticBatches(images_per_sample=2, texts_per_sample=2), ConClipLoss, tmp_path / "c.safetensors")
    trained = load_weights(conclip.weights)
    visual = [k for k in initial if k.startswith("visual.")]
    assert visual and all(torch.equal(trained[k], initial[k]) for k in visual)
    assert not torch.equal(trained["token_embedding.weight"], initial["token_embedding.weight"])
    assert conclip.record["frozen"] == ["image"] and conclip.record["init"]["file"] == "start.safetensors"

    detector = train(TrainConfig(steps=2, batch_size=4, warmup_steps=1), init, SyntheticBatches(labels=True),
                     functools.partial(DetectorLoss, 64, "image"), tmp_path / "d.safetensors")
    trained = load_weights(detector.weights)
    assert all(torch.equal(trained[k], initial[k]) for k in initial)
    assert set(load_weights(tmp_path / "d.loss.safetensors")) == {"head.weight", "head.bias"}
    assert detector.record["trainable_parameters"] == 65


@dataclass(frozen=True)
class _HotScale:
    """From scratch, but with the stored log-scale above the cap."""

    arch: str

    def build(self):
        built = FromScratch(self.arch).build()
        with torch.no_grad():
            built.model.logit_scale.fill_(5.0)
        return built

    def describe(self):
        return {"kind": "test", "arch": self.arch}


def test_logit_scale_is_clamped_after_each_step(tmp_path):
    seen = []
    train(TrainConfig(steps=2, batch_size=4, warmup_steps=1, validate_every=1), _HotScale(ARCH), SyntheticBatches(),
          ClipLoss, tmp_path / "m.safetensors", validate=lambda m: seen.append(m.logit_scale.item()) or 0.0)
    # Step 1 leaves 5.0 minus at most lr: clamped to ln 100 exactly; step 2 may only go down from there.
    assert seen[0] == torch.tensor(math.log(100)).item() and seen[1] <= seen[0]


def test_bad_setups_fail_with_one_line(tmp_path):
    with pytest.raises(ValueError, match="needs CUDA"):
        train(TrainConfig(steps=1, batch_size=4, precision="bf16"), FromScratch(ARCH), SyntheticBatches(), ClipLoss,
              tmp_path / "m.safetensors")
    with pytest.raises(ValueError, match="not divisible"):
        train(TrainConfig(steps=1, batch_size=5, accum=2), FromScratch(ARCH), SyntheticBatches(), ClipLoss,
              tmp_path / "m.safetensors")
    with pytest.raises(ValueError, match="expects 2 image segment"):
        train(TrainConfig(steps=1, batch_size=4), FromScratch(ARCH), SyntheticBatches(), HardNegativeClipLoss,
              tmp_path / "m.safetensors")
    with pytest.raises(ValueError, match="unknown parts"):
        TrainConfig(steps=1, batch_size=4, freeze=("vision",))


def test_smoke_cli_runs_a_loss_named_by_import_path(tmp_path, capsys):
    """``--loss-class`` takes any loss by import path (keywords after commas, ``embed_dim`` supplied),
    ``--freeze``/``--labels`` apply to the run; a bad path is a one-line usage error."""
    rc = smoke_main(["smoke", "--out", str(tmp_path), "--device", "cpu", "--steps", "1", "--batch-size", "4",
                     "--freeze", "image", "--labels", "--loss-class", "papers.conclip.losses:ConClipLoss",
                     "--loss-class", "papers.bivlc.losses:DetectorLoss,tower=text"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "ConClipLoss: world 1" in out and "DetectorLoss-text: world 1" in out
    conclip = json.loads((tmp_path / "ConClipLoss.json").read_text())
    assert conclip["frozen"] == ["image"] and conclip["data"]["images_per_sample"] == 2 and conclip["data"]["labels"]
    detector = json.loads((tmp_path / "DetectorLoss-text.json").read_text())
    assert detector["loss"] == {"name": "DetectorLoss", "tower": "text", "embed_dim": 64, "features": "raw"}
    assert len(json.loads((tmp_path / "DetectorLoss-text.losses.json").read_text())) == 1
    for bad, says in [("papers.bivlc.losses:Nope", "has no class 'Nope'"), ("papers.bivlc.losses", "MODULE:CLASS"),
                      ("papers.bivlc.losses:DetectorLoss,tower", "is not KEY=VALUE")]:
        with pytest.raises(SystemExit) as exit_:
            smoke_main(["smoke", "--out", str(tmp_path), "--loss-class", bad])
        assert exit_.value.code == 2 and says in capsys.readouterr().err, bad
    with pytest.raises(SystemExit):
        smoke_main(["smoke", "--out", str(tmp_path), "--loss", "negclip"])  # papers are named by path, not here
    assert "unknown loss 'negclip'" in capsys.readouterr().err


def test_an_fp16_step_without_gradients_is_skipped():
    """fp16 needs CUDA in ``train``, so the step is tested here with the CPU's ``GradScaler``: a step whose loss needed
    no gradient (``train_step`` ran no backward) leaves the weights as they are, where ``scaler.step`` itself
    raises; a step with gradients steps; without a scaler (fp32) the optimiser always steps."""
    from common.training.trainer import optimizer_step

    p = torch.nn.Parameter(torch.ones(2))
    optimizer = torch.optim.SGD([p], lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    scaler.scale((p * 2).sum()).backward()
    optimizer_step(optimizer, scaler)
    stepped = p.detach().clone()
    assert not torch.equal(stepped, torch.ones(2))
    optimizer.zero_grad(set_to_none=True)
    other = torch.amp.GradScaler("cpu")
    for s in (scaler, other):
        s.scale((p.detach() * 2).sum())  # a loss with no gradient: no backward
    with pytest.raises(AssertionError, match="No inf checks were recorded"):
        other.step(optimizer)
    optimizer_step(optimizer, scaler)
    assert torch.equal(p.detach(), stepped)
    seen = []
    optimizer.step = lambda: seen.append("step")
    optimizer_step(optimizer, None)
    assert seen == ["step"]


def test_the_record_s_trainer_fields_convert_the_config_once(monkeypatch):
    import common.training.trainer as trainer

    calls = []
    real = trainer.asdict
    monkeypatch.setattr(trainer, "asdict", lambda config: calls.append(1) or real(config))
    fields = trainer.trainer_fields(TrainConfig(steps=3, batch_size=4, freeze=("text",)))
    assert len(calls) == 1 and "recipe" not in fields and fields["steps"] == 3 and fields["freeze"] == ("text",)
