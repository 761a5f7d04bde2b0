"""``GridShuffle`` against ARO's own image shuffles, re-implemented here from their unfold/fold code
(``mertyg/vision-language-models-are-bows@81fdd20d dataset_zoo/perturbations.py:137-194`` "def shuffle_rows(x,
n_rows=7):", ``shuffle_columns`` and ``shuffle_patches`` after it): the same pixels, bit for bit, including the
border their ``fold`` leaves at zero when the side is not a multiple of the grid."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as nnf

from common.files.image_transforms import GridShuffle


def aro_shuffle(x: torch.Tensor, kind: str, n: int, perm: torch.Tensor) -> torch.Tensor:
    """ARO's ``shuffle_rows`` (:137-154), ``shuffle_columns`` (:157-173) or ``shuffle_patches`` (:177-194) on one
    (C, H, W) tensor, with their ``torch.randperm`` replaced by ``perm``."""
    x = x.unsqueeze(dim=0)  # _handle_image_4shuffle (:129-131)
    if kind == "rows":
        patch_size = x.shape[-2] // n
        kernel, stride = (patch_size, x.shape[-1]), patch_size
    elif kind == "cols":
        patch_size = x.shape[-1] // n
        kernel, stride = (x.shape[-2], patch_size), patch_size
    else:
        patch_size_x, patch_size_y = x.shape[-2] // n, x.shape[-1] // n
        kernel, stride = (patch_size_x, patch_size_y), (patch_size_x, patch_size_y)
    u = nnf.unfold(x, kernel_size=kernel, stride=stride, padding=0)
    pu = torch.cat([b_[:, perm][None, ...] for b_ in u], dim=0)
    f = nnf.fold(pu, x.shape[-2:], kernel_size=kernel, stride=stride, padding=0)
    return f.squeeze()


def cells(t: torch.Tensor, rows: int, cols: int) -> list[torch.Tensor]:
    h, w = t.shape[1] // rows, t.shape[2] // cols
    return [t[:, r * h:(r + 1) * h, c * w:(c + 1) * w] for r in range(rows) for c in range(cols)]


@pytest.mark.parametrize("size", [(224, 224), (50, 47)])
@pytest.mark.parametrize("kind,n,rows,cols", [("rows", 4, 4, 1), ("cols", 4, 1, 4), ("patches", 3, 3, 3)])
def test_grid_shuffle_is_aros_fold_exactly(size, kind, n, rows, cols):
    image = torch.randn(3, *size, generator=torch.Generator().manual_seed(7))
    ours = GridShuffle(rows, cols, seed=0)(image, "d" * 64)
    # which input cell each output cell holds (the cells of a random image are all distinct)
    before, after = cells(image, rows, cols), cells(ours, rows, cols)
    perm = torch.tensor([next(i for i, c in enumerate(before) if torch.equal(c, a)) for a in after])
    assert sorted(perm.tolist()) == list(range(rows * cols)) and perm.tolist() != list(range(rows * cols))
    assert torch.equal(ours, aro_shuffle(image, kind, n, perm))


def test_uncovered_border_is_zero_and_named_in_the_identity():
    """224 = 3 x 74 + 2: the last two rows and columns are outside every 3 x 3 patch, zero as after ARO's fold."""
    image = torch.rand(3, 224, 224) + 1.0
    out = GridShuffle(3, 3, seed=0)(image, "e" * 64)
    assert torch.count_nonzero(out[:, 222:, :]) == 0 and torch.count_nonzero(out[:, :, 222:]) == 0
    assert torch.count_nonzero(out[:, :222, :222]) == 3 * 222 * 222
    assert "border=zero" in GridShuffle(3, 3).identity  # embeddings of the old transform are cached apart
