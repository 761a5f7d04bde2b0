"""SugarCrepe's audit: every published number against what was recomputed here.

Recomputed from the authors' released files (``papers.sugarcrepe.released``: the GPT-4V row of Table 6, Figure 5's
correlations, Table 2's counts), from the paper's own tables (claims, ``common.audit``), and from this profile's
Table 6 run (``results/sugarcrepe/<profile>/table6.csv``: compared in the full profile, marked "not comparable" in the
mini profile). Stage ``audit`` of ``papers/sugarcrepe/dvc.yaml``: ``python -m papers.sugarcrepe.audit --strict``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from common.audit import audit_stage
from common.audit import main as audit_main
from common.audit.core import Recomputed
from common.audit.runs import table_recomputations
from common.paths import RESULTS
from common.zoo import get_spec
from papers.sugarcrepe import released

DATA_FILES = ("results/published/sugarcrepe.csv", "results/published/sugarcrepe_claims.csv")
"""The published numbers this audit reads (``common.stage_deps``)."""

PAPER = "sugarcrepe"
TABLE6_COLUMNS = {
    "replace_obj": "REPLACE | Object", "replace_att": "REPLACE | Attribute", "replace_rel": "REPLACE | Relation",
    "swap_obj": "SWAP | Object", "swap_att": "SWAP | Attribute", "add_obj": "ADD | Object",
    "add_att": "ADD | Attribute", "average": "Average",
}
"""Table 6 column of each column of the run's table6.csv."""


def table6_row(model: str) -> str:
    """Table 6's row label of a zoo model ("OpenAI | ViT-B-32")."""
    spec = get_spec(model)
    return f"{spec.family} | {spec.label}"


def recompute(profile: str, model_names: Sequence[str] | None = None, results: Path = RESULTS) -> list[Recomputed]:
    """Released-artifact recomputations and this profile's Table 6 run. ``model_names``: the full profile's 17
    models (default: params.yaml ``sugarcrepe.models.full``)."""
    if model_names is None:
        from common.params import load_params, section

        model_names = section(load_params(), "sugarcrepe.models.full")
    table = results / PAPER / profile / "table6.csv"
    run = table_recomputations(PAPER, "Table 6", table, profile, TABLE6_COLUMNS, table6_row, model_names,
                               f"run {table.relative_to(results.parent)}")
    return released.recompute(model_names=model_names) + run


def draw_figures(out_dir: Path, model_names: Sequence[str] | None = None) -> dict[str, Path]:
    """Figure 5 redrawn from the published Table 6 and open_clip's ImageNet results."""
    matches, table6, _ = released.figure5_inputs(model_names=model_names)
    return {"figure5": released.draw_figure5(out_dir / "sugarcrepe_figure5.png", matches, table6)}


def main(argv: Sequence[str] | None = None) -> int:
    from common.params import stage_params

    params = stage_params(audit_stage(PAPER))
    models = params["sugarcrepe"]["models"]["full"]
    return audit_main(PAPER, argv, recompute=lambda profile: recompute(profile, models),
                      figures=lambda out: draw_figures(out, models), profile=params["profile"])


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
