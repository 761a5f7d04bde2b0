"""Hard positives (Kamath et al., ECCV 2024): REPLACE benchmark counts recomputed from the released files.

The REPLACE benchmark is released as two aligned lists per type: ``amitakamath/hard_positives@33addaae
data/vl_checklist_attributes.json`` and ``amitakamath/hard_positives@33addaae data/vl_checklist_relations.json``
(``{image_id, image_path, true_caption (c), false_caption (c_n)}``), and ``amitakamath/hard_positives@33addaae
swapped_data/vl_checklist_attributes.json`` and ``amitakamath/hard_positives@33addaae
swapped_data/vl_checklist_relations.json``, the same lists with ``true_caption`` replaced by c_p.

An example is one list entry, counted as released, exact repeats included, as §2.4 counts "16,868 hard positives
targeting relations, and 10,575 hard positives targeting attributes, for a total of 27,443" (the notes give the
distinct images and (image, c, c_n) triples). The replaced words ("we replace 14 relations and 24 attributes") are
the distinct original phrases the c -> c_p edits replace (``replacement_rules``), inflections of one word
("wears"/"wearing") counted once.
"""
from __future__ import annotations

import difflib
import math
import os
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from common.audit.core import CLAIM_TABLE, AuditError, Recomputed
from common.files.jsonl import read_json
from common.registry.errors import FetchError, RegistryError
from common.registry.fetch import quiet_fetch
from common.registry.sources import get_source

PAPER = "hard_positives"
DATA_FILES = ("papers/hard_positives/sources.toml",)
"""Read at run time (``common.pipeline.stage_deps``): this paper's download-registry entries."""
PROFILE = "released"
TYPES = ("relations", "attributes")
CLAIM_EXAMPLES = {"relations": "replace_rel_hp", "attributes": "replace_attr_hp"}
CLAIM_TOTALS = ("replace_total", "intro_replace_hp")
CLAIM_WORDS = {"relations": "replaced_relations", "attributes": "replaced_attributes"}


def file_keys(kind: str) -> tuple[str, str]:
    """Registry keys of (original captions, hard positives) for ``kind`` in TYPES."""
    return (f"hard_positives/data/vl_checklist_{kind}.json", f"hard_positives/swapped_data/vl_checklist_{kind}.json")


def _read_list(path: Path) -> list[dict]:
    data = read_json(path, list, remedy="fetch it: python -m common fetch hard_positives")
    for i, rec in enumerate(data):
        if not isinstance(rec, dict) or not all(isinstance(rec.get(k), str) for k in
                                                ("image_id", "true_caption", "false_caption")):
            raise AuditError(f"{path}: entry {i} lacks image_id / true_caption / false_caption")
    return data


def load_aligned(original: Path, swapped: Path) -> list[tuple[dict, dict]]:
    """(original entry, hard-positive entry) pairs; raises unless the files are aligned entry by entry."""
    a, b = _read_list(original), _read_list(swapped)
    if len(a) != len(b):
        raise AuditError(f"{original} has {len(a)} entries but {swapped} has {len(b)}")
    bad = [i for i, (x, y) in enumerate(zip(a, b))
           if (x["image_id"], x.get("image_path"), x["false_caption"]) != (y["image_id"], y.get("image_path"), y["false_caption"])]
    if bad:
        raise AuditError(f"{original} / {swapped}: {len(bad)} entries differ in image or hard negative (first: {bad[:5]})")
    return list(zip(a, b))


def _spans(orig: str, new: str) -> list[tuple[str, str]]:
    """(original, replacement) token spans of one c -> c_p edit: a pure deletion or insertion widened by the token
    before it ("on top of" -> "on", not "top of" -> ""), an insertion plus a deletion taken as one span between the
    common prefix and suffix ("trees behind behind" -> "trees to the rear of behind")."""
    ta, tb = orig.split(), new.split()
    ops = [op for op in difflib.SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes() if op[0] != "equal"]
    if len(ops) > 1 and any(op[0] in ("insert", "delete") for op in ops):
        p = len(os.path.commonprefix([ta, tb]))  # of any two sequences, lists of tokens here
        s = len(os.path.commonprefix([ta[p:][::-1], tb[p:][::-1]]))
        ops = [("replace", p, len(ta) - s, p, len(tb) - s)]
    spans = []
    for tag, i1, i2, j1, j2 in ops:
        if (i1 == i2 or j1 == j2) and i1 > 0 and j1 > 0:
            i1, j1 = i1 - 1, j1 - 1
        spans.append((" ".join(ta[i1:i2]), " ".join(tb[j1:j2])))
    return spans


def _explains(rule: tuple[str, str], span: tuple[str, str]) -> bool:
    w, r = rule
    if not w or rule == span or w not in span[0]:
        return False
    return span[0].replace(w, r) == span[1] or re.sub(rf"\b{re.escape(w)}\b", r, span[0]) == span[1]


def replacement_rules(pairs: list[tuple[dict, dict]]) -> Counter:
    """(original phrase, replacement) -> number of c -> c_p edits (token spans) it explains; a span that another one
    explains as a substring or whole-word substitution ("covered" -> "covecrimson" from red -> crimson) is folded in."""
    spans = Counter(span for a, b in pairs for span in _spans(a["true_caption"], b["true_caption"]))
    rules: Counter = Counter()
    for span, n in spans.items():
        parent = next((rule for rule in spans if _explains(rule, span)), None)
        rules[parent or span] += n
    return rules


@dataclass(frozen=True)
class ReplaceCount:
    kind: str
    examples: int
    images: int
    distinct_triples: int
    rules: Counter

    @property
    def words(self) -> list[str]:
        return sorted({w for w, _ in self.rules})

    @property
    def word_stems(self) -> list[str]:
        """``words`` with inflections merged: a word's first of "ing", "s" that ends it dropped (3+ letters left)."""
        return sorted({next((w[:-len(s)] for s in ("ing", "s") if w.endswith(s) and len(w) > len(s) + 2), w)
                       for w in self.words})


def count_replace(kind: str, pairs: list[tuple[dict, dict]]) -> ReplaceCount:
    unchanged = sum(a["true_caption"] == b["true_caption"] for a, b in pairs)
    if unchanged:
        raise AuditError(f"REPLACE {kind}: {unchanged} hard positive(s) equal their original caption")
    return ReplaceCount(
        kind=kind, examples=len(pairs), images=len({a["image_id"] for a, _ in pairs}),
        distinct_triples=len({(a["image_id"], a["true_caption"], a["false_caption"]) for a, _ in pairs}),
        rules=replacement_rules(pairs),
    )


def _count(claim_id: str, value: float, source: str, note: str) -> Recomputed:
    return Recomputed(PAPER, CLAIM_TABLE, claim_id, "value", float(value), "count", source, PROFILE, "exact", note=note)


def replace_recomputed(counts: Mapping[str, ReplaceCount], sources: Mapping[str, str]) -> list[Recomputed]:
    recs = []
    for kind, c in counts.items():
        rules = ", ".join(f"{w or '∅'}->{r or '∅'} ({n})" for (w, r), n in c.rules.most_common())
        recs.append(_count(CLAIM_EXAMPLES[kind], c.examples, sources[kind], (
            f"entries of data/vl_checklist_{kind}.json, aligned 1:1 with swapped_data/ (same image and c_n, c_p != c); "
            f"{c.images} distinct images, {c.distinct_triples} distinct (image, c, c_n) triples (the rest repeat an "
            "entry)")))
        stems = c.word_stems
        recs.append(_count(CLAIM_WORDS[kind], len(stems), sources[kind], (
            f"distinct original phrases replaced in c -> c_p ({len(c.words)} surface forms: {c.words}; {len(stems)} "
            f"after merging inflections); replacement rules with example counts: {rules}")))
    if set(counts) == set(TYPES):
        note = " + ".join(f"{counts[k].examples} {k}" for k in TYPES) + " released REPLACE examples"
        recs += [_count(claim_id, sum(c.examples for c in counts.values()), " + ".join(sources[k] for k in TYPES), note)
                 for claim_id in CLAIM_TOTALS]
    return recs


REPO = "amitakamath/hard_positives"


def _source(kind: str) -> str:
    """Where a type's counts come from: its two released files, each cited whole at the commit its registry URL
    pins (``OWNER/REPO@COMMIT PATH``, the shape of ``common.docs.citations``)."""
    url = get_source(file_keys(kind)[0]).url or ""
    commit = url.split("/")[5][:8] if url.count("/") > 5 else "?"
    return " + ".join(f"{REPO}@{commit} {folder}/vl_checklist_{kind}.json" for folder in ("data", "swapped_data"))


def recompute(fetcher: Callable[[str], Path] | None = None) -> list[Recomputed]:
    """REPLACE example counts (relations, attributes, total) and replaced-word counts from the released files; NaN
    ("not recomputed yet", the error in the note) where a file cannot be fetched."""
    fetch_path = fetcher or quiet_fetch
    counts, recs = {}, []
    for kind in TYPES:
        try:
            original, swapped = (fetch_path(k) for k in file_keys(kind))
        except (FetchError, RegistryError, OSError) as exc:
            first = (str(exc).splitlines() or [""])[0][:300]
            note = f"not recomputed yet: a released file could not be fetched ({type(exc).__name__}: {first})"
            ids = [CLAIM_EXAMPLES[kind], CLAIM_WORDS[kind]] + (list(CLAIM_TOTALS) if kind == TYPES[-1] else [])
            recs += [_count(cid, math.nan, file_keys(kind)[0], note) for cid in ids]
            continue
        counts[kind] = count_replace(kind, load_aligned(original, swapped))
    recs += replace_recomputed(counts, {k: _source(k) for k in counts})
    if len(counts) < len(TYPES) and not any(r.row in CLAIM_TOTALS for r in recs):
        recs += [_count(cid, math.nan, "REPLACE files",
                        "not recomputed yet: a released REPLACE file could not be fetched") for cid in CLAIM_TOTALS]
    return recs
