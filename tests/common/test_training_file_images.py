"""The full profile's training image reader decodes as torchvision's evaluation transform does (``Resize(size,
BICUBIC)`` then ``CenterCrop(size)``), sizes where rounding and truncation differ included."""
from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from common.training.files import FileImages, centre_offset, resized_size

torchvision = pytest.importorskip("torchvision")
from torchvision import transforms  # noqa: E402


@pytest.mark.parametrize("w,h", [(640, 480), (500, 333), (333, 500), (231, 229), (229, 231), (227, 1000), (225, 224)])
def test_the_centre_crop_is_torchvision_s(tmp_path, w, h):
    rng = np.random.default_rng(w * h)
    path = tmp_path / f"{w}x{h}.png"
    Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(path)
    ours = FileImages((path,), 224, workers=1).get(np.array([0]))[0].permute(1, 2, 0).numpy()
    theirs = transforms.Compose([transforms.Resize(224, interpolation=transforms.InterpolationMode.BICUBIC),
                                 transforms.CenterCrop(224)])(Image.open(path).convert("RGB"))
    assert np.array_equal(ours, np.asarray(theirs))


def test_where_the_old_rounding_differed():
    # 500 x 333 at 224: the long side is 336.3..., truncated to 336 (round would give 336 too); 227 x 1000: 986.78
    # truncates to 986 where round gives 987
    assert resized_size(227, 1000, 224) == (224, 986)
    # an odd margin: (231 - 224) / 2 = 3.5 rounds to 4 (half to even), floor division gives 3
    assert centre_offset(231, 224) == 4 and centre_offset(229, 224) == 2
