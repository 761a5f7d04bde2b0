"""Kamath et al. (hard positives), Tables 1-3 and Figure 3 in the mini profile: the base model and every fine-tune of
``papers.hard_positives.train_mini`` scored on the rendered benchmark (``papers.hard_positives.sets_mini``).

The base ("CLIP ViT-B/32": ``mini/xs-32k``) and every run, scored once each as ``evaluation.py`` scores them (strict
comparisons, ties reported). Outputs in ``results/hard_positives/mini/``: ``table1.csv``, ``table2.csv``,
``table3.csv``, ``groups.csv`` (every cell and count per group), ``comparisons.json`` (the paper's comparisons with
paired-bootstrap 95% intervals and whether each shows), ``summary.json`` (DVC metrics: twelve of them), Figure 3's
examples (``figure3.csv``, ``figure3_counts.csv``; ``papers.hard_positives.figure3``) and ``context.json``.

A module of its own (stage ``table1-mini``: ``python -m papers.hard_positives.tables_mini``), so that the runs are
not retrained when the tables change.
"""
from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Mapping, Sequence

from common.io import output_group, sha256_file, staged_to_final, write_csv_atomic
from common.jsonl import read_json
from common.tasks import ImageToTextItem
from common.training.records import training_context
from common.zoo.trained import served
from papers.hard_positives import evaluation, figure3
from papers.hard_positives.runs import RUNS
from papers.hard_positives.sets_mini import load_test_items
from papers.hard_positives.tables import (
    TABLE1_RUNS, ModelEntry, Scored, model_rows, run_entries, summary, write_tables)


def entries_for(base: str, models_dir: Path) -> list[ModelEntry]:
    """The base model, then every run."""
    return [ModelEntry(base, f"CLIP ({base}, the mini family's ViT-B/32)"),
            *run_entries("hard_positives/mini", models_dir)]


def score_models(entries: Sequence[ModelEntry], arch: str, items: Sequence[ImageToTextItem], engine_config=None,
                 device: str = "cpu") -> list[Scored]:
    from common.engine import Engine

    return [Scored(e.run or "base", e.name, e.label,
                   evaluation.evaluate(Engine(served(e, arch, device), engine_config), items)) for e in entries]


def evaluate_tables(entries: Sequence[ModelEntry], arch: str, test_dir: Path, out_dir: Path, engine_config=None,
                    device: str = "cpu", context: Mapping | None = None) -> dict[str, Path]:
    """Score every model on the benchmark and write the tables, summary and context as one output group."""
    items = load_test_items(Path(test_dir))
    scored = score_models(entries, arch, items, engine_config, device)
    results = {s.row: s.result for s in scored}
    rows = model_rows(scored)
    groups = [row for s in scored for row in evaluation.group_rows(s.model, evaluation.group_cells(s.result))]
    metrics = summary(rows, results)
    full_context = {
        **dict(context or {}), "rule": "strict comparisons (evaluation.py); ties are neither correct nor brittle",
        "n": dict(sorted(Counter(it.group for it in items).items())),
        "models": {e.name: {"run": e.run, "label": e.label, "fingerprint": results[e.run or "base"].fingerprint,
                            "checkpoint_sha256": sha256_file(e.checkpoint) if e.checkpoint else None,
                            "ties": results[e.run or "base"].ties,
                            **({"hard_positive_weight": RUNS[e.run].hard_positive_weight,
                                "hard_negative_weight": RUNS[e.run].hard_negative_weight,
                                "types": list(RUNS[e.run].types)} if e.run else {})} for e in entries},
    }
    examples, counts = figure3.select({m: results[row] for m, row in figure3.MODELS.items()}, items)
    out_dir = Path(out_dir)
    with output_group(out_dir) as staging:
        paths = write_tables(staging, rows, groups, metrics, full_context, ("base", *TABLE1_RUNS))
        paths["figure3"] = write_csv_atomic(staging / "figure3.csv", examples, figure3.FIELDS)
        paths["figure3_counts"] = write_csv_atomic(staging / "figure3_counts.csv", counts, figure3.COUNT_FIELDS)
    return {k: staged_to_final(p, staging, out_dir) for k, p in paths.items()}


def _cmd_tables(args) -> int:
    from common import reproducible
    from common.evaluate import engine_config
    from common.params import own_section
    from common.paths import RESULTS, build_dir
    from common.zoo import get_spec

    reproducible.reexec_pinned()
    reproducible.fix_threads()
    params, section = own_section("hard_positives.mini")
    root = build_dir("mini", "hard_positives")
    models_dir = Path(args.models or root / "models")
    test_dir = Path(args.test or root / "test")
    set_dir = Path(args.set or root / "finetune")
    entries = entries_for(section["base"], models_dir)
    trained = [e for e in entries if e.checkpoint is not None]
    context = {
        "profile": "mini", "base": section["base"], **reproducible.describe(),
        "test_set": {k: v for k, v in read_json(test_dir / "manifest.json", remedy="run the mini-test-set stage")
                     .items() if k != "examples"},
        "finetune_set": read_json(set_dir / "manifest.json", remedy="run the mini-finetune-set stage"),
        "training": training_context({e.name: e.checkpoint for e in trained},
                                     remedies={e.name: f"run the mini-finetune@{e.run} stage" for e in trained}),
        "ratio": "Table 3's ratio is the hard-negative loss weight with the hard-positive weight fixed at 1 (the "
                 "paper's Sec. 4.3), not a share of rows",
        "note": "mini profile: mini/xs-32k fine-tuned on rendered scenes; not comparable to the paper's numbers",
    }
    paths = evaluate_tables(entries, get_spec(section["base"]).arch, test_dir, RESULTS / "hard_positives" / "mini",
                            engine_config(params), context=context)
    for name, path in paths.items():
        print(f"{name}: {path}")
    print(paths["table1"].read_text(), paths["table3"].read_text(), sep="\n")
    print(json.dumps(json.loads(paths["summary"].read_text()), indent=2))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m papers.hard_positives.tables_mini",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=None, help="default: build/mini/hard_positives/models")
    parser.add_argument("--test", default=None, help="default: build/mini/hard_positives/test")
    parser.add_argument("--set", default=None, help="default: build/mini/hard_positives/finetune (its manifest)")
    return _cmd_tables(parser.parse_args(argv))


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
