"""ARO's report (``python -m common report aro``, the root ``dvc.yaml``'s aggregate stage ``papers/aro``): Table 6
(the four benchmarks and the downstream tasks) as reproduced and what each file holds, as data that
``common.reporting.report.print_report`` prints."""
from __future__ import annotations

from common.reporting.report import PaperReport, Table

REPORT = PaperReport(
    title="ARO",
    required="{profile}/table6.csv",
    sections=(Table(path="{profile}/table6.csv", title="Table 6 (CLIP vs CLIP-FT vs NegCLIP)", labels=("task",)),),
    files={
        "{profile}/table2_vg_relation.csv": "Table 2 (VG-Relation per relation)",
        "{profile}/vg_attribution.csv": "VG-Attribution per attribute pair",
        "{profile}/table3_text_shuffle.csv": "Table 3 (text-shuffled retrieval)",
        "{profile}/table4_image_shuffle.csv": "Table 4 (image-shuffled retrieval)",
        "{profile}/table5_order.csv": "Table 5 (Order)",
        "{profile}/table6.csv": "Table 6 (CLIP vs CLIP-FT vs NegCLIP)",
        "{profile}/figure1.png": "Figure 1",
        "{profile}/figure2_shuffled_retrieval.png": "Figure 2 (shuffled retrieval)",
        "{profile}/metrics": "metrics (make metrics PAPER=aro)",
        "{profile}/predictions": "per-example predictions",
        "real_text": "NegCLIP generator vs released",
    },
)
