"""Claims of the text recomputed from the paper's own tables (``recompute`` expressions)."""
from __future__ import annotations

from common.audit.core import CLAIM_TABLE, Recomputed
from common.published import CellIndex, evaluate_expression, load_cells, load_claims


def recompute(paper: str) -> list[Recomputed]:
    index = CellIndex(load_cells(paper))
    recs = []
    for claim in load_claims(paper):
        if not claim.recompute:
            continue
        value = evaluate_expression(claim.recompute, index)
        recs.append(Recomputed(paper, CLAIM_TABLE, claim.claim_id, "value", value, claim.unit,
                               f"paper tables: {claim.recompute}", "paper", "claim", note=claim.note))
    return recs
