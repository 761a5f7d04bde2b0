"""CC-Neg's loader on a tiny file in the layout it reads (``ccneg_preprocessed.pt``: image_paths, annotations, as the
authors' loaders read them, and num_ops), written here with ``torch.save``: the evaluation split (the file's last
entries, as jaisidhsingh/CoN-CLIP@503388ac src/data/evaluation_datasets.py:21 "self.image_paths[-self.split_size:]"),
K by the num_ops rule and negation words by the space-delimited rule on the raw negated caption (both not in the
authors' release: ``papers.conclip.ccneg``), the weights_only refusal, and errors naming file and entry."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from common.files.tasks import DatasetError
from papers.conclip import ccneg

AUTHORS_ROOT = "/workspace/datasets/ccneg/cc3m_subset_images_extracted_final"
"""A stand-in for where the authors' image_paths point (absolute paths on their machine)."""

# (caption, raw negated caption) per entry; entries 0-3 are the fine-tuning part, 4-11 the evaluation split (size 8).
ANNOTATIONS: list[tuple[str, str]] = [
    ("a dog on grass", "a dog not on grass"),
    ("a cup of tea", "a cup without tea"),
    ("a red car", "no red car"),
    ("a tall tree", "a tree that is not tall"),
    ("a dog with a ball", "a dog with no ball"),                  # 4: no
    ("a man wearing a hat", "a man not wearing a hat"),           # 5: not
    ("a room with windows", "a room without windows"),            # 6: without
    ("a bowl no spoon", "a bowl, no spoon"),                      # 7: no; c' without its comma == c (a tie)
    ("a cat with a toy", "no, a cat without a toy"),              # 8: "no," is not "no": without only
    ("a red car with wheels", "a car with no wheels and not red"),  # 9: no and not
    ("No dogs in the park", "No dogs, a park without dogs"),      # 10: "No" is not "no" (case): without
    ("a street with cars", "a street with signs, not cars"),      # 11: not; commas removed from c'
]
EVAL_SIZE = 8
NUM_OPS = {1: [0, 4, 5, 9], 2: torch.tensor([1, 6, 7]), 3: [8], 5: [2, 11]}
"""Entry 10 is under no K; entry 3 under none either (outside the split anyway)."""
EXPECTED_K = {4: 1, 5: 1, 6: 2, 7: 2, 8: 3, 9: 1, 10: None, 11: 5}
EXPECTED_WORDS = {4: {"no"}, 5: {"not"}, 6: {"without"}, 7: {"no"}, 8: {"without"}, 9: {"no", "not"},
                  10: {"without"}, 11: {"not"}}


def image_name(index: int) -> str:
    return f"{index:09d}.jpg"


def write_ccneg(root: Path, annotations=ANNOTATIONS, num_ops=NUM_OPS, images: bool = True,
                extra: dict | None = None) -> tuple[Path, Path]:
    """A tiny ``ccneg_preprocessed.pt`` and its image folder (JPEGs for every entry); returns (file, folder)."""
    root.mkdir(parents=True, exist_ok=True)
    folder = root / "ccneg_images" / ccneg.IMAGES_SUBFOLDER
    folder.mkdir(parents=True, exist_ok=True)
    if images:
        for i in range(len(annotations)):
            pixels = np.random.default_rng(i).integers(0, 256, (24, 24, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(folder / image_name(i))
    data = {
        "image_paths": [f"{AUTHORS_ROOT}/{image_name(i)}" for i in range(len(annotations))],
        "annotations": [{"json": {"caption": c, "key": f"{i:09d}"}, "sop_data": {"negative-prompt": n}}
                        for i, (c, n) in enumerate(annotations)],
        "num_ops": num_ops,
        **(extra or {}),
    }
    path = root / "ccneg_preprocessed.pt"
    torch.save(data, path)
    return path, folder


@pytest.fixture
def tiny(tmp_path) -> tuple[Path, Path]:
    return write_ccneg(tmp_path / "ccneg")


def test_the_evaluation_split_is_the_last_entries_with_authors_captions(tiny):
    path, folder = tiny
    data = ccneg.load_ccneg(path, folder, eval_size=EVAL_SIZE)
    assert data.n_entries == 12 and data.first_index == 4 and len(data.items) == EVAL_SIZE
    assert [e.index for e in data.entries] == list(range(4, 12))
    for e in data.entries:
        caption, negated = ANNOTATIONS[e.index]
        assert e.item.item_id == str(e.index) and e.item.group == "all"
        assert e.item.captions == (caption, negated.replace(",", ""))
        assert e.item.image == folder / image_name(e.index)
        assert str(path) in e.item.origin and f"entry {e.index}" in e.item.origin
    assert data.entries[7].item.captions[1] == "a street with signs not cars"
    assert data.entries[3].item.captions[0] == data.entries[3].item.captions[1]  # entry 7: the same text twice
    import hashlib

    assert data.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_k_from_num_ops_and_words_by_the_space_delimited_rule(tiny):
    data = ccneg.load_ccneg(*tiny, eval_size=EVAL_SIZE)
    assert {e.index: e.k for e in data.entries} == EXPECTED_K
    assert {e.index: set(e.words) for e in data.entries} == EXPECTED_WORDS
    assert data.ks == (1, 2, 3, 5) and data.table_ks == (1, 2, 3, 4, 5)
    assert data.k_cut == {1: 0, 2: 0, 3: 0, 5: 0}
    sizes = {(w, int(k)): cell["n"] for w, cells in data.split_sizes().items() for k, cell in cells.items()}
    assert sizes[("no", 1)] == 2 and sizes[("not", 1)] == 2 and sizes[("no", 2)] == 1  # entry 9 in both words
    assert sizes[("without", 2)] == 1 and sizes[("without", 3)] == 1 and sizes[("not", 5)] == 1
    assert sum(sizes.values()) == 8  # 8 word memberships of entries with a K (entry 10 has none)
    split = data.split_sizes()
    assert split["not"]["1"] == {"n": 2, "paper": 11910, "difference": 2 - 11910}
    assert split["no"]["4"] == {"n": 0, "paper": 28, "difference": -28}
    counts = data.counts()
    assert counts["without_k"] == 1 and counts["in_several_words"] == 1 and counts["without_word"] == 0
    assert counts["by_word"] == {"no": 3, "not": 3, "without": 3} and counts["eval_indices"] == [4, 11]


def test_entry_words_rule():
    assert ccneg.entry_words("no, not this") == {"not"}
    assert ccneg.entry_words("nothing without nobody") == {"without"}
    assert ccneg.entry_words("Not now") == frozenset()
    assert ccneg.entry_words("no") == {"no"}  # padded with spaces at both ends


def test_paper_split_sizes_match_the_mini_profiles_weights():
    from papers.conclip.benchmark_mini import KS
    from papers.conclip.sets_mini import CCNEG_SPLIT_SIZES

    assert ccneg.KS == KS
    assert ccneg.PAPER_SPLIT_SIZES == {w: dict(zip(KS, sizes)) for w, sizes in CCNEG_SPLIT_SIZES.items()}
    assert sum(sum(v.values()) for v in ccneg.PAPER_SPLIT_SIZES.values()) <= ccneg.EVAL_SIZE


def test_the_last_m_cut_of_an_unsorted_num_ops_list(tmp_path):
    """M = min(eval_size, len(list)); only the list's last M indices are kept: an unsorted list can lose some."""
    path, folder = write_ccneg(tmp_path / "c", num_ops={1: [11, 0, 1], 2: [10]})
    data = ccneg.load_ccneg(path, folder, eval_size=2)
    assert {e.index: e.k for e in data.entries} == {10: 2, 11: None}
    assert data.k_cut == {1: 1, 2: 0}


class NotATensor:
    """Something torch.load(weights_only=True) must refuse to build."""


def test_a_pickle_of_arbitrary_objects_is_refused(tmp_path):
    path = tmp_path / "ccneg_preprocessed.pt"
    torch.save({"image_paths": ["a.jpg"], "annotations": [NotATensor()], "num_ops": {}}, path)
    with pytest.raises(DatasetError, match="weights_only=True") as exc:
        ccneg.load_ccneg(path, tmp_path, eval_size=1)
    assert str(path) in str(exc.value) and "more than containers" in str(exc.value)


def test_not_a_torch_file(tmp_path):
    path = tmp_path / "ccneg_preprocessed.pt"
    path.write_text("not a torch file")
    with pytest.raises(DatasetError, match="weights_only=True") as exc:
        ccneg.load_ccneg(path, tmp_path, eval_size=1)
    assert str(path) in str(exc.value)


def test_missing_file_names_the_fetch(tmp_path):
    with pytest.raises(DatasetError, match="conclip/ccneg/ccneg_preprocessed.pt"):
        ccneg.load_ccneg(tmp_path / "none.pt", tmp_path)


def test_missing_key_names_file_and_key(tmp_path):
    path = tmp_path / "ccneg_preprocessed.pt"
    torch.save({"image_paths": [], "annotations": []}, path)
    with pytest.raises(DatasetError, match="'num_ops'") as exc:
        ccneg.load_ccneg(path, tmp_path, eval_size=1)
    assert str(path) in str(exc.value)


def test_too_few_entries_for_the_split(tiny):
    with pytest.raises(DatasetError, match="12 entries, fewer than the evaluation split's 40000"):
        ccneg.load_ccneg(*tiny)


def test_bad_records_are_all_named_by_file_and_index(tmp_path):
    bad = list(ANNOTATIONS)
    path, folder = write_ccneg(tmp_path / "c", annotations=bad)
    data = torch.load(path, weights_only=True)
    del data["annotations"][9]["sop_data"]
    data["annotations"][5]["json"]["caption"] = 3
    data["annotations"][2]["json"] = {}  # outside the split: not read
    torch.save(data, path)
    (folder / image_name(6)).unlink()
    with pytest.raises(DatasetError) as exc:
        ccneg.load_ccneg(path, folder, eval_size=EVAL_SIZE)
    message = str(exc.value)
    assert message.startswith(f"{path}: 3 bad entries")
    assert f"{path}: entry 9: annotations[9]['sop_data']['negative-prompt'] is missing" in message
    assert "entry 5: annotations[5]['json']['caption'] is a int" in message
    assert f"entry 6: image '{AUTHORS_ROOT}/{image_name(6)}' not found as {folder / image_name(6)}" in message
    assert "entry 2" not in message


def test_inconsistent_lists_and_num_ops(tmp_path):
    path, folder = write_ccneg(tmp_path / "a", num_ops={1: [4], 2: [4]})
    with pytest.raises(DatasetError, match=r"entry 4 is listed under num_ops\[1\] and num_ops\[2\]"):
        ccneg.load_ccneg(path, folder, eval_size=EVAL_SIZE)
    path, folder = write_ccneg(tmp_path / "b", num_ops={"two": [4]})
    with pytest.raises(DatasetError, match="num_ops key 'two'"):
        ccneg.load_ccneg(path, folder, eval_size=EVAL_SIZE)
    path, folder = write_ccneg(tmp_path / "c", num_ops={1: [40]})
    with pytest.raises(DatasetError, match=r"num_ops\[1\] lists entry 40, outside the file's 12 entries"):
        ccneg.load_ccneg(path, folder, eval_size=EVAL_SIZE)
    path, folder = write_ccneg(tmp_path / "d", extra={"image_paths": ["x.jpg"] * 11})
    with pytest.raises(DatasetError, match="11 image_paths but 12 annotations") as exc:
        ccneg.load_ccneg(path, folder, eval_size=EVAL_SIZE)
    assert str(path) in str(exc.value)


def test_missing_image_folder(tmp_path):
    path, folder = write_ccneg(tmp_path / "c", images=False)
    with pytest.raises(DatasetError, match="conclip/ccneg/ccneg_images"):
        ccneg.load_ccneg(path, tmp_path / "nowhere", eval_size=EVAL_SIZE)


def test_default_paths_come_from_the_registry(tmp_path, monkeypatch):
    """Both entries are manual: the data root's copies are used once in place (trusted on first use)."""
    from common.paths import data_root

    path, folder = write_ccneg(data_root() / "ccneg")
    assert folder == data_root() / "ccneg" / "ccneg_images" / ccneg.IMAGES_SUBFOLDER
    found = ccneg.default_paths()
    assert found == (path, folder)
