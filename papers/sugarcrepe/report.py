"""SugarCrepe's report: Table 6 as reproduced, where its files are, and the audit's verdicts.

What ``python -m common report sugarcrepe`` prints, the root ``dvc.yaml``'s aggregate stage
``papers/sugarcrepe`` (this module is the report plug-in of its ``PAPER``).
"""
from __future__ import annotations

from common.errors import WorkspaceError
from common.paths import RESULTS
from common.benchmarks.caption_negatives import CATEGORIES
from common.report import read_summary, read_table

PAPER = "sugarcrepe"


def report(profile: str) -> None:
    """Table 6 as reproduced in ``profile``, and where its files are."""
    out_dir = RESULTS / "sugarcrepe" / profile
    table = out_dir / "table6.csv"
    if not table.is_file():
        raise WorkspaceError(f"{table} does not exist yet: run `dvc repro papers/sugarcrepe`")
    header = ["model", *CATEGORIES, "average"]
    rows = read_table(table, header)
    print(f"SugarCrepe Table 6, {profile} profile" + (" (mini world and tiny CLIPs: not the paper's numbers)" if profile == "mini" else ""))
    print("  ".join(f"{h:>11s}" if i else f"{h:<16s}" for i, h in enumerate(header)))
    for row in rows:
        print("  ".join(f"{row[h]:>11s}" if i else f"{row[h]:<16s}" for i, h in enumerate(header)))
    print(f"table:   {table}")
    print(f"metrics: {out_dir / 'table6_metrics'}/  (make metrics PAPER=sugarcrepe)")
    print(f"plots:   {out_dir / 'table6.png'}, {out_dir / 'table6_plot.csv'}  (dvc plots show)")
    print(f"per-example predictions: {out_dir / 'predictions'}")
    check = out_dir / "table6_reproduction.csv"
    if profile == "mini" and check.is_file():
        verdicts = [r["within"] for r in read_table(check, ("within",))]
        print(f"reproduction: {verdicts.count('yes')}/{len(verdicts)} cells within the seed spread of the committed "
              f"mini run ({check})")
    report_blind()
    report_analyses(profile)
    report_recognition()


def report_blind() -> None:
    """The blind attacks on real text (profile-independent), one line per benchmark."""
    table = RESULTS / "sugarcrepe" / "real_text" / "blind_accuracy.csv"
    if not table.is_file():
        return
    rows = [r for r in read_table(table, ("benchmark", "category", "scorer"), numbers=("accuracy", "ci_low", "ci_high"))
            if r["category"] in ("all (micro)", "5-way")]
    print("Blind (text-only) accuracy on real benchmark text, cross-fitted (%, 95% bootstrap interval):")
    for r in rows:
        print(f"  {r['benchmark']:<21s} {r['category']:<12s} {r['scorer']:<16s} {float(r['accuracy']):6.2f} "
              f"[{float(r['ci_low']):.2f}, {float(r['ci_high']):.2f}]")
    print(f"tables:  {table.parent}/  (refinement.csv: Algorithm 1 on the unrefined release; table4.csv)")


RECOGNITION_NUMBERS = ("r_imagenet_sugarcrepe_all", "r_imagenet_sugarcrepe_pretrained", "r_imagenet_comp_avg_all",
                       "r_imagenet_aro_all", "r_imagenet_sugarcrepe_competent")
"""The correlations ``report_recognition`` prints (formatted as numbers)."""


def report_recognition() -> None:
    """Figure 5 at scale (profile-independent): the headline correlations over Oh et al.'s checkpoints."""
    metrics = RESULTS / "sugarcrepe" / "recognition" / "metrics.json"
    if not metrics.is_file():
        return
    m = read_summary(metrics, keys=("checkpoints", "finetuned"), numbers=RECOGNITION_NUMBERS)
    print(f"Recognition vs compositionality over {m['checkpoints']} checkpoints ({m['finetuned']} compositionality "
          f"fine-tunes): Pearson r, ImageNet vs SugarCrepe {m['r_imagenet_sugarcrepe_all']:.2f} (pre-trained only "
          f"{m['r_imagenet_sugarcrepe_pretrained']:.2f}), vs the 12-benchmark average {m['r_imagenet_comp_avg_all']:.2f}, "
          f"vs ARO {m['r_imagenet_aro_all']:.2f}; SugarCrepe over pre-trained checkpoints with ImageNet >= 50% "
          f"{m['r_imagenet_sugarcrepe_competent']:.2f}")
    print(f"tables:  {metrics.parent}/  (correlations.csv with 95% bootstrap intervals; scatter.png)")


def report_analyses(profile: str) -> None:
    """The profile's analyses beyond Table 6 (``analyses.json``: their DVC metrics), one line per number."""
    path = RESULTS / "sugarcrepe" / profile / "analyses.json"
    if not path.is_file():
        return
    analyses = read_summary(path, objects=True)
    print(f"Analyses beyond Table 6 ({profile} profile; {path}):")
    for source, metrics in analyses.items():
        print(f"  {source}")
        for name, value in metrics.items():
            print(f"    {name:<44s} {value}")
