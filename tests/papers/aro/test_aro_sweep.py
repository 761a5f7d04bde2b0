"""A 2-step NegCLIP / CLIP-FT sweep of a tiny random CLIP on the full profile's TSV path: weights, sidecar, lr pick,
and a killed sweep resumed."""
from __future__ import annotations

import json

import numpy as np
import open_clip
import pytest

from common.training import FromScratch
from common.zoo import load_state_dict, register_local_configs
from papers.aro.batches import FinetuneBatches, TokenCache
from papers.aro.negclip_tsv_full import tsv_table, val_from_tsv
from papers.aro.sweep import run_sweep, sweep_dir, sweep_jobs


def section(**changes) -> dict:
    """``params.yaml aro.full.finetune`` for a tiny sweep: one epoch of batches of 4, no resume states."""
    return {"base": "random", "lrs": (1e-3,), "epochs": 1, "batch_size": 4, "warmup_steps": 1, "weight_decay": 0.2,
            "seed": 0, "checkpoint_every": 0, **changes}


def _inputs(tiny_release, hard: bool):
    """The release's TSV, its batches (with hard negatives or not) and its validator, for mini-vit-xs."""
    tsv, images_dir = tiny_release
    register_local_configs()
    tokens = TokenCache(open_clip.get_tokenizer("mini-vit-xs"), memo=False)
    table, images = tsv_table(tsv, images_dir, image_size=48)
    return tsv, FinetuneBatches(table, images, tokens, hard=hard), val_from_tsv(tsv, images_dir, 48, tokens)


@pytest.mark.parametrize("method", ["negclip", "clip-ft"])
def test_two_step_sweep_writes_weights_and_sidecar(tiny_release, tmp_path, monkeypatch, method):
    monkeypatch.setenv("VLC_CACHE", str(tmp_path / "cache"))
    tsv, batches, validator = _inputs(tiny_release, hard=method == "negclip")
    params = section(lrs=(1e-3, 1e-4))
    out = tmp_path / "models" / f"{method}.safetensors"
    sweep = sweep_jobs(method, "full", params, FromScratch("mini-vit-xs"), batches, validator, "papers.aro.train",
                       {"train_tsv": tsv.name}, steps=2)
    record = run_sweep(sweep, out, progress=False)
    sidecar = json.loads(out.with_suffix(".json").read_text())
    assert sidecar["chosen_lr"] == record["chosen_lr"] in (1e-3, 1e-4)
    assert [r["lr"] for r in sidecar["lr_sweep"]] == [1e-3, 1e-4]
    best = max(sidecar["lr_sweep"], key=lambda r: r["validation_mean_recall_at_1"])
    assert best["validation_mean_recall_at_1"] == sidecar["validation"]["best_score"]
    assert sidecar["trainer"]["steps"] == 2 and sidecar["trainer"]["lr"] == sidecar["chosen_lr"]
    assert sidecar["loss"]["name"] == ("HardNegativeClipLoss" if method == "negclip" else "ClipLoss")
    assert sidecar["data"]["name"] == f"aro-{method}" and sidecar["train_tsv"] == tsv.name
    assert set(record["seconds_per_lr"]) == {"lr1e-3", "lr1e-4"} and "seconds_per_lr" not in sidecar
    model = FromScratch("mini-vit-xs").build().model
    load_state_dict(model, out, method)  # strict: a complete state dict of the architecture
    folder = tmp_path / "cache" / "training" / f"aro-full-{method}"
    assert not folder.exists() or not any(folder.iterdir())  # the sweep's runs are cleaned up
    assert not any((tmp_path / "cache" / "training").glob("aro-full-*-lr*"))  # and so are the runs' resume states
    assert np.isfinite(sidecar["final_loss"])


@pytest.mark.slow
def test_killed_sweep_resumes_at_the_unfinished_lr(tiny_release, tmp_path, monkeypatch):
    """A sweep killed during its second lr reruns only that lr, and ends with an uninterrupted sweep's bytes."""
    import papers.aro.sweep as sweep_module

    monkeypatch.setenv("VLC_CACHE", str(tmp_path / "cache"))
    _, batches, validator = _inputs(tiny_release, hard=True)
    params = section(lrs=(1e-3, 1e-4))
    jobs = sweep_jobs("negclip", "full", params, FromScratch("mini-vit-xs"), batches, validator,
                      "papers.aro.train", {}, steps=2)

    def sweep(out):
        return run_sweep(jobs, out, progress=False)

    whole = sweep(tmp_path / "whole.safetensors")
    real_run_job, calls = sweep_module.run_job, []

    def killed_at_second(job, *args, **kwargs):
        calls.append(job.config.lr)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real_run_job(job, *args, **kwargs)

    monkeypatch.setattr(sweep_module, "run_job", killed_at_second)
    with pytest.raises(KeyboardInterrupt):
        sweep(tmp_path / "resumed.safetensors")
    assert not (tmp_path / "resumed.safetensors").exists()
    calls.clear()
    monkeypatch.setattr(sweep_module, "run_job",
                        lambda job, *a, **k: calls.append(job.config.lr) or real_run_job(job, *a, **k))
    resumed = sweep(tmp_path / "resumed.safetensors")
    assert calls == [1e-4]  # the first lr's finished run was reused
    assert resumed["lr_sweep"] == whole["lr_sweep"]
    assert (tmp_path / "resumed.safetensors").read_bytes() == (tmp_path / "whole.safetensors").read_bytes()
    other = sweep_jobs("negclip", "full", params, FromScratch("mini-vit-xs"), batches, validator,
                       "papers.aro.train", {}, steps=3)
    assert sweep_dir(jobs) != sweep_dir(other) and sweep_dir(jobs) != sweep_dir(jobs, world_size=2)


def test_an_interrupted_sweep_leaves_the_previous_weights_and_sidecar_whole(tiny_release, tmp_path, monkeypatch):
    """The chosen weights and their sidecar are one output group: a sweep with other lrs, interrupted at any move of a
    file (its runs' and its own), leaves the previous pair byte for byte (before 2026-11-29 the weights were moved into
    place before the sidecar was written)."""
    from interrupt_support import count_moves, digest, interrupt_at_every_move, unchanged

    _, batches, validator = _inputs(tiny_release, hard=True)

    def sweep(out, lrs, cache):
        monkeypatch.setenv("VLC_CACHE", str(tmp_path / cache))  # each run trains afresh: the same moves every time
        params = section(lrs=lrs)
        run_sweep(sweep_jobs("negclip", "full", params, FromScratch("mini-vit-xs"), batches, validator,
                             "papers.aro.train", {}, steps=2), out, progress=False)

    models = tmp_path / "models"
    sweep(models / "negclip.safetensors", (1e-3,), "cache-first")
    before = digest(models)
    assert set(before) == {"negclip.safetensors", "negclip.json"}
    total = count_moves(lambda: sweep(tmp_path / "count" / "negclip.safetensors", (1e-4,), "cache-count"))
    runs = iter(range(total + 1))
    interrupt_at_every_move(lambda: sweep(models / "negclip.safetensors", (1e-4,), f"cache-{next(runs)}"), total,
                            unchanged(models, before, "sweep"))
    sweep(models / "negclip.safetensors", (1e-4,), "cache-last")
    assert digest(models) == digest(tmp_path / "count") != before
