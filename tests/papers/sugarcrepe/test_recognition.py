"""Recognition vs compositionality at scale (Oh et al.'s table): reading, classification, statistics, bad input,
the explicit zoo mapping, and the mirrored table's shape."""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

from papers.sugarcrepe import recognition as rec


def _columns() -> dict[str, list[str]]:
    cols: dict[str, list[str]] = {rec.TABLE_KEY: [], rec.SUBSETS_KEY: []}
    for source, column in rec.X_COLUMNS.values():
        cols[source].append(column)
    for y in rec.Y_COLUMNS:
        cols[y.source].append(y.column)
    return cols


def write_tables(folder: Path, rows: list[tuple[str, str, str]], seed: int = 0,
                 edit=None) -> tuple[Path, Path]:
    """Two files in the upstream layout (summary and per-subset), row-aligned; y tracks ImageNet plus noise."""
    rng = np.random.default_rng(seed)
    cols = _columns()
    paths = {rec.TABLE_KEY: folder / "results.csv", rec.SUBSETS_KEY: folder / "individual_results.csv"}
    imagenet = rng.uniform(20, 80, len(rows))
    tables = {}
    for source, columns in cols.items():
        out = []
        for i, (arch, tag, family) in enumerate(rows):
            row = {"arch": arch, "pretrained": tag, "family": family}
            for c in columns:
                row[c] = f"{imagenet[i] if c == 'imagenet' else 0.5 * imagenet[i] + rng.normal(0, 3) + 30:.6f}"
            out.append(row)
        tables[source] = out
    if rows and rows[-1][0] == "dup":  # the last row repeats the first's numbers: one checkpoint listed twice
        for key in tables:
            for c in cols[key]:
                tables[key][-1][c] = tables[key][0][c]
    if edit:
        edit(tables)
    for source, out in tables.items():
        with open(paths[source], "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=["", "arch", "pretrained", "family", *cols[source]])
            writer.writeheader()
            for i, r in enumerate(out):
                writer.writerow({"": i, **r})
    return paths[rec.TABLE_KEY], paths[rec.SUBSETS_KEY]


ROWS = [("ViT-B-32", "openai", "OpenCLIP"), ("RN50", "openai", "OpenCLIP"), ("ViT-B-16", "laion400m_e32", "OpenCLIP"),
        ("ViT-L-14", "openai", "OpenCLIP"), ("SLIP-B", "yfcc15m", "SLIP"), ("CLIP_ViT-B-16", "cc12m", "LaCLIP"),
        ("CLIP_ViT-B-16", "cc12m", "SynthCLIP"), ("NegCLIP", "coco-ft", "StructuredCLIP"),
        ("DAC-LLM", "cc3m-ft", "StructuredCLIP"), ("dup", "copy", "OpenCLIP")]


def test_rows_joined_classified_and_duplicates_merged(tmp_path):
    table, subsets = write_tables(tmp_path, ROWS)
    checkpoints = rec.load_checkpoints(table, subsets, zoo={("ViT-B-32", "openai"): "openai/ViT-B-32"})
    assert len(checkpoints) == len(ROWS) - 1  # the duplicate merged into the first row
    first = checkpoints[0]
    assert first.zoo == "openai/ViT-B-32" and first.duplicates == ("dup/copy",)
    assert [c.name for c in checkpoints if c.finetuned] == ["NegCLIP/coco-ft", "DAC-LLM/cc3m-ft"]
    # LaCLIP's and SynthCLIP's CLIP_ViT-B-16/cc12m are two checkpoints (same arch and tag, another family)
    assert sum(c.name == "CLIP_ViT-B-16/cc12m" for c in checkpoints) == 2


def test_correlations_match_scipy_and_intervals_hold_the_estimate(tmp_path):
    table, subsets = write_tables(tmp_path, ROWS[:-1])
    checkpoints = rec.load_checkpoints(table, subsets, zoo={})
    rows = rec.correlations(checkpoints)
    assert len(rows) == len(rec.X_COLUMNS) * len(rec.Y_COLUMNS) * len(rec.POPULATIONS)
    row = next(r for r in rows if r["x"] == "ImageNet-1k" and r["column"] == "sugarcrepe" and r["population"] == "all")
    xs = [c.value(rec.TABLE_KEY, "imagenet") for c in checkpoints]
    ys = [c.value(rec.TABLE_KEY, "sugarcrepe") for c in checkpoints]
    assert row["n"] == 9 and row["pearson"] == round(scipy.stats.pearsonr(xs, ys).statistic, 4)
    assert row["spearman"] == round(scipy.stats.spearmanr(xs, ys).statistic, 4)
    assert row["pearson_low"] <= row["pearson"] <= row["pearson_high"]
    assert row["spearman_low"] <= row["spearman"] <= row["spearman_high"]
    pre = next(r for r in rows if r["x"] == "ImageNet-1k" and r["column"] == "sugarcrepe"
               and r["population"] == "pretrained")
    assert pre["n"] == 7 and isinstance(pre["finetuned_above_trend"], float)
    competent = [c for c in checkpoints if not c.finetuned and c.value(rec.TABLE_KEY, "imagenet") >= rec.COMPETENT]
    assert next(r for r in rows if r["population"] == rec.POPULATIONS[2])["n"] == len(competent)
    again = rec.correlations(checkpoints)  # seeded: the same intervals on a rerun
    assert again == rows


@pytest.mark.parametrize("case, message", [
    ("missing", r"results.csv:1: missing column\(s\) \['imagenet'\] \(header \[''"),
    ("text", r"individual_results.csv:3 \(RN50/openai\): column 'sugarcrepe::swap_obj' = 'n/a' is not a number"),
    ("misaligned", r"results.csv:4 is ViT-B-16/laion400m_e32 but .*individual_results.csv:4 is X/y"),
])
def test_bad_input_names_file_row_and_column(tmp_path, case, message):
    def edit(tables):
        if case == "missing":
            for r in tables[rec.TABLE_KEY]:
                del r["imagenet"]
        elif case == "text":
            tables[rec.SUBSETS_KEY][1]["sugarcrepe::swap_obj"] = "n/a"
        else:
            tables[rec.SUBSETS_KEY][2].update(arch="X", pretrained="y")

    table, subsets = write_tables(tmp_path, ROWS[:-1], edit=edit)
    if case == "missing":  # drop the column from the file (the writer filled it with empty cells)
        lines = table.read_text().splitlines()
        header = lines[0].split(",")
        table.write_text("\n".join(",".join(v for k, v in zip(header, line.split(",")) if k != "imagenet")
                                   for line in lines) + "\n")
    with pytest.raises(rec.RecognitionInputError, match=message):
        rec.load_checkpoints(table, subsets, zoo={})


def test_an_empty_selection_is_an_error_and_nothing_is_written(tmp_path):
    table, subsets = write_tables(tmp_path, [])
    with pytest.raises(rec.RecognitionInputError, match="no rows"):
        rec.load_checkpoints(table, subsets, zoo={})
    out = tmp_path / "out"
    out.mkdir()
    (out / "metrics.json").write_text("{}\n")
    files = {rec.TABLE_KEY: table, rec.SUBSETS_KEY: subsets}
    with pytest.raises(rec.RecognitionInputError):
        rec.run(out, fetcher=files.__getitem__)
    assert [p.name for p in out.iterdir()] == ["metrics.json"] and (out / "metrics.json").read_text() == "{}\n"


def test_zoo_table_is_explicit_and_agrees_with_the_zoo():
    from common.zoo import get_spec

    rows, figure5, absent = rec.load_zoo_table()
    assert sum(figure5.values()) == 14 and set(absent) == {"laion/ViT-g-14", "laion/xlm-roberta-large-ViT-H-14",
                                                            "datacomp/xlarge-ViT-L-14"}
    for (arch, tag), name in rows.items():
        spec = get_spec(name)
        if spec.pretrained:  # an open_clip tag: the table's row is that tag and architecture (QuickGELU aside)
            assert (spec.arch.removesuffix("-quickgelu"), spec.pretrained) == (arch, tag), name
        else:
            assert name == "aro/negclip" and (arch, tag) == ("NegCLIP", "coco-ft")
    # Figure 5's 17 models: each mapped or listed absent, none twice
    from papers.sugarcrepe.released import figure5_models

    paper = {f"{r.arch}|{r.pretrained}" for r in figure5_models()}
    assert len(paper) == 17
    assert sum(figure5.values()) + len(absent) == 17


def test_mirrored_table_shape_and_a_known_cell(released_env):
    from common.registry.fetch import fetch

    table, subsets = fetch(rec.TABLE_KEY, progress=False), fetch(rec.SUBSETS_KEY, progress=False)
    with open(table, newline="", encoding="utf-8") as fh:
        assert len(list(csv.DictReader(fh))) == 202
    checkpoints = rec.load_checkpoints(table, subsets)
    assert len(checkpoints) == 200 and sum(c.finetuned for c in checkpoints) == 8
    clip = next(c for c in checkpoints if c.zoo == "openai/ViT-B-32")
    assert clip.value(rec.TABLE_KEY, "imagenet") == 63.336
    # SugarCrepe's SWAP-OBJ as 150 of the released 245 examples
    assert clip.value(rec.SUBSETS_KEY, "sugarcrepe::swap_obj") == pytest.approx(100 * 150 / 245, abs=1e-9)


def test_a_damaged_zoo_table_is_one_error_naming_the_file_and_line(tmp_path):
    table = tmp_path / "zoo_table.toml"
    table.write_text('[[zoo]]\nname = "openai/ViT-B-32"\narch = \n', encoding="utf-8")
    with pytest.raises(rec.RecognitionInputError, match=r"zoo_table\.toml: not valid TOML: .*line 3"):
        rec.load_zoo_table(table)
