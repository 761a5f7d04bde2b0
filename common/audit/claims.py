"""Claims of the text recomputed from the paper's own tables (``recompute`` expressions)."""
from __future__ import annotations

from pathlib import Path

from common.audit.core import CLAIM_TABLE, Recomputed
from common.paths import PUBLISHED
from common.reporting.published import (
    CellIndex, ExpressionError, PublishedDataError, evaluate_expression, load_cells, load_claims)


def recompute(paper: str, root: Path = PUBLISHED) -> list[Recomputed]:
    """Every claim of ``paper`` with a ``recompute`` expression, evaluated over its cells (a failure stops the
    audit)."""
    index = CellIndex(load_cells(paper, root))
    path = root / f"{paper}_claims.csv"
    recs = []
    for claim in load_claims(paper, root):
        if not claim.recompute:
            continue
        try:
            value = evaluate_expression(claim.recompute, index)
        except ExpressionError as exc:
            raise PublishedDataError(f"{path}:{claim.line}: column 'recompute' (claim {claim.claim_id!r}): "
                                     f"{exc.reason}; fix the expression or the cells it reads") from None
        recs.append(Recomputed(paper, CLAIM_TABLE, claim.claim_id, "value", value, claim.unit,
                               f"paper tables: {claim.recompute}", "paper", "claim", note=claim.note))
    return recs
