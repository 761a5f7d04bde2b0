"""End to end through DVC: `dvc repro papers/sugarcrepe` on a copy of the workspace with tiny settings.

Proves the wiring of the dvc.yaml files (world -> training -> mini set -> Table 6 -> audit -> report) and that a
second `dvc repro` is a no-op. Sizes are tiny so this takes about a minute; the numbers mean nothing.
"""
from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from workspace_copy import copy_env, copy_workspace, dvc


def _tiny_params(workspace: Path) -> None:
    path = workspace / "params.yaml"
    params = yaml.safe_load(path.read_text())
    params["profile"] = "mini"
    params["mini"]["world"].update(train_images=256)
    params["sugarcrepe"]["mini_examples_per_category"] = 6
    params["sugarcrepe"]["figure5"].update(classification_images=56, n_resamples=100)
    params["sugarcrepe"]["mini_blind"].update(lm_train_images=256)
    params["sugarcrepe"]["negclip_mini"].update(train_images=192, steps=3, batch_size=16, warmup_steps=1)
    for name, recipe in params["train"].items():
        recipe.update(n_images=min(recipe["n_images"], 256), steps=3, batch_size=32)
    path.write_text(yaml.safe_dump(params, sort_keys=False))


RELEASED_TEXT_STAGES = ("papers/aro/dvc.yaml:real-text", "papers/sugarcrepe/dvc.yaml:recognition",
                        "papers/sugarcrepe/dvc.yaml:blind-real-text")


@pytest.mark.pipeline
def test_dvc_repro_sugarcrepe_mini_end_to_end(tmp_path, mirror):
    workspace = copy_workspace(tmp_path / "ws", keep_results=True)  # as a clone has them: committed, then rewritten
    _tiny_params(workspace)
    env = copy_env()  # the CPU profile's pins set: each training and scoring stage starts once, not twice
    env["VLC_CACHE"] = str(tmp_path / "cache")
    env["VLC_MIRROR"] = str(mirror)

    # The stages that read no mini-world file (ARO's and SugarCrepe's released-text stages, SugarCrepe's recognition
    # trend from published numbers: profile-independent, their outputs committed, run by `make repro` and by the
    # rehearsal) are recorded as the clone has them. This test is about the mini profile's stages, and its time must not
    # depend on whether the committed locks name today's code: with stale locks they reran, and the first `dvc repro`
    # passed its 900 s timeout on a 2-core AVX2 machine (2026-11-30)
    committed = dvc(workspace, env, "commit", "--force", *RELEASED_TEXT_STAGES)
    assert committed.returncode == 0, committed.stdout[-3000:] + committed.stderr[-3000:]
    first = dvc(workspace, env, "repro", "papers/sugarcrepe")
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    for stage in RELEASED_TEXT_STAGES:
        assert f"Running stage '{stage}'" not in first.stdout, stage
    for stage in ("mini/world", "mini/train@xs-2k", "mini/train@s-32k", "papers/sugarcrepe/dvc.yaml:mini-set",
                  "papers/sugarcrepe/dvc.yaml:table6", "papers/sugarcrepe/dvc.yaml:figure5",
                  "papers/sugarcrepe/dvc.yaml:mini-templates-set", "papers/sugarcrepe/dvc.yaml:mini-blind",
                  "papers/sugarcrepe/dvc.yaml:negclip-mini@negclip-swap", "papers/sugarcrepe/dvc.yaml:table5-mini",
                  "papers/sugarcrepe/dvc.yaml:analyses-mini", "papers/sugarcrepe/dvc.yaml:audit", "papers/sugarcrepe"):
        assert f"Running stage '{stage}'" in first.stdout, stage
    assert "full-set" not in first.stdout and "full-zoo" not in first.stdout  # the full profile's inputs stay out

    results = workspace / "results" / "sugarcrepe" / "mini"
    rows = list(csv.DictReader(open(results / "table6.csv")))
    assert [r["model"] for r in rows] == ["mini/xs-2k", "mini/xs-8k", "mini/xs-32k", "mini/s-32k"]
    context = json.loads((results / "table6_context.json").read_text())
    assert context["dataset"]["world_version"].startswith("miniworld-")
    assert all(context["models"][m]["n"]["swap_obj"] == 6 for m in context["models"])
    metric_files = sorted(p.name for p in (results / "table6_metrics").iterdir())
    assert metric_files == ["mini__s-32k.json", "mini__xs-2k.json", "mini__xs-32k.json", "mini__xs-8k.json"]
    assert len(list((results / "predictions").glob("*.csv"))) == 4
    audit = (workspace / "results" / "audit" / "sugarcrepe.md").read_text()
    assert "mini profile: not comparable" in audit
    assert "table:" in first.stdout and "table6.csv" in first.stdout  # the report stage printed locations

    second = dvc(workspace, env, "repro", "papers/sugarcrepe")
    assert second.returncode == 0, second.stderr[-3000:]
    assert "Data and pipelines are up to date." in second.stdout
    assert "Running stage" not in second.stdout

    shown = subprocess.run([sys.executable, "-m", "common", "metrics", "sugarcrepe"], cwd=workspace, env=env,
                           capture_output=True, text=True)  # `make metrics PAPER=sugarcrepe`
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == "papers/sugarcrepe" and any("mini__s-32k.json" in line for line in lines)
    assert not any("results/aro" in line for line in lines)  # one paper's metrics, not every paper's
    assert "audit/cross_paper" in shown.stdout and "pairs_unexplained" in shown.stdout  # then the cross-paper counts
    # readable: a row per model (and per audit summary), a column per number compared (7 categories + average,
    # 4 verdict counts), not one row of 130 columns mixing context into the metrics
    assert len(lines[1].split()) <= 1 + 8 + 9, lines[1]  # "Path", 8 accuracies, 4 verdicts (9 words)


def test_full_profile_wiring(tmp_path):
    """Under profile: full, papers/sugarcrepe depends on the fetched data (data/, plain dependencies: fetched and
    checksum-verified by `python -m common fetch`, not a DVC-tracked output) and the real zoo, not on the
    mini world (checked with `dvc dag`, which builds the graph without running anything)."""
    workspace = copy_workspace(tmp_path / "ws")
    path = workspace / "params.yaml"
    params = yaml.safe_load(path.read_text())
    params["profile"] = "full"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    dag = dvc(workspace, None, "dag", "--dot", "papers/sugarcrepe")
    assert dag.returncode == 0, dag.stderr
    for node in ("papers/sugarcrepe/dvc.yaml:full-set", "papers/sugarcrepe/dvc.yaml:full-zoo",
                 "papers/sugarcrepe/dvc.yaml:table6", "papers/sugarcrepe/dvc.yaml:audit",
                 "papers/sugarcrepe/dvc.yaml:figure5", "papers/sugarcrepe/dvc.yaml:blind-released",
                 "papers/sugarcrepe/dvc.yaml:analyses-full", "papers/sugarcrepe/dvc.yaml:aro-crepe-full-set",
                 "papers/sugarcrepe/dvc.yaml:negclip-full-set", "papers/sugarcrepe/dvc.yaml:negclip-full-refine",
                 "papers/sugarcrepe/dvc.yaml:negclip-full@negclip-swap",
                 "papers/sugarcrepe/dvc.yaml:negclip-full@scratch-negclip-all",
                 "papers/sugarcrepe/dvc.yaml:negclip-full-refined@scratch-negclip-refined-negate",
                 "papers/sugarcrepe/dvc.yaml:table5-full"):
        assert node in dag.stdout, node
    assert "mini/" not in dag.stdout and "mini-set" not in dag.stdout and "analyses-mini" not in dag.stdout


@pytest.mark.parametrize("profile", ["mini", "full"])
def test_bivlc_pipeline_per_profile(profile, tmp_path):
    """BiVLC under each profile (graph only): mini renders the benchmark and the TROHN analogs, fine-tunes the mini
    CLIP three ways and trains the detectors; full reads BiVLC, TROHN and COCO, re-trains under torchrun, trains the
    four detector heads and scores SugarCrepe's released set, with no mini stage upstream. Both end in Finding 3
    (over every paper's tables of the profile), the key figure and the audit."""
    workspace = copy_workspace(tmp_path / "ws")
    path = workspace / "params.yaml"
    params = yaml.safe_load(path.read_text())
    params["profile"] = profile
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    dag = dvc(workspace, None, "dag", "--dot", "papers/bivlc")
    assert dag.returncode == 0, dag.stderr
    for stage in ("audit", "correlation", "key-figure"):
        assert f"papers/bivlc/dvc.yaml:{stage}" in dag.stdout, stage
    if profile == "mini":
        for stage in ("mini-test-set", "mini-train-set", "mini-finetune@clip-coco", "mini-finetune@trohn-img",
                      "mini-detectors", "tables-mini"):
            assert f"papers/bivlc/dvc.yaml:{stage}" in dag.stdout, stage
        assert "mini/train@xs-32k" in dag.stdout and "papers/sugarcrepe/dvc.yaml:mini-set" in dag.stdout
        assert "-full" not in dag.stdout
    else:
        for stage in ("tables-full", "finetune-full-set@coco", "finetune-full-set@trohn-img",
                      "finetune-full@clip-coco", "finetune-full@trohn-img", "detectors-full-clip@image",
                      "detectors-full-trohn-img@text"):
            assert f"papers/bivlc/dvc.yaml:{stage}" in dag.stdout, stage
        assert "papers/sugarcrepe/dvc.yaml:full-set" in dag.stdout
        assert "mini/" not in dag.stdout and "mini-" not in dag.stdout


@pytest.mark.parametrize("profile", ["mini", "full"])
def test_aro_pipeline_per_profile(profile, tmp_path):
    """ARO's experiments under each profile (graph only): mini fine-tunes the mini CLIP on the rendered world;
    full prepares the real benchmarks and fine-tunes on the real data, with no mini stage upstream."""
    workspace = copy_workspace(tmp_path / "ws")
    path = workspace / "params.yaml"
    params = yaml.safe_load(path.read_text())
    params["profile"] = profile
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    dag = dvc(workspace, None, "dag", "--dot", "papers/aro")
    assert dag.returncode == 0, dag.stderr
    for stage in ("tables", "audit", "real-text", f"finetune-{profile}@negclip", f"finetune-{profile}@clip-ft"):
        assert f"papers/aro/dvc.yaml:{stage}" in dag.stdout, stage
    if profile == "mini":
        assert "mini/train@xs-32k" in dag.stdout and "papers/aro/dvc.yaml:mini-set" in dag.stdout
    else:
        assert "papers/aro/dvc.yaml:full-set" in dag.stdout
        assert "mini/" not in dag.stdout and "mini-" not in dag.stdout


@pytest.mark.parametrize("profile", ["mini", "full"])
def test_hard_positives_pipeline_per_profile(profile, tmp_path):
    """Hard positives under each profile (graph only): mini renders its benchmark and fine-tuning set and fine-tunes
    the mini CLIP; full fetches the released benchmark, builds the COCO fine-tuning set, fine-tunes CLIP ViT-B/32 and
    scores the runs with the zoo's models, with no mini stage upstream; the released text's analysis and the audit in
    both."""
    workspace = copy_workspace(tmp_path / "ws")
    path = workspace / "params.yaml"
    params = yaml.safe_load(path.read_text())
    params["profile"] = profile
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    dag = dvc(workspace, None, "dag", "--dot", "papers/hard_positives")
    assert dag.returncode == 0, dag.stderr
    for stage in ("audit", "real-text", f"table1-{profile}", "key-figure"):
        assert f"papers/hard_positives/dvc.yaml:{stage}" in dag.stdout, stage
    if profile == "mini":
        for stage in ("mini-test-set", "mini-finetune-set", "mini-finetune@hn", "mini-finetune@hp-hn",
                      "mini-finetune@ratio-0.25"):
            assert f"papers/hard_positives/dvc.yaml:{stage}" in dag.stdout, stage
        assert "mini/train@xs-32k" in dag.stdout and "full-data" not in dag.stdout
    else:
        for stage in ("full-data", "finetune-full-set", "finetune-full@hn", "finetune-full@hp-hn-replace",
                      "finetune-full@ratio-0.75"):
            assert f"papers/hard_positives/dvc.yaml:{stage}" in dag.stdout, stage
        assert "mini/" not in dag.stdout and "mini-" not in dag.stdout


@pytest.mark.parametrize("profile", ["mini", "full"])
def test_conclip_pipeline_per_profile(profile, tmp_path):
    """CoN-CLIP under each profile (graph only): mini renders CC-Neg's analog and fine-tuning set and fine-tunes the
    mini CLIP; full reads CC-Neg and COCO, re-trains the five runs under torchrun, scores every model on CC-Neg, the
    eight classification datasets and SugarCrepe's released set, and mines distractors, with no mini stage upstream."""
    workspace = copy_workspace(tmp_path / "ws")
    path = workspace / "params.yaml"
    params = yaml.safe_load(path.read_text())
    params["profile"] = profile
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    dag = dvc(workspace, None, "dag", "--dot", "papers/conclip")
    assert dag.returncode == 0, dag.stderr
    assert "papers/conclip/dvc.yaml:audit" in dag.stdout and "papers/conclip/dvc.yaml:key-figure" in dag.stdout
    if profile == "mini":
        for stage in ("mini-test-set", "mini-finetune-set", "mini-finetune@conclip", "mini-finetune@crepe-negate-l1",
                      "tables-mini"):
            assert f"papers/conclip/dvc.yaml:{stage}" in dag.stdout, stage
        assert "mini/train@xs-32k" in dag.stdout and "-full" not in dag.stdout
    else:
        for stage in ("finetune-full-set", "finetune-full@conclip", "finetune-full@l1-l2", "tables-full",
                      "zeroshot-full", "sugarcrepe-full", "table6-full", "distractors-full"):
            assert f"papers/conclip/dvc.yaml:{stage}" in dag.stdout, stage
        assert "papers/sugarcrepe/dvc.yaml:full-set" in dag.stdout
        assert "mini/" not in dag.stdout and "mini-" not in dag.stdout
