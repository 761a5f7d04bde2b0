"""CC-Neg's evaluation split (Singh et al., Sec. 3, 5.1; Tables 2-3, 7-9) read from the released
``ccneg_preprocessed.pt`` and its image folder, as (c, c') items for ``common.evaluation.scoring.selection``.

What the authors' released code reads (jaisidhsingh/CoN-CLIP's ``CCNegEvalDataset`` and the README's evaluation
snippet), reproduced here, and what this reader adds where the release says nothing:

* the file is a dict of ``image_paths`` (one per entry) and ``annotations``,
  jaisidhsingh/CoN-CLIP@503388ac src/data/evaluation_datasets.py:18-19 "self.annotations = data[", with the caption
  and the negated caption of each entry, jaisidhsingh/CoN-CLIP@503388ac src/data/evaluation_datasets.py:39
  "caption = annos[" and jaisidhsingh/CoN-CLIP@503388ac src/data/evaluation_datasets.py:41
  "negative_prompt = annos[" (the keys ``["json"]["caption"]`` and ``["sop_data"]["negative-prompt"]``), whose commas
  are removed before the negated caption is encoded: jaisidhsingh/CoN-CLIP@503388ac
  src/data/evaluation_datasets.py:42 "negative_prompt = negative_prompt.replace(";
* the evaluation split is the file's LAST ``eval_size`` entries: jaisidhsingh/CoN-CLIP@503388ac
  src/data/evaluation_datasets.py:21 "self.image_paths = self.image_paths[-self.split_size:]" with
  jaisidhsingh/CoN-CLIP@503388ac src/configs/__init__.py:11 "configs.num_ccneg_eval_samples = 40000" (the first
  188,246 are CoN-CLIP's fine-tuning data, the paper's Sec. 4.1: "hold out the remaining");
* K: the file is also read for a third key, ``num_ops`` (K -> the indices of the entries whose caption has K
  predicate-object pairs), and a K subset is ``[i for i in num_ops[K][-M:] if N - eval_size <= i < N]`` with ``M =
  min(eval_size, len(num_ops[K]))``: the last M indices listed, those in the split (with ascending lists every
  listed index of the split; otherwise the cut can drop some, and ``CCNegSet.k_cut`` counts them). Not in the
  release: no released file reads ``num_ops`` or groups the split by K; the paper's rule is Tables 7-12's captions,
  "Scores are calculated over subset splits with the same number of predicate-object pairs". The audit's rows of
  Tables 7-12 say "rule unverified";
* negation word: an entry belongs to word w when ``" " + w + " "`` occurs in ``" " + negative_prompt + " "``, on the
  RAW negated caption (commas still there, case kept): "no, ..." is not a "no" entry, and an entry can belong to
  several words (Tables 7-9 then count it in each). Not in the release: no released file groups the split by word;
  the paper's rule is Table 7's caption, "Model Accuracies over CC-Neg evaluation subset samples that use", then the
  word (the audit's rows of Tables 7-12 say "rule unverified").

The file is a pickle, read only with ``torch.load(path, weights_only=True)`` (``load_pickle``); ``image_paths`` (on
the authors' machine) are resolved by file name under the image folder; a cap shortens the split (``eval_size_for``).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Mapping, Sequence

from common.files.io import sha256_file
from common.files.tasks import DatasetError, ImageToTextItem, raise_problems, resolve_under
from common.pipeline.inputs import full_inputs
from common.registry.fetch import fetch
from papers.conclip.data_paths import CCNEG_IMAGES_SUBFOLDER as IMAGES_SUBFOLDER

EVAL_SIZE = 40_000
"""``configs.num_ccneg_eval_samples``: the evaluation split is the file's last 40,000 entries (Sec. 4: 188,246
fine-tuning triplets, 40,000 held out)."""
DATA_KEY = "conclip/ccneg/ccneg_preprocessed.pt"
IMAGES_KEY = "conclip/ccneg/ccneg_images"
NEGATION_WORDS: tuple[str, ...] = ("no", "not", "without")
"""The negation words of Tables 7-9 (Sec. 3.1: {not, no, without}), in the tables' order."""
KS: tuple[int, ...] = (1, 2, 3, 4, 5)
"""The numbers of predicate-object pairs of Tables 7-9's columns (Fig. 4: K = 1..5)."""
PAPER_SPLIT_SIZES: dict[str, dict[int, int]] = {
    "no": {1: 166, 2: 160, 3: 75, 4: 28, 5: 8},
    "not": {1: 11910, 2: 10081, 3: 3047, 4: 722, 5: 188},
    "without": {1: 4850, 2: 5466, 3: 2328, 4: 680, 5: 203},
}
"""Tables 7-9's split sizes, by negation word and K (not imported from the mini profile: its code is no dependency)."""


@dataclass(frozen=True)
class CCNegEntry:
    """One evaluation entry: its item (candidate 0 the caption c, candidate 1 the negated caption c' without commas),
    its K (None when no ``num_ops`` list holds it) and the negation words its raw negated caption uses."""

    index: int
    """The entry's index in the file (what ``num_ops`` lists)."""
    item: ImageToTextItem
    k: int | None
    words: frozenset[str]


@dataclass(frozen=True)
class CCNegSet:
    """The evaluation split as read, with what the tables and ``context.json`` need to describe it."""

    path: Path
    sha256: str
    images_dir: Path
    n_entries: int
    eval_size: int
    entries: tuple[CCNegEntry, ...]
    ks: tuple[int, ...]
    """Every K that ``num_ops`` lists, ascending."""
    k_cut: dict[int, int]
    """Per K: indices of the split that ``num_ops[K]`` lists but the ``[-M:]`` cut (module docstring: not in the
    release) leaves out (0 when the lists are ascending)."""

    @property
    def items(self) -> list[ImageToTextItem]:
        return [e.item for e in self.entries]

    @property
    def first_index(self) -> int:
        return self.n_entries - self.eval_size

    @property
    def table_ks(self) -> tuple[int, ...]:
        """Tables 7-9's Ks and any other K the file lists."""
        return tuple(sorted(set(KS) | set(self.ks)))

    def split_sizes(self) -> dict[str, dict[str, dict[str, int | None]]]:
        """Per word and K, zeros included: the entries in that cell beside Tables 7-9's split size."""
        n = Counter((w, e.k) for e in self.entries if e.k is not None for w in e.words)
        paper = PAPER_SPLIT_SIZES
        return {w: {str(k): {"n": n[w, k], "paper": paper[w].get(k),
                             "difference": None if k not in paper[w] else n[w, k] - paper[w][k]}
                    for k in self.table_ks} for w in NEGATION_WORDS}

    def counts(self) -> dict[str, Any]:
        return {
            "entries_in_file": self.n_entries, "eval_size": self.eval_size,
            "eval_indices": [self.first_index, self.n_entries - 1],
            "items": len(self.entries),
            "by_k": {str(k): sum(e.k == k for e in self.entries) for k in self.ks},
            "without_k": sum(e.k is None for e in self.entries),
            "by_word": {w: sum(w in e.words for e in self.entries) for w in NEGATION_WORDS},
            "without_word": sum(not e.words for e in self.entries),
            "in_several_words": sum(len(e.words) > 1 for e in self.entries),
            "k_cut": {str(k): n for k, n in self.k_cut.items()},
        }


def eval_size_for(params: Mapping[str, Any]) -> int:
    """``EVAL_SIZE``, or ``full_inputs.cap`` when there is one: every stage that splits the file reads it alike, so the
    training split is the same everywhere."""
    cap = full_inputs(params).cap
    return EVAL_SIZE if cap is None else cap


def entry_words(negative_prompt: str) -> frozenset[str]:
    """The negation words of a raw negated caption, by the rule of the module docstring (not in the release)."""
    padded = f" {negative_prompt} "
    return frozenset(w for w in NEGATION_WORDS if f" {w} " in padded)


def default_paths(pt_path: str | None = None, images: str | None = None) -> tuple[Path, Path]:
    """(the .pt file, the image folder): the ones given, else the download registry's (manual downloads)."""
    if pt_path and images:
        return Path(pt_path), Path(images)
    found = fetch(DATA_KEY, progress=False), fetch(IMAGES_KEY, progress=False) / IMAGES_SUBFOLDER
    return Path(pt_path) if pt_path else found[0], Path(images) if images else found[1]


def load_pickle(path: Path, key: str, holds: str, what: str, missing: type[Exception] = DatasetError) -> Any:
    """A released pickle read with ``torch.load(weights_only=True)`` only (CC-Neg's file, the distractor mapping)."""
    # deferred: loads torch only when called
    import torch

    if not path.is_file():
        raise missing(f"{path}: no such file; fetch it with `python -m common fetch {key}` (a manual "
                      "download: its instructions say where to get it)")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch's UnpicklingError for a refused type, a zip or EOF error for a broken file
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DatasetError(
            f"{path}: refused by torch.load(weights_only=True): the file holds more than {holds}, or is not a torch "
            f"file ({first}); {what} is a pickle and is never unpickled in full here") from None


def load_pt(path: Path) -> Mapping[str, Any]:
    data = load_pickle(path, DATA_KEY, "containers, strings, numbers and tensors", "CC-Neg's file")
    if not isinstance(data, Mapping):
        raise DatasetError(f"{path}: expected a dict with image_paths, annotations and num_ops, got "
                           f"{type(data).__name__}")
    missing = [k for k in ("image_paths", "annotations", "num_ops") if k not in data]
    if missing:
        raise DatasetError(f"{path}: no {', '.join(repr(k) for k in missing)} (keys: {sorted(map(str, data))})")
    return data


def _k_of(num_ops: Any, path: Path, n_entries: int, eval_size: int) -> tuple[dict[int, int], dict[int, int], list[int]]:
    """(split index -> K, K -> indices cut by the ``[-M:]``, the Ks), by the module docstring's rule."""
    # deferred: loads torch only when called
    import torch

    if not isinstance(num_ops, Mapping):
        raise DatasetError(f"{path}: num_ops is a {type(num_ops).__name__}, not a dict K -> indices")
    first = n_entries - eval_size
    k_of: dict[int, int] = {}
    cut: dict[int, int] = {}
    ks: list[int] = []
    for key, values in num_ops.items():
        try:
            k = int(key)
        except (TypeError, ValueError):
            raise DatasetError(f"{path}: num_ops key {key!r} is not a number of predicate-object pairs") from None
        if isinstance(values, torch.Tensor):
            values = values.reshape(-1).tolist()
        if not isinstance(values, (list, tuple)):
            raise DatasetError(f"{path}: num_ops[{k}] is a {type(values).__name__}, not a list or tensor of indices")
        indices = list(values)
        bad = [v for v in indices if isinstance(v, bool) or not isinstance(v, int)]
        if bad:
            raise DatasetError(f"{path}: num_ops[{k}] holds non-integer indices, e.g. {bad[0]!r}")
        outside = [i for i in indices if not 0 <= i < n_entries]
        if outside:
            raise DatasetError(f"{path}: num_ops[{k}] lists entry {outside[0]}, outside the file's {n_entries} "
                               "entries")
        m = min(eval_size, len(indices))
        kept = [i for i in indices[len(indices) - m:] if first <= i < n_entries]
        cut[k] = len({i for i in indices if i >= first} - set(kept))
        for i in kept:
            if i in k_of and k_of[i] != k:
                raise DatasetError(f"{path}: entry {i} is listed under num_ops[{k_of[i]}] and num_ops[{k}]: an "
                                   "entry has one number of predicate-object pairs")
            k_of[i] = k
        ks.append(k)
    return k_of, dict(sorted(cut.items())), sorted(ks)


def annotation_text(annotation: Any, outer: str, inner: str, index: int, origin: str) -> str:
    where = f"annotations[{index}][{outer!r}][{inner!r}]"
    part = annotation.get(outer) if isinstance(annotation, Mapping) else None
    value = part.get(inner) if isinstance(part, Mapping) else None
    if not isinstance(value, str):
        got = "missing" if value is None else f"a {type(value).__name__}"
        raise DatasetError(f"{origin}: {where} is {got}, not a string")
    if not value.strip():
        raise DatasetError(f"{origin}: {where} is empty")
    return value


def _entry_lists(data: Mapping[str, Any], pt_path: Path) -> tuple[Sequence, Sequence, int]:
    """The file's ``image_paths`` and ``annotations`` (one of each per entry) and their length."""
    image_paths, annotations = data["image_paths"], data["annotations"]
    for name, value in (("image_paths", image_paths), ("annotations", annotations)):
        if not isinstance(value, (list, tuple)):
            raise DatasetError(f"{pt_path}: {name} is a {type(value).__name__}, not a list")
    n = len(image_paths)
    if len(annotations) != n:
        raise DatasetError(f"{pt_path}: {n} image_paths but {len(annotations)} annotations (one of each per entry)")
    return image_paths, annotations, n


def training_lists(pt_path: Path, eval_size: int) -> tuple[Sequence, Sequence, int]:
    """``_entry_lists`` of ``pt_path``, whose entries must leave a training entry before the evaluation split."""
    image_paths, annotations, n = _entry_lists(load_pt(pt_path), pt_path)
    if n <= eval_size:
        raise DatasetError(f"{pt_path}: {n} entries leave no training entries before the evaluation split's "
                           f"{eval_size} (the file's last {eval_size}); is this the full ccneg_preprocessed.pt?")
    return image_paths, annotations, n


def _entries(image_paths: Sequence, annotations: Sequence, indices: range, images_dir: Path, pt_path: Path,
             make: Callable[[int, Path, str, str, str], Any]) -> tuple:
    """``make(index, image, caption, negated caption as released, origin)`` of each entry of ``indices``, its image
    by file name under ``images_dir``; every bad entry is reported, not only the first."""
    entries, problems = [], []
    for index in indices:
        origin = f"{pt_path}: entry {index}"
        raw_path, annotation = image_paths[index], annotations[index]
        try:
            if not isinstance(raw_path, str) or not raw_path.strip():
                raise DatasetError(f"{origin}: image_paths[{index}] is {raw_path!r}, not a path")
            caption = annotation_text(annotation, "json", "caption", index, origin)
            negative = annotation_text(annotation, "sop_data", "negative-prompt", index, origin)
            image = resolve_under(images_dir, PurePosixPath(raw_path.replace("\\", "/")).name, origin)
            entries.append(make(index, image, caption, negative, origin))
        except DatasetError as exc:
            problems.append(str(exc))
    raise_problems(problems, "entries", where=str(pt_path))
    return tuple(entries)


def load_ccneg(pt_path: Path, images_dir: Path, eval_size: int = EVAL_SIZE) -> CCNegSet:
    """The last ``eval_size`` entries of ``pt_path`` as items, with K and negation words per entry."""
    pt_path, images_dir = Path(pt_path), Path(images_dir)
    if eval_size < 1:
        raise ValueError(f"eval_size must be positive, got {eval_size}")
    data = load_pt(pt_path)
    image_paths, annotations, n = _entry_lists(data, pt_path)
    if n < eval_size:
        raise DatasetError(f"{pt_path}: {n} entries, fewer than the evaluation split's {eval_size} (the file's last "
                           f"{eval_size} entries); is this the full ccneg_preprocessed.pt?")
    if not images_dir.is_dir():
        raise DatasetError(f"{images_dir}: no image folder here; fetch `python -m common fetch {IMAGES_KEY}` (a "
                           f"manual download) and extract it so that {IMAGES_SUBFOLDER}/ holds the JPEGs")
    k_of, k_cut, ks = _k_of(data["num_ops"], pt_path, n, eval_size)

    def entry(index: int, image: Path, caption: str, negative: str, origin: str) -> CCNegEntry:
        if not image.is_file():
            raise DatasetError(f"{origin}: image {image_paths[index]!r} not found as {image}")
        item = ImageToTextItem(str(index), "all", image, (caption, negative.replace(",", "")), origin)
        return CCNegEntry(index, item, k_of.get(index), entry_words(negative))

    entries = _entries(image_paths, annotations, range(n - eval_size, n), images_dir, pt_path, entry)
    return CCNegSet(pt_path, sha256_file(pt_path), images_dir, n, eval_size, entries, tuple(ks), k_cut)


@dataclass(frozen=True)
class CCNegTrainingEntry:
    """One training entry as the authors' ``FineTuningDatasetWithNegatives`` reads it: its image (resolved by file
    name under the image folder; whether it exists is the caller's to check), the caption c and the negated
    caption c' with its commas removed (what their loader encodes: jaisidhsingh/CoN-CLIP@503388ac
    src/data/finetuning_datasets.py:87-89 "negative_prompt = self.text_transform([negative_prompt])")."""

    index: int
    """The entry's index in the file (= its index in the training split, which is the file's first entries; the
    distractor mapping's row)."""
    image: Path
    caption: str
    negated: str


@dataclass(frozen=True)
class CCNegTrainingSplit:
    n_entries: int
    """Entries in the file, the evaluation split's included."""
    entries: tuple[CCNegTrainingEntry, ...]


def load_ccneg_training(pt_path: Path, images_dir: Path, eval_size: int = EVAL_SIZE) -> CCNegTrainingSplit:
    """Entries ``0 .. N - eval_size - 1`` of ``pt_path`` (``FineTuningDataset``'s ``[:split_size]``), in file order;
    images are not checked here (the fine-tuning set counts the missing ones)."""
    pt_path, images_dir = Path(pt_path), Path(images_dir)
    if eval_size < 0:
        raise ValueError(f"eval_size must be >= 0, got {eval_size}")
    image_paths, annotations, n = training_lists(pt_path, eval_size)
    return CCNegTrainingSplit(n, _entries(image_paths, annotations, range(n - eval_size), images_dir, pt_path,
                                          lambda index, image, caption, negative, origin:
                                          CCNegTrainingEntry(index, image, caption, negative.replace(",", ""))))
