"""The mini profile's CC-Neg analog as files: its cells (negation word x K), its prompts, and its reader; a module of
its own, so that the table stage does not depend on the code that renders the sets (``papers.conclip.sets_mini``).
"""
from __future__ import annotations

from pathlib import Path

from common.files.jsonl import read_json
from common.files.tasks import DatasetError, ImageToTextItem
from common.miniworld.negation import MAX_PAIRS, NEGATION_WORDS

KS: tuple[int, ...] = tuple(range(1, MAX_PAIRS + 1))
STANDARD_PROMPT = "this is a photo of {a} {}."
NEGATED_PROMPT = "this is not a photo of {a} {}."
"""The paper's prompts (Sec. 5.1.2: "this is a photo of a {class}", "this is not a photo of a {class}"), as the
authors' README shows them, jaisidhsingh/CoN-CLIP@503388ac README.md:49 "this is not a photo of a dog". The authors'
zero-shot script is not in the release."""
TEST_FIELDS = ("id", "word", "filename", "caption", "negated")
REMEDY = "rebuild the test set: the mini-test-set stage (`python -m papers.conclip.sets_mini set`)"


def group_name(word: str, k: int) -> str:
    return f"{word}/k{k}"


def load_test_items(root: Path) -> list[ImageToTextItem]:
    """The benchmark as (c, c') items grouped by word and K; a bad record names the file and the record."""
    root = Path(root)
    path = root / "manifest.json"
    manifest = read_json(path, dict, REMEDY)
    examples = manifest.get("examples")
    if not isinstance(examples, list) or not examples:
        raise DatasetError(f"{path}: no 'examples' list ({REMEDY})")
    items, seen = [], set()
    for n, record in enumerate(examples):
        where = f"{path}: record {n}"
        if not isinstance(record, dict) or any(not isinstance(record.get(f), str) or not record[f]
                                               for f in TEST_FIELDS):
            raise DatasetError(f"{where}: needs non-empty {list(TEST_FIELDS)}")
        if record["word"] not in NEGATION_WORDS or record.get("k") not in KS:
            raise DatasetError(f"{where}: word {record['word']!r} / k {record.get('k')!r} is not a CC-Neg cell")
        if record["caption"] == record["negated"]:
            raise DatasetError(f"{where}: the negated caption equals the caption")
        if record["id"] in seen:
            raise DatasetError(f"{where}: id {record['id']!r} repeats an earlier record")
        seen.add(record["id"])
        image = root / "images" / record["filename"]
        if not image.is_file():
            raise DatasetError(f"{where}: image {image} is missing")
        items.append(ImageToTextItem(record["id"], group_name(record["word"], record["k"]), image,
                                     (record["caption"], record["negated"]), where))
    return items
