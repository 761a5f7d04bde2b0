"""Adversarial refinement (SugarCrepe, Hsieh et al. 2023, Sec. 4.1 stage 3, Algorithm 1, App. C.3), seeded.

Two blind scorers M1, M2 give each candidate a score gap ``g = M(positive) - M(negative)`` in [-1, 1]. A benchmark
is blind-solvable when those gaps lean positive; refinement subsamples it so that, for each scorer, exactly as many
kept examples have ``g > 0`` as ``g < 0`` (a blind scorer is then at chance), while keeping as many as the pairing
allows. The gap plane is cut into cells and each cell is paired with its mirror image through the origin; a pair
keeps all of its smaller cell and an equal-size random sample of the larger one.

Cells. On the plane, ``|g1|`` and ``|g2|`` are each cut into ``bins`` equal bins over [0, 1] (bin ``k`` is
``[k/bins, (k+1)/bins)``, and ``|g| == 1`` joins the last bin), so with the default ``bins=50`` the plane
[-1, 1]^2 is the paper's 100 x 100 grid. Quadrant (+,+) cell (a, b) pairs with (-,-) cell (a, b); (+,-) with (-,+).
An example with ``g1 == 0`` (and ``g2 != 0``) sits on an axis, in no quadrant: it pairs by the bin of ``|g2|`` among
``axis_bins`` (default 10, the authors' coarser axis grid), the ``g2 > 0`` side against the ``g2 < 0`` side;
likewise ``g2 == 0``. Both gaps zero: kept (it favours neither side).

The authors' binning is the default: ``n_grids = 50`` for the plane (``RAIVNLab/sugar-crepe@0047054b
adversarial_refine.py:6`` "n_grids = 50", used at ``RAIVNLab/sugar-crepe@0047054b adversarial_refine.py:30-31``
"model1_id = int(abs(model1_gap) * n_grids) + 1") and ``n_grids = 10`` reassigned before the two zero-gap axis loops
(``RAIVNLab/sugar-crepe@0047054b adversarial_refine.py:65`` "n_grids = 10"), binned at
``RAIVNLab/sugar-crepe@0047054b adversarial_refine.py:72-74`` "pos_score_to_idx[int(gap * n_grids)].append(i)" and
``RAIVNLab/sugar-crepe@0047054b adversarial_refine.py:90-92`` "neg_score_to_idx[int(-gap * n_grids)].append(i)".
BiVLC's TROHN-Img selection runs a copy of that function with the same two grids
(``IMirandaM/BiVLC@84f0d175 src/Training_data/TROHN_Img/adversarial_refine.py:35`` "n_grids = 50" and
``IMirandaM/BiVLC@84f0d175 src/Training_data/TROHN_Img/adversarial_refine.py:94`` "n_grids = 10"). ``axis_bins=bins``
is the finer, uniform binning this module used before (it keeps fewer axis examples: a pair of axis cells is
narrower).

Why the balance is exact: every pair of cells contributes the same number n of examples from each side, and the two
sides of a pair have opposite signs for every scorer whose gap is nonzero there ((+,+) vs (-,-): n positive and n
negative for g1 and for g2; (+,-) vs (-,+) likewise; a ``g1 == 0`` pair: 2n zeros for g1, n positive and n negative
for g2). Summing over pairs, ``#(g > 0) == #(g < 0)`` for both scorers.

Differences from the authors' released demo (``RAIVNLab/sugar-crepe@0047054b adversarial_refine.py:5``
"def adversarial_refine(model1_score_gap, model2_score_gap):"): it draws from the global, unseeded ``np.random``
(``RAIVNLab/sugar-crepe@0047054b adversarial_refine.py:50`` "np.random.choice(idx, len(op_idx), replace=False)"; here
``np.random.default_rng(seed)``, cells visited in a fixed order, so the kept count and the examples kept for sure are
theirs, the random draws from a larger cell are not); a gap of exactly +-1 has no bin there (bin 51 of 50,
``RAIVNLab/sugar-crepe@0047054b adversarial_refine.py:30`` "int(abs(model1_gap) * n_grids) + 1", a ``KeyError``),
here it joins the last bin.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from common.errors import WorkspaceError

DEFAULT_BINS = 50
"""Bins per half-axis on the plane: 50 on each side of zero is the paper's 100 x 100 grid over [-1, 1]^2
(``RAIVNLab/sugar-crepe@0047054b adversarial_refine.py:6`` "n_grids = 50")."""
DEFAULT_AXIS_BINS = 10
"""Bins of ``|g|`` on each zero-gap axis: the authors reset ``n_grids = 10`` before the axis loops
(``RAIVNLab/sugar-crepe@0047054b adversarial_refine.py:65`` "n_grids = 10"; BiVLC's copy,
``IMirandaM/BiVLC@84f0d175 src/Training_data/TROHN_Img/adversarial_refine.py:94`` "n_grids = 10")."""

# Pair families: which mirror pairing a group of cells belongs to (the first factor of a group id).
_BOTH_SAME_SIGN, _OPPOSITE_SIGNS, _GAP1_ZERO, _GAP2_ZERO = range(4)


class RefineInputError(WorkspaceError, ValueError):
    """Score gaps that refinement cannot place (NaN, outside [-1, 1], mismatched lengths, bad kept indices)."""


def _validated_gaps(gap1: ArrayLike, gap2: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Both gap vectors as 1-D float64 arrays of one length, every value in [-1, 1]; else an error naming the index."""
    gaps = []
    for name, values in (("gap1", gap1), ("gap2", gap2)):
        array = np.asarray(values, dtype=np.float64)
        if array.ndim != 1:
            raise RefineInputError(f"{name}: expected a 1-D sequence of score gaps, got shape {array.shape}")
        bad = np.flatnonzero(~(np.abs(array) <= 1.0))  # NaN fails the comparison too
        if bad.size:
            first = int(bad[0])
            others = f" (and {bad.size - 1} more)" if bad.size > 1 else ""
            raise RefineInputError(f"{name}[{first}] = {float(array[first])!r} is not a score gap in [-1, 1]{others}")
        gaps.append(array)
    if gaps[0].shape != gaps[1].shape:
        raise RefineInputError(f"gap1 has {gaps[0].size} examples but gap2 has {gaps[1].size}")
    return gaps[0], gaps[1]


def _gap_bins(gap: np.ndarray, bins: int) -> np.ndarray:
    """Bin of ``|gap|`` among ``bins`` equal bins of [0, 1]; ``|gap| == 1`` joins the last bin."""
    return np.minimum(np.floor(np.abs(gap) * bins).astype(np.int64), bins - 1)


def refine(gap1: ArrayLike, gap2: ArrayLike, bins: int = DEFAULT_BINS, seed: int = 0,
           axis_bins: int = DEFAULT_AXIS_BINS) -> np.ndarray:
    """Sorted indices (int64) of the examples Algorithm 1 keeps, given each example's two score gaps ``M(positive) -
    M(negative)`` in [-1, 1] (``bins``, ``axis_bins``: the module docstring); the same ``seed``, the same set."""
    g1, g2 = _validated_gaps(gap1, gap2)
    for name, value in (("bins", bins), ("axis_bins", axis_bins)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise RefineInputError(f"{name} must be a positive integer, got {value!r}")
    rng = np.random.default_rng(seed)
    bin1, bin2 = _gap_bins(g1, bins), _gap_bins(g2, bins)

    both_zero = (g1 == 0) & (g2 == 0)
    family = np.select(
        [g1 == 0, g2 == 0, np.sign(g1) == np.sign(g2)],
        [_GAP1_ZERO, _GAP2_ZERO, _BOTH_SAME_SIGN],
        default=_OPPOSITE_SIGNS,
    )
    cell = np.select([family == _GAP1_ZERO, family == _GAP2_ZERO], [_gap_bins(g2, axis_bins), _gap_bins(g1, axis_bins)],
                     default=bin1 * bins + bin2)
    group = family * max(bins, axis_bins) ** 2 + cell
    # The side of its pair an example is on: the sign of g1, or of g2 on the g1 == 0 axis.
    on_positive_side = np.where(family == _GAP1_ZERO, g2 > 0, g1 > 0)

    kept = [np.flatnonzero(both_zero)]
    candidates = np.flatnonzero(~both_zero)
    order = candidates[np.lexsort((candidates, group[candidates]))]  # by group, then by index: a fixed visit order
    _, starts = np.unique(group[order], return_index=True)
    for members in np.split(order, starts[1:]):
        positive, negative = members[on_positive_side[members]], members[~on_positive_side[members]]
        smaller, larger = (positive, negative) if positive.size <= negative.size else (negative, positive)
        if smaller.size == 0:
            continue
        kept.append(smaller)
        kept.append(larger if larger.size == smaller.size else rng.choice(larger, smaller.size, replace=False))
    return np.sort(np.concatenate(kept)).astype(np.int64)


@dataclass(frozen=True)
class SignBreakdown:
    """How one scorer's gaps split by sign over a set of examples; shares are NaN for an empty set."""

    n_positive: int
    n_zero: int
    n_negative: int
    share_positive: float
    share_zero: float
    share_negative: float

    @classmethod
    def of(cls, gaps: np.ndarray) -> SignBreakdown:
        counts = [int(np.sum(gaps > 0)), int(np.sum(gaps == 0)), int(np.sum(gaps < 0))]
        shares = [c / gaps.size if gaps.size else float("nan") for c in counts]
        return cls(*counts, *shares)


@dataclass(frozen=True)
class RefineReport:
    """What refinement did: sizes, and each scorer's gap signs among the kept examples (balanced if it worked)."""

    n_in: int
    n_kept: int
    gap1: SignBreakdown
    gap2: SignBreakdown


def refine_report(gap1: ArrayLike, gap2: ArrayLike, kept: ArrayLike) -> RefineReport:
    """Summarize a kept set (``refine``'s output, or any index subset) of the examples whose gaps are given."""
    g1, g2 = _validated_gaps(gap1, gap2)
    kept_indices = np.asarray(kept)
    if kept_indices.ndim != 1 or (kept_indices.size and not np.issubdtype(kept_indices.dtype, np.integer)):
        raise RefineInputError(f"kept: expected a 1-D sequence of integer indices, got {kept_indices.dtype} "
                               f"of shape {kept_indices.shape}")
    outside = np.flatnonzero((kept_indices < 0) | (kept_indices >= g1.size))
    if outside.size:
        raise RefineInputError(f"kept[{int(outside[0])}] = {int(kept_indices[outside[0]])} is not an index of the "
                               f"{g1.size} examples")
    if np.unique(kept_indices).size != kept_indices.size:
        raise RefineInputError("kept: an index appears more than once")
    kept_indices = kept_indices.astype(np.int64)
    return RefineReport(n_in=int(g1.size), n_kept=int(kept_indices.size),
                        gap1=SignBreakdown.of(g1[kept_indices]), gap2=SignBreakdown.of(g2[kept_indices]))
