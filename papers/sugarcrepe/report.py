"""SugarCrepe's report (``python -m common report sugarcrepe``, the root ``dvc.yaml``'s aggregate stage
``papers/sugarcrepe``): Table 6 as reproduced and within the seed spread, the blind attacks on real text, the
analyses beyond Table 6 and Figure 5 at scale, as data that ``common.reporting.report.print_report`` prints."""
from __future__ import annotations

from common.benchmarks.caption_negatives import CATEGORIES
from common.reporting.report import Numbers, PaperReport, Table, Tally

REPORT = PaperReport(
    title="SugarCrepe",
    required="{profile}/table6.csv",
    sections=(
        Table(path="{profile}/table6.csv", title="Table 6", labels=("model",), columns=(*CATEGORIES, "average")),
        Tally(path="{profile}/table6_reproduction.csv", title="reproduction", column="within", value="yes",
              what="cells within the seed spread of the committed mini run", profile="mini"),
        Table(path="real_text/blind_accuracy.csv", title="Blind (text-only) accuracy on real benchmark text, "
              "cross-fitted (%, 95% bootstrap interval)", labels=("benchmark", "category", "scorer"),
              columns=("accuracy", "ci_low", "ci_high"), where=("category", ("all (micro)", "5-way")), numbers=True),
        Numbers(path="{profile}/analyses.json", title="Analyses beyond Table 6", grouped=True),
        Numbers(path="recognition/metrics.json", title="Recognition vs compositionality (Figure 5 at scale): Pearson "
                "r over the checkpoints, of ImageNet with SugarCrepe, the 12-benchmark average and ARO; competent: "
                "pre-trained checkpoints with ImageNet >= 50%",
                keys=("checkpoints", "finetuned", "r_imagenet_sugarcrepe_all", "r_imagenet_sugarcrepe_pretrained",
                      "r_imagenet_comp_avg_all", "r_imagenet_aro_all", "r_imagenet_sugarcrepe_competent")),
    ),
    files={
        "{profile}/table6_metrics": "metrics (make metrics PAPER=sugarcrepe)",
        "{profile}/table6.png": "Table 6 plotted (dvc plots show)",
        "{profile}/predictions": "per-example predictions",
        "real_text": "the blind attacks (refinement.csv: Algorithm 1 on the unrefined release; table4.csv)",
        "recognition": "Figure 5 at scale (correlations.csv with 95% bootstrap intervals; scatter.png)",
    },
)
