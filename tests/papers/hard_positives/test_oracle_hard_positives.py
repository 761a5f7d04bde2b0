"""The oracle's reading of hard positives' run_eval script (papers/hard_positives/oracle.py): model names, which row
is run at which precision, the printed counts, and the cells and decisions from its two score arrays; no rehearsal
needed."""
import numpy as np
import pytest

from papers.hard_positives import oracle as hp


def test_model_names_are_run_evals():
    assert hp.openai_variant("ViT-B-32-quickgelu") == "ViT-B/32"
    assert hp.openai_variant("ViT-L-14") == "ViT-L/14"
    assert hp.openai_variant("RN50x16") == "RN50x16"
    assert hp.authors_model("openai/ViT-B-32") == "openai-clip:ViT-B/32"
    assert hp.authors_model("hard_positives/crepe-swap-gelu") == "crepe_ft_swap"
    assert hp.authors_model("aro/negclip-gelu") == "NegCLIP"
    assert hp.authors_model("hard_positives/crepe-swap") is None  # QuickGELU: the authors' code builds GELU only
    assert hp.authors_model("hard_positives/full-ratio-0", "ratio-0") == "coco_crepe_pos"
    from papers.hard_positives.runs import RUNS

    assert set(hp.RUN_NAMES) == set(RUNS)


CONTEXT = {"models": {
    "base": {"model": "openai/ViT-B-32", "precision": "fp16", "reference": None},
    "base@fp32": {"model": "openai/ViT-B-32", "precision": "fp32", "reference": "precision"},
    "crepe-swap": {"model": "hard_positives/crepe-swap-gelu", "precision": "fp32", "reference": None},
    "crepe-swap@quickgelu": {"model": "hard_positives/crepe-swap", "precision": "fp32", "reference": "activation"},
    "hn": {"model": "hard_positives/full-hn", "precision": "fp32", "reference": None}},
    "checkpoints": {"hn": {"path": "hn.safetensors"}}}


@pytest.mark.parametrize("device, row, stem", [("cpu", "base@fp32", "openai__ViT-B-32@fp32"),
                                               ("cuda", "base", "openai__ViT-B-32")])
def test_openai_clip_is_compared_at_the_precision_run_eval_scores_at(device, row, stem):
    entries, skipped = hp.plan(CONTEXT, device)
    by_name = {e.authors_name: e for e in entries}
    assert by_name["openai-clip:ViT-B/32"].row == row and by_name["openai-clip:ViT-B/32"].stem == stem
    assert by_name["crepe_ft_swap"].row == "crepe-swap" and by_name["coco_crepe_negs"].row == "hn"
    assert len(skipped) == 2 and any("crepe-swap@quickgelu" in s.benchmark for s in skipped)


def test_printed_counts_follow_model_and_dataset_names():
    text = "Getting model from replace/models/coco_control.pt...\ncoco_control\nswap\n3\n1\n0\n2\n0\n\n"
    assert hp.printed_counts(text, "coco_control", "swap") == (3, 1, 0, 2, 0)
    with pytest.raises(ValueError):
        hp.printed_counts("coco_control\nswap\n3\n", "coco_control", "swap")


def test_cells_and_decisions_from_the_two_arrays():
    # per example (c_n, c) from data/ and (c_n, c_p) from swapped_data/: c_n below both; c > c_n > c_p; tie
    orig = np.array([[[0.1, 0.3]], [[0.2, 0.4]], [[0.2, 0.3]]])
    mod = np.array([[[0.1, 0.2]], [[0.2, 0.1]], [[0.2, 0.2]]])
    part = hp.PartResult((1, 1, 0, 0, 1), 1.0, orig, mod)
    cells = part.cells()
    assert cells["orig"] == 100.0 and cells["aug"] == pytest.approx(100 / 3)
    assert cells["brittleness"] == pytest.approx(100 / 3)
    assert cells["mean_original"] == pytest.approx(1 / 3) and cells["mean_negative"] == pytest.approx(0.5 / 3)
    right, scores = part.decisions("swap")
    assert right == {"swap/0": True, "swap/1": False, "swap/2": False}
    assert scores["swap/1"] == pytest.approx([0.4, 0.1, 0.2])  # (c, c_p, c_n), as predictions/ orders them

