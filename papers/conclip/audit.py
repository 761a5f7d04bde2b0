"""The audit of this paper: every published number against what was recomputed here (which tables, and how the rows
join: docs/audit.md; ``FULL_ONLY``: the mini world has no analog of the eight datasets).

Where a recomputed cell depends on a rule that no file of the authors' release (jaisidhsingh/CoN-CLIP@503388ac)
holds, taken here from the paper's words, its note starts with "rule unverified" and says which (``rule_note``:
``TABLE_RULES``, ``PAIR_SCORE_RULES``, ``COLUMN_RULES``). CC-Neg's accuracy itself follows the README's released
evaluation snippet, and SugarCrepe SugarCrepe's own released evaluation.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Mapping, Sequence

from common.audit import stage_main
from common.audit.core import Recomputed
from common.audit.runs import (
    REMEDY, Note, RunRow, RunTableError, context_recipe_notes, joined_notes, read_run_table, recipe_of_row,
    rows_recomputations, run_rows_recomputations, run_value)
from common.paths import RESULTS
from papers.conclip.zeroshot_full import published_columns

PAPER = "conclip"
DATA_FILES = ("results/published/conclip.csv", "results/published/conclip_claims.csv",
              "results/oracle/conclip.json")
"""The published numbers this audit reads and its oracle record (``common.pipeline.stage_deps``)."""

SUGARCREPE_COLUMNS: dict[str, str] = {
    "replace_obj": "Replace | Object", "replace_att": "Replace | Attribute", "replace_rel": "Replace | Relation",
    "add_obj": "Add | Object", "add_att": "Add | Attribute", "swap_obj": "Swap | Object", "swap_att": "Swap | Attribute"}
BACKBONES: dict[str, str] = {"clip": "CLIP | ViT-B/32", "conclip": "CoN-CLIP | ViT-B/32", "clip-l14": "CLIP | ViT-L/14",
                             "conclip-b16": "CoN-CLIP | ViT-B/16", "conclip-l14": "CoN-CLIP | ViT-L/14"}
"""Rows of Tables 4, 5, 13 and 15 (those beyond ViT-B/32 in the full profile only; CLIP ViT-B/16 is not in the zoo)."""
TABLE2_ROWS: dict[str, str] = {"clip": "CLIP", "negclip": "Neg-CLIP", "flava": "FLAVA", "blip": "BLIP"}
"""Rows of Table 2; Tables 3 and 7-9 add CoN-CLIP (Table 7 spells NegCLIP without the hyphen)."""
TABLES: dict[str, tuple[str, Mapping[str, str], Mapping[str, str]]] = {
    "Table 2": ("table3.csv", {"ccneg": "CC-Neg Accuracy"}, TABLE2_ROWS),
    "Table 3": ("table3.csv", {"ccneg": "CC-Neg Accuracy"}, {**TABLE2_ROWS, "conclip": "CoN-CLIP"}),
    "Table 6": ("table6.csv", {"sugarcrepe_replace": "SugarCREPE R@1 | Replace", "sugarcrepe_add": "SugarCREPE R@1 | Add",
                               "sugarcrepe_swap": "SugarCREPE R@1 | Swap", "ccneg": "CC-Neg | Accuracy",
                               "classification_top1": "Image classification | Top-1 accuracy"},
                {"l1": "CC-Neg | L_1", "l2": "CC-Neg | L_2", "l1-l2": "CC-Neg | L_1+L_2",
                 "conclip": "CC-Neg | L_conclip", "crepe-negate-l1": "CREPE-Negate | L_1"}),
    "Table 5": ("sugarcrepe.csv", SUGARCREPE_COLUMNS, BACKBONES),
    "Table 13": ("sugarcrepe.csv", SUGARCREPE_COLUMNS, BACKBONES),
    "Table 14": ("sugarcrepe.csv", SUGARCREPE_COLUMNS, {"l1": "CoN-CLIP | L_1", "l2": "CoN-CLIP | L_2",
                                                        "l1-l2": "CoN-CLIP | L_12", "conclip": "CoN-CLIP | L_conclip"}),
    "Table 16": ("classification.csv", {"delta": "Mean Δ"}, {"clip": "CLIP", "negclip": "NegCLIP",
                                                             "conclip": "CoN-CLIP", "laclip": "LaCLIP"}),
}
"""Table -> (results file, our column -> published column, our row id -> published row label)."""
UNITS: dict[str, str] = {"delta": "points"}
"""Our results columns whose unit is not "percent": Table 16's mean Delta is a difference of top-1s in points, as
published (compared as percent, a full run's audit raised "cannot compare a percent with a points")."""
BY_WORD_K: dict[str, tuple[str, Mapping[str, str]]] = {
    "Table 7": ("no", {**TABLE2_ROWS, "negclip": "NegCLIP", "conclip": "CoN-CLIP"}),
    **{table: (word, {**TABLE2_ROWS, "conclip": "CoN-CLIP"})
       for table, word in (("Table 8", "not"), ("Table 9", "without"))},
    **{table: (word, {"conclip": "CoN-CLIP | ViT-B/32 | L_conclip", "l1": "CoNCLIP | ViT-B/32 | L_1",
                      "l1-l2": "CoNCLIP | ViT-B/32 | L_12", "l2": "CoNCLIP | ViT-B/32 | L_2"})
       for table, word in (("Table 10", "no"), ("Table 11", "not"), ("Table 12", "without"))},
}
"""Tables 7-12: negation word and our row id -> published row label; columns are K ("#1".."#5"), and the published
"Split size" row is our cell size ``n``."""
K_COLUMNS = {f"k{k}": f"#{k}" for k in range(1, 6)}


def by_word_k_rows(path: Path, word: str) -> list[dict[str, str]]:
    """``by_word_k.csv``'s cells of one word, one row per model: k1..k5 (accuracy) and n_k1..n_k5 (cell sizes)."""
    if not path.is_file():
        return []
    pivot: dict[str, RunRow] = defaultdict(RunRow)
    for cell in read_run_table(path, ("row", "word", "k", "accuracy", "n"), key=("row", "word", "k")):
        if cell["k"] not in {c.removeprefix("k") for c in K_COLUMNS}:
            raise RunTableError(f"{path}:{cell.line}: column 'k': {cell['k']!r} is not one of 1..{len(K_COLUMNS)}; "
                                f"{REMEDY}")
        if cell["word"] == word:
            for column in ("accuracy", "n"):
                run_value(cell, column, path)
            pivot[cell["row"]].update({"row": cell["row"], f"k{cell['k']}": cell["accuracy"],
                                       f"n_k{cell['k']}": cell["n"]})
    return list(pivot.values())


RETRAINED_TABLES = ("Table 6", "Table 10", "Table 11", "Table 12", "Table 14")
"""Tables whose rows are the fine-tunes (``papers.conclip.runs``), not released checkpoints."""
FULL_ONLY: dict[str, tuple[str, Mapping[str, str], Mapping[str, str]]] = {
    table: ("classification.csv", published_columns(),
            {**BACKBONES, **({"laclip": "LaCLIP | ViT-B/32"} if table == "Table 15" else {})})
    for table in ("Table 4", "Table 15")}
"""Tables 4 and 15 (full profile): per dataset top-1 with the standard prompt; a dataset the zero-shot stage could
not read has no column (``papers.conclip.zeroshot_full``: its context.json lists it)."""
MINI_ROWS = frozenset({"clip", "negclip", "conclip", "l1", "l2", "l1-l2", "crepe-negate-l1"})
"""The mapped rows the mini run writes (its analogs; FLAVA, BLIP, LaCLIP and the other backbones have none): one
missing from a mini table is a damaged table, not a smaller audit. A full run may leave out a model it could not
load."""


RULE_UNVERIFIED = "rule unverified"
"""How a note starts where the cell depends on a rule the authors did not release."""
BY_WORD_K_RULE = (f"{RULE_UNVERIFIED}: the grouping by negation word and by K is not in the authors' release (the "
                  "paper, Tables 7-12: 'evaluation subset samples that use' the word, 'subset splits with the same "
                  "number of predicate-object pairs')")
ZEROSHOT_RULE = (f"{RULE_UNVERIFIED}: the authors' zero-shot evaluation (class names, templates, splits, ties) is not "
                 "in their release (the paper, Sec. 5.1.2, gives the prompts 'this is a photo of a {class}' and "
                 "'this is not a photo of a {class}')")
PAIR_SCORE_RULES: dict[str, str] = {
    row: (f"{RULE_UNVERIFIED}: how the authors scored {name} is not in their release (the paper, Sec. 3.2.1: 'a VLM "
          "computes a similarity-based match score')") for row, name in (("blip", "BLIP"), ("flava", "FLAVA"))}
"""Rows of Tables 2-3 and 7-9 scored by a rule chosen here: BLIP's ITM head, FLAVA's embeddings."""
TABLE_RULES: dict[str, str] = {
    **{f"Table {n}": BY_WORD_K_RULE for n in range(7, 13)},
    **{table: ZEROSHOT_RULE for table in ("Table 4", "Table 15", "Table 16")},
}
"""Tables every cell of which depends on an unreleased rule."""
PAIR_SCORED_TABLES = ("Table 2", "Table 3", "Table 7", "Table 8", "Table 9")
COLUMN_RULES: dict[str, dict[str, str]] = {"Table 6": {"classification_top1": ZEROSHOT_RULE}}
"""Per table, results columns that depend on an unreleased rule where the table's other columns do not."""


def rule_note(table: str, columns: Mapping[str, str] | None = None) -> Note:
    """A results row -> the "rule unverified" note of its cells of ``table`` (restricted to ``columns``, our column
    -> published column, where ``COLUMN_RULES`` names some), "" where every rule it depends on is released."""
    def note(row: Mapping[str, str]) -> str:
        parts = [TABLE_RULES.get(table, "")]
        parts += [why for column, why in COLUMN_RULES.get(table, {}).items() if columns is None or column in columns]
        if table in PAIR_SCORED_TABLES:
            parts.append(PAIR_SCORE_RULES.get(row.get("row", ""), ""))
        return "; ".join(dict.fromkeys(p for p in parts if p))
    return note


def expected_rows(ids: Mapping[str, str], profile: str) -> set[str]:
    """The published rows of ``ids`` (our row id -> published row) that this profile's run writes."""
    return {label for row, label in ids.items() if row in MINI_ROWS} if profile == "mini" else set()


def row_ids(table: str, rows: Mapping[str, str], profile: str) -> dict[str, str]:
    """Our row id -> published row label, for this profile: the full profile's re-trainings are ``ft-<run>``."""
    if profile == "full" and table in RETRAINED_TABLES:
        return {f"ft-{run}": label for run, label in rows.items()}
    return dict(rows)


def run_recomputations(profile: str, results: Path = RESULTS) -> list[Recomputed]:
    """Every mapped cell of this profile's runs (the paper releases no per-example predictions to recompute from)."""
    out = results / PAPER / profile
    recs: list[Recomputed] = []
    tables = {**TABLES, **(FULL_ONLY if profile == "full" else {})}
    # each trained run's recipe, copied by the tables stage from its sidecar into ``context.json`` (by row id)
    recipes = recipe_of_row(context_recipe_notes(out / "context.json", f"rerun the {profile} tables stage"), "row")
    for table, (name, columns, rows) in tables.items():
        path = out / name
        ids = row_ids(table, rows, profile)
        # the columns that depend on an unreleased rule apart from the others: their cells' notes say so
        unverified = COLUMN_RULES.get(table, {})
        parts = [part for part in ({c: v for c, v in columns.items() if c not in unverified},
                                   {c: v for c, v in columns.items() if c in unverified}) if part]
        for part in parts:
            recs += run_rows_recomputations(PAPER, table, path, profile, part,
                                            lambda row, ids=ids: ids.get(row.get("row", "")),
                                            f"run {path.relative_to(results.parent)}",
                                            note=joined_notes(rule_note(table, part), recipes), units=UNITS,
                                            expected=expected_rows(ids, profile),
                                            optional=part if table in FULL_ONLY else ())
    path = out / "by_word_k.csv"
    sizes_columns = {f"n_k{k}": f"#{k}" for k in range(1, 6)}
    # a full run leaves a (word, K) cell out when no entry falls in it (its size 0 is in context.json)
    optional = {*K_COLUMNS, *sizes_columns} if profile == "full" else set()
    for table, (word, rows) in BY_WORD_K.items():
        cells = by_word_k_rows(path, word)
        source = f"run {path.relative_to(results.parent)} ({word})"
        ids = row_ids(table, rows, profile)
        recs += rows_recomputations(PAPER, table, cells, profile, K_COLUMNS,
                                    lambda row, ids=ids: ids.get(row.get("row", "")), source,
                                    note=joined_notes(rule_note(table), recipes),
                                    expected=expected_rows(ids, profile) if cells else (), optional=optional,
                                    path=path)
        sizes = [next(iter(cells))] if cells else []
        recs += rows_recomputations(PAPER, table, sizes, profile, sizes_columns,
                                    lambda row: "Split size", source, note=TABLE_RULES[table],
                                    units={f"n_k{k}": "count" for k in range(1, 6)}, optional=optional, path=path)
    return recs


recompute = run_recomputations


def main(argv: Sequence[str] | None = None) -> int:
    return stage_main(PAPER, argv, recompute)
