"""Recognition vs compositionality at scale: SugarCrepe's Figure 5 over 202 checkpoints and 12 benchmarks.

Oh et al.'s per-checkpoint table (ytaek-oh/vl_compo) asks Figure 5's question at scale: every compositionality column
against ImageNet-1k and the 21-task average, Pearson and Spearman r with bootstrap intervals, over three populations,
and how far the compositionality fine-tunes sit above the pre-trained trend. What it decides and its outputs are in
the README's "Figure 5 at scale" section. A missing column, a non-numeric cell or an empty selection is an error
naming the file, the row and the column, and nothing is written.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np
import scipy.stats

from common.benchmarks.caption_negatives import CATEGORIES, COLUMNS
from common.errors import WorkspaceError
from common.evaluation.stats import bootstrap_pearson_ci, pearson_r
from common.files.io import write_csv_atomic, write_json_atomic, write_output_group
from common.files.utf8 import read_toml
from common.paths import RESULTS
from common.pipeline.cli import print_written, stage_parser
from common.registry.fetch import quiet_fetch
from common.reporting.figures import pyplot, save_figure
from common.reporting.published import load_cells, load_claims, read_csv_rows
from common.zoo import get_spec

TABLE_KEY = "vl_compo/results.csv"
SUBSETS_KEY = "vl_compo/individual_results.csv"
ZOO_TABLE = Path(__file__).with_name("vl_compo.toml")
DATA_FILES = ("papers/sugarcrepe/vl_compo.toml", "results/published/sugarcrepe.csv",
              "results/published/sugarcrepe_claims.csv")
OUT_DIR = RESULTS / "sugarcrepe" / "recognition"
KEY_COLUMNS = ("arch", "pretrained", "family")
FINETUNE_SUFFIX = "-ft"
SEED, RESAMPLES, CONFIDENCE = 0, 2000, 0.95
X_COLUMNS = {"ImageNet-1k": (TABLE_KEY, "imagenet"), "21-task average": (TABLE_KEY, "21_tasks_avg")}
VL_CHECKLIST = ("Object_Location_center", "Object_Location_margin", "Object_Location_mid", "Object_Size_large",
                "Object_Size_medium", "Object_Size_small", "Attribute_action", "Attribute_color", "Attribute_material",
                "Attribute_size", "Attribute_state", "Relation_action", "Relation_spatial")
AVERAGES = ("sugarcrepe", "aro", "vl_checklist", "winoground", "crepe", "colorswap", "eqben", "imagecode", "mmvp_vlm",
            "svo_probes", "valse", "whatsup", "comp_avg")


@dataclass(frozen=True)
class YColumn:
    benchmark: str
    label: str
    source: str
    column: str


Y_COLUMNS: tuple[YColumn, ...] = (
    *(YColumn("SugarCrepe", c.upper().replace("_", "-"), SUBSETS_KEY, f"sugarcrepe::{c}") for c in CATEGORIES),
    *(YColumn("ARO", c, SUBSETS_KEY, f"aro::{c}") for c in ("VG_Relation", "VG_Attribute", "Flickr30k_Order",
                                                             "COCO_Order")),
    *(YColumn("VL-CheckList", c, SUBSETS_KEY, f"vl_checklist::{c}") for c in VL_CHECKLIST),
    *(YColumn("Winoground", c, SUBSETS_KEY, f"winoground::{c}") for c in ("text", "image", "group")),
    *(YColumn("average", c, TABLE_KEY, c) for c in AVERAGES),
)
COMPETENT = 50.0
POPULATIONS = ("all", "pretrained", f"pretrained, ImageNet >= {COMPETENT:g}%")
"""All distinct checkpoints; without the compositionality fine-tunes; and only pre-trained checkpoints that
recognise well (the table spans ImageNet 3% to 83%, and its weakest checkpoints could carry a correlation alone)."""


class RecognitionInputError(WorkspaceError, ValueError):
    """The vl_compo tables are not as expected; the message names the file, the row and the column."""


@dataclass(frozen=True)
class Checkpoint:
    arch: str
    pretrained: str
    family: str
    values: Mapping[str, float]
    """``<source key>:<column>`` -> value."""
    zoo: str = ""
    duplicates: tuple[str, ...] = field(default=())

    @property
    def name(self) -> str:
        return f"{self.arch}/{self.pretrained}"

    @property
    def finetuned(self) -> bool:
        return self.pretrained.endswith(FINETUNE_SUFFIX)

    def value(self, source: str, column: str) -> float:
        return self.values[f"{source}:{column}"]


def _read(path: Path, columns: Sequence[str]) -> list[tuple[int, dict[str, str], dict[str, float]]]:
    """Every row as (line, its key columns, {column: value}); errors name the file, the line and the column."""
    out = []
    for line, row in read_csv_rows(path, RecognitionInputError, required=(*KEY_COLUMNS, *columns))[1]:
        key = {k: row[k] for k in KEY_COLUMNS}
        where = f"{path}:{line} ({key['arch']}/{key['pretrained']})"
        if not key["arch"] or not key["pretrained"]:
            raise RecognitionInputError(f"{where}: empty arch or pretrained")
        values = {}
        for c in columns:
            try:
                values[c] = float(row[c])
            except ValueError:
                raise RecognitionInputError(f"{where}: column {c!r} = {row[c]!r} is not a number") from None
            if not math.isfinite(values[c]):
                raise RecognitionInputError(f"{where}: column {c!r} = {row[c]!r} is not finite")
        out.append((line, key, values))
    if not out:
        raise RecognitionInputError(f"{path}: no rows (an empty selection)")
    return out


def load_zoo_table(path: Path = ZOO_TABLE) -> tuple[dict[tuple[str, str], str], dict[str, bool], dict[str, str]]:
    """((arch, pretrained) -> zoo name, zoo name -> plotted in Figure 5, absent zoo name -> reason)."""
    _, data = read_toml(path, RecognitionInputError)
    rows: dict[tuple[str, str], str] = {}
    figure5: dict[str, bool] = {}
    for i, z in enumerate(data.get("zoo", [])):
        if not all(z.get(k) for k in ("name", "arch", "pretrained")):
            raise RecognitionInputError(f"{path}: [[zoo]] #{i + 1} needs name, arch and pretrained")
        rows[(z["arch"], z["pretrained"])] = z["name"]
        figure5[z["name"]] = bool(z.get("figure5", False))
    absent = {a["name"]: a.get("reason", "") for a in data.get("absent", [])}
    return rows, figure5, absent


def load_checkpoints(table: Path, subsets: Path, zoo: Mapping[tuple[str, str], str] | None = None
                     ) -> list[Checkpoint]:
    """Both files joined on (arch, pretrained), equal rows merged; every key must be in both files."""
    zoo = zoo if zoo is not None else load_zoo_table()[0]
    wanted: dict[str, list[str]] = {TABLE_KEY: [], SUBSETS_KEY: []}
    for source, column in [*X_COLUMNS.values(), *((y.source, y.column) for y in Y_COLUMNS)]:
        wanted[source].append(column)
    main, per_subset = _read(table, wanted[TABLE_KEY]), _read(subsets, wanted[SUBSETS_KEY])
    if len(main) != len(per_subset):
        raise RecognitionInputError(f"{table} has {len(main)} rows, {subsets} {len(per_subset)}")
    checkpoints: list[Checkpoint] = []
    seen: dict[tuple[float, ...], int] = {}
    for (line, key, values), (line2, key2, values2) in zip(main, per_subset):
        # The files list the same checkpoints in the same order; (arch, pretrained) is not unique on its own
        # (LaCLIP's and SynthCLIP's CLIP_ViT-B-16/cc12m), and the family column differs once (ALIP), so rows
        # are joined by position and checked.
        if (key["arch"], key["pretrained"]) != (key2["arch"], key2["pretrained"]):
            raise RecognitionInputError(f"{table}:{line} is {key['arch']}/{key['pretrained']} but {subsets}:{line2} "
                                        f"is {key2['arch']}/{key2['pretrained']}: the files are not row-aligned")
        merged = {f"{TABLE_KEY}:{c}": v for c, v in values.items()}
        merged.update({f"{SUBSETS_KEY}:{c}": v for c, v in values2.items()})
        fingerprint = tuple(merged[k] for k in sorted(merged))
        pair = (key["arch"], key["pretrained"])
        if fingerprint in seen:  # the same weights listed twice
            first = checkpoints[seen[fingerprint]]
            checkpoints[seen[fingerprint]] = Checkpoint(first.arch, first.pretrained, first.family, first.values,
                                                        first.zoo or zoo.get(pair, ""),
                                                        (*first.duplicates, f"{pair[0]}/{pair[1]}"))
            continue
        seen[fingerprint] = len(checkpoints)
        checkpoints.append(Checkpoint(pair[0], pair[1], key["family"], merged, zoo.get(pair, "")))
    unknown = sorted(set(zoo) - {(k["arch"], k["pretrained"]) for _, k, _ in main})
    if unknown:
        raise RecognitionInputError(f"{ZOO_TABLE}: zoo rows not in {table}: {unknown}")
    return checkpoints


def bootstrap_spearman_ci(x: Sequence[float], y: Sequence[float], n_resamples: int = RESAMPLES,
                          confidence: float = CONFIDENCE, seed: int = SEED) -> tuple[float, float, float]:
    """Spearman's rho and a percentile-bootstrap interval (pairs resampled, each resample ranked anew; resamples
    with a constant side dropped)."""
    xs, ys = np.asarray(x, float), np.asarray(y, float)
    rho = float(scipy.stats.spearmanr(xs, ys).statistic)
    picks = np.random.default_rng(seed).integers(0, xs.size, size=(n_resamples, xs.size))
    rx, ry = scipy.stats.rankdata(xs[picks], axis=1), scipy.stats.rankdata(ys[picks], axis=1)
    defined = (rx.std(axis=1) > 0) & (ry.std(axis=1) > 0)
    rs = scipy.stats.pearsonr(rx[defined], ry[defined], axis=1).statistic
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(rs, [tail, 100.0 - tail])
    return rho, float(low), float(high)


def correlations(checkpoints: Sequence[Checkpoint]) -> list[dict[str, object]]:
    """One row per (x, y column, population): n, Pearson and Spearman with intervals; for the pre-trained
    population also the fine-tunes' mean distance above the pre-trained least-squares line."""
    rows = []
    finetunes = [c for c in checkpoints if c.finetuned]
    for x_label, (x_source, x_column) in X_COLUMNS.items():
        for y in Y_COLUMNS:
            for population in POPULATIONS:
                chosen = [c for c in checkpoints if population == "all" or (not c.finetuned and (
                    population == "pretrained" or c.value(TABLE_KEY, "imagenet") >= COMPETENT))]
                if len(chosen) < 3:
                    raise RecognitionInputError(f"{population} population has {len(chosen)} checkpoints: "
                                                "too few for a correlation")
                xs = [c.value(x_source, x_column) for c in chosen]
                ys = [c.value(y.source, y.column) for c in chosen]
                pearson = bootstrap_pearson_ci(xs, ys, n_resamples=RESAMPLES, confidence=CONFIDENCE, seed=SEED)
                rho, rho_low, rho_high = bootstrap_spearman_ci(xs, ys)
                row: dict[str, object] = {
                    "x": x_label, "benchmark": y.benchmark, "column": y.label, "population": population,
                    "n": len(chosen), "pearson": round(pearson.estimate, 4), "pearson_low": round(pearson.low, 4),
                    "pearson_high": round(pearson.high, 4), "spearman": round(rho, 4),
                    "spearman_low": round(rho_low, 4), "spearman_high": round(rho_high, 4),
                    "finetuned_above_trend": "",
                }
                if population == "pretrained" and finetunes:
                    slope, intercept = np.polyfit(xs, ys, 1)
                    residuals = [c.value(y.source, y.column) - (slope * c.value(x_source, x_column) + intercept)
                                 for c in finetunes]
                    row["finetuned_above_trend"] = round(float(np.mean(residuals)), 2)
                rows.append(row)
    return rows


def figure5_from_table(checkpoints: Sequence[Checkpoint], figure5_models: Mapping[str, bool]
                       ) -> list[dict[str, object]]:
    """Figure 5's r per SugarCrepe category over the paper's models the table holds: from the table's numbers, and
    from the published Table 6 against the table's ImageNet; beside the paper's stated r."""
    cells = {(c.table, c.row, c.column): c.value for c in load_cells("sugarcrepe")}
    claims = {c.claim_id: c for c in load_claims("sugarcrepe")}
    stated = {"swap_obj": claims["sec5.3_r_swap_obj"], "add_att": claims["sec5.3_r_add_att"]}
    others = claims["sec5.3_r_others_gt_0.8"]
    models = [c for c in checkpoints if figure5_models.get(c.zoo)]
    if len(models) < 3:
        raise RecognitionInputError(f"only {len(models)} of Figure 5's models found in the table")
    xs = [c.value(TABLE_KEY, "imagenet") for c in models]
    table6_rows = [f"{spec.family} | {spec.label}" for spec in (get_spec(c.zoo) for c in models)]
    rows = []
    for category in CATEGORIES:
        ys_table = [c.value(SUBSETS_KEY, f"sugarcrepe::{category}") for c in models]
        ys_paper = [cells[("Table 6", row, COLUMNS[category])] for row in table6_rows]
        claim = stated.get(category, others)
        r_table, r_paper_y = pearson_r(xs, ys_table), pearson_r(xs, ys_paper)
        bound = f"{claim.comparison} {claim.text}".replace("= ", "")
        holds = (abs(round(r_table, 2) - (claim.value or 0)) < 1e-9 if claim.comparison == "="
                 else r_table > (claim.value or 0))
        rows.append({"category": category.upper().replace("_", "-"), "n_models": len(models),
                     "r_table": round(r_table, 4), "r_table6_y_table_x": round(r_paper_y, 4),
                     "paper_r": bound, "table_reproduces_paper": holds,
                     "max_abs_y_difference": round(max(abs(a - b) for a, b in zip(ys_table, ys_paper)), 2)})
    return rows


def scatter(checkpoints: Sequence[Checkpoint], corr: Sequence[Mapping[str, object]], out_png: Path) -> Path:
    """A grid: one panel per compositionality column against ImageNet-1k, families coloured, fine-tunes marked."""
    plt = pyplot()
    families = sorted({c.family for c in checkpoints})
    colors = {f: plt.get_cmap("tab20")(i % 20) for i, f in enumerate(families)}
    stats = {(r["column"], r["population"]): r for r in corr if r["x"] == "ImageNet-1k"}
    cols = 5
    rows = math.ceil(len(Y_COLUMNS) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.0 * cols, 3.3 * rows), squeeze=False)
    for ax, y in zip(axes.flat, Y_COLUMNS):
        for c in checkpoints:
            ax.scatter(c.value(TABLE_KEY, "imagenet"), c.value(y.source, y.column), s=30 if c.finetuned else 9,
                       color=colors[c.family], marker="X" if c.finetuned else "o",
                       edgecolors="black" if c.finetuned else "none", linewidths=0.6, alpha=0.85)
        a, p = stats[(y.label, "all")], stats[(y.label, "pretrained")]
        ax.set_title(f"{y.benchmark}: {y.label}\nr={a['pearson']:.2f} [{a['pearson_low']:.2f}, {a['pearson_high']:.2f}]"
                     f"; pre-trained {p['pearson']:.2f} [{p['pearson_low']:.2f}, {p['pearson_high']:.2f}]",
                     fontsize=7)
        ax.tick_params(labelsize=6)
    for ax in list(axes.flat)[len(Y_COLUMNS):]:
        ax.axis("off")
    handles = [plt.Line2D([], [], marker="o", linestyle="", color=colors[f], label=f) for f in families]
    handles.append(plt.Line2D([], [], marker="X", linestyle="", color="grey", markeredgecolor="black",
                              label="compositionality fine-tune (-ft)"))
    fig.legend(handles=handles, loc="lower right", fontsize=7, ncol=2)
    fig.supxlabel("ImageNet-1k zero-shot top-1 (%)")
    fig.suptitle(f"Recognition vs compositionality over {len(checkpoints)} distinct checkpoints (Oh et al.'s table); "
                 "Pearson r with 95% bootstrap interval, all and pre-trained only", fontsize=10)
    fig.tight_layout(rect=(0, 0.01, 1, 0.98))
    return save_figure(fig, out_png, dpi=80)


def headline(checkpoints: Sequence[Checkpoint], corr: Sequence[Mapping[str, object]],
             fig5: Sequence[Mapping[str, object]]) -> dict[str, float | int]:
    """The DVC metrics: sizes, and Pearson r of ImageNet against SugarCrepe's and all benchmarks' averages."""
    def r(column: str, population: str, x: str = "ImageNet-1k", stat: str = "pearson") -> float:
        return next(float(row[stat]) for row in corr if row["x"] == x and row["column"] == column
                    and row["population"] == population)

    return {
        "checkpoints": len(checkpoints),
        "finetuned": sum(c.finetuned for c in checkpoints),
        "r_imagenet_sugarcrepe_all": r("sugarcrepe", "all"),
        "r_imagenet_sugarcrepe_pretrained": r("sugarcrepe", "pretrained"),
        "rho_imagenet_sugarcrepe_all": r("sugarcrepe", "all", stat="spearman"),
        "r_imagenet_comp_avg_all": r("comp_avg", "all"),
        "r_imagenet_comp_avg_pretrained": r("comp_avg", "pretrained"),
        "r_21tasks_sugarcrepe_all": r("sugarcrepe", "all", x="21-task average"),
        "r_imagenet_aro_all": r("aro", "all"),
        "r_imagenet_sugarcrepe_competent": r("sugarcrepe", POPULATIONS[2]),
        "figure5_models_in_table": int(fig5[0]["n_models"]) if fig5 else 0,
        "figure5_categories_reproduced": sum(bool(row["table_reproduces_paper"]) for row in fig5),
    }


def run(out_dir: Path = OUT_DIR, fetcher: Callable[[str], Path] | None = None) -> dict[str, Path]:
    fetch = fetcher or quiet_fetch
    zoo, figure5_models, _ = load_zoo_table()
    checkpoints = load_checkpoints(fetch(TABLE_KEY), fetch(SUBSETS_KEY), zoo)
    corr = correlations(checkpoints)
    fig5 = figure5_from_table(checkpoints, figure5_models)
    listed = [{"arch": c.arch, "pretrained": c.pretrained, "family": c.family, "finetuned": c.finetuned, "zoo": c.zoo,
               "same_numbers_as": "; ".join(c.duplicates),
               **{k: c.value(TABLE_KEY, k) for k in ("imagenet", "21_tasks_avg", "sugarcrepe", "comp_avg")}}
              for c in checkpoints]
    return write_output_group(out_dir, lambda staging: {
        "correlations": write_csv_atomic(staging / "correlations.csv", corr, list(corr[0])),
        "checkpoints": write_csv_atomic(staging / "checkpoints.csv", listed, list(listed[0])),
        "figure5_table": write_csv_atomic(staging / "figure5_table.csv", fig5, list(fig5[0])),
        "metrics": write_json_atomic(staging / "metrics.json", headline(checkpoints, corr, fig5)),
        "figure": scatter(checkpoints, corr, staging / "scatter.png"),
    })


def main(argv: Sequence[str] | None = None) -> int:
    parser = stage_parser(__spec__.name, __doc__)
    parser.add_argument("--out", type=Path, default=OUT_DIR)
    return print_written(run(parser.parse_args(argv).out))


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
