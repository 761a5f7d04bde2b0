"""SugarCrepe numbers recomputed from released artifacts (Hsieh et al., NeurIPS 2023 D&B), every file fetched
through the checksum-verifying downloader; one that cannot be fetched files its part as NaN with the error.

* **GPT-4V (Table 6 row "OpenAI | GPT-4V" and the "GPT-4V readme" cells)** from GPT-4V's released answers, in two
  settings (``positive-first``: the positive caption is option (1); ``negative-first``). The prompt ends "Output (1)
  or (2).", so an answer is option 1 when it mentions "(1)" and not "(2)", option 2 the other way round; anything else
  is *unparseable* and counted wrong. One file's top-level ``"accuracy": 0.8577`` is metadata, skipped and counted.
  Table 6 reports per category the mean of the two settings (x 100), and its Average the mean of the seven.
* **Figure 5 (claims sec5.3_r_*)**: Pearson r between open_clip's published ImageNet-1k zero-shot top-1
  (``mlfoundations/open_clip@89fb801f docs/openclip_results.csv``, column "ImageNet 1k", a fraction) and each published
  Table 6 column over the paper's 17 pretrained CLIPs, each matched on (arch, tag), else (arch + "-quickgelu", tag).
* **Table 2 counts and the "7,512 examples" claim** from the released benchmark JSON (``data/<category>.json`` of
  RAIVNLab/sugar-crepe@0047054b, e.g. ``RAIVNLab/sugar-crepe@0047054b data/swap_obj.json``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from common.audit.core import CLAIM_TABLE, AuditError, Recomputed
from common.benchmarks.caption_negatives import CATEGORIES, COLUMNS, category_counts, released_file_key
from common.files.jsonl import parse_json
from common.files.tasks import DatasetError
from common.pipeline.params import read_params, section
from common.registry.errors import FetchError, RegistryError
from common.registry.fetch import quiet_fetch
from common.registry.sources import get_source
from common.reporting.figures import pyplot, save_figure
from common.reporting.published import load_cells, load_claims, parse_number, read_csv_rows
from common.zoo import get_spec

PAPER = "sugarcrepe"
DATA_FILES = ("papers/sugarcrepe/sources.toml",)
"""Read at run time (``common.pipeline.stage_deps``): this paper's download-registry entries."""
PROFILE = "released"
SETTINGS: tuple[str, ...] = ("positive-first", "negative-first")
POSITIVE_OPTION = {"positive-first": 1, "negative-first": 2}
"""Which option number is the positive caption in each setting (the readme's caption1 in positive-first)."""

TABLE6 = "Table 6"
TABLE2 = "Table 2"
README_TABLE = "GPT-4V readme"
GPT4V_ROW = "OpenAI | GPT-4V"
TABLE2_ROW = "# negative captions"
SHORT = {"replace_obj": "REPLACE-Obj", "replace_att": "REPLACE-Att", "replace_rel": "REPLACE-Rel",
         "swap_obj": "SWAP-Obj", "swap_att": "SWAP-Att", "add_obj": "ADD-Obj", "add_att": "ADD-Att"}

IMAGENET_COLUMN = "ImageNet 1k"
OPENCLIP_RESULTS_KEY = "openclip/docs/openclip_results.csv"
FAMILY_COLORS = {"OpenAI": "tab:blue", "LAION": "tab:orange", "DataComp": "tab:green"}
"""Figure 5's pretraining sources, coloured alike in the audit's redrawn figure and the full profile's."""
FIGURE5_FAMILIES = tuple(FAMILY_COLORS)
CLAIM_R = {"swap_obj": "sec5.3_r_swap_obj", "add_att": "sec5.3_r_add_att"}
CLAIM_R_OTHERS = "sec5.3_r_others_gt_0.8"
CLAIM_TOTAL = "sec4.2_total_examples"


def gpt4v_key(setting: str, category: str) -> str:
    """Download-registry key of GPT-4V's released answers for one setting and category."""
    return f"sugarcrepe/gpt-4v-results/{setting}/gpt4v-{category}.json"


def _source_of(key: str) -> str:
    """'<owner>/<repo>@<commit[:7]> <path>' for a registry key (falls back to the key)."""
    url = get_source(key).url or ""
    parts = url.split("raw.githubusercontent.com/", 1)
    if len(parts) == 2:
        owner, repo, commit, path = parts[1].split("/", 3)
        return f"{owner}/{repo}@{commit[:7]} {path}"
    return key


def parse_choice(answer: str) -> int | None:
    """GPT-4V's option: 1 or 2 when exactly one of "(1)" / "(2)" occurs in the answer, else None (unparseable)."""
    return {(True, False): 1, (False, True): 2}.get(("(1)" in answer, "(2)" in answer))


@dataclass(frozen=True)
class GPT4VScore:
    """One released answer file, scored."""

    setting: str
    category: str
    total: int
    correct: int
    unparseable: int
    ids: frozenset[str]
    skipped: tuple[str, ...] = ()
    """Top-level entries that are not examples (e.g. "accuracy")."""
    flag_disagreements: int = 0
    """Examples where our decision differs from the file's own ``correct`` flag."""
    flags_checked: int = 0

    @property
    def accuracy(self) -> Fraction:
        return Fraction(self.correct, self.total)


def score_gpt4v_file(path: Path, setting: str, category: str) -> GPT4VScore:
    """Score one ``gpt4v-<category>.json``; unparseable answers are wrong (and counted), nothing is dropped."""
    if setting not in POSITIVE_OPTION:
        raise AuditError(f"{path}: unknown GPT-4V setting {setting!r} (expected one of {SETTINGS})")
    data = _read_released_json(Path(path), "GPT-4V answers", "answers")
    total = correct = unparseable = disagreements = checked = 0
    ids: set[str] = set()
    skipped: list[str] = []
    for example_id, record in data.items():
        if not isinstance(record, dict):
            skipped.append(example_id)  # e.g. "accuracy": 0.8577, a summary the authors stored in the file
            continue
        answer = record.get("answer")
        text = answer.get("free_form_answer") if isinstance(answer, dict) else answer
        if not isinstance(text, str):
            raise AuditError(f"{path}: example {example_id!r} has no free-form answer")
        choice = parse_choice(text)
        ok = choice == POSITIVE_OPTION[setting]
        total += 1
        correct += ok
        unparseable += choice is None
        ids.add(example_id)
        if isinstance(record.get("correct"), bool):
            checked += 1
            disagreements += ok != record["correct"]
    if total == 0:
        raise AuditError(f"{path}: no examples")
    return GPT4VScore(setting, category, total, correct, unparseable, frozenset(ids), tuple(skipped),
                      disagreements, checked)


def gpt4v_scores(
    paths: Mapping[tuple[str, str], Path] | None = None, fetcher: Callable[[str], Path] | None = None,
) -> dict[tuple[str, str], GPT4VScore]:
    """(setting, category) -> score; ``paths`` defaults to all 14 released files through ``fetcher``."""
    if paths is None:
        fetch_path = fetcher or quiet_fetch
        paths = {(s, c): fetch_path(gpt4v_key(s, c)) for s in SETTINGS for c in CATEGORIES}
    return {(s, c): score_gpt4v_file(p, s, c) for (s, c), p in paths.items()}


def _score_text(sc: GPT4VScore) -> str:
    text = f"{sc.setting} {sc.correct}/{sc.total}"
    if sc.unparseable:
        text += f" ({sc.unparseable} unparseable answer(s) counted wrong)"
    return text


def gpt4v_recomputed(
    scores: Mapping[tuple[str, str], GPT4VScore],
    source: Callable[[str, str], str] | None = None,
    extra_notes: Mapping[str, str] | None = None,
) -> list[Recomputed]:
    """Table 6 GPT-4V cells (mean of the two settings, x100; a category needs both, the Average all seven) and the
    readme's per-setting cells; ``extra_notes`` (category -> text) is appended to that category's notes."""
    source = source or (lambda setting, category: f"released GPT-4V answers {setting}/gpt4v-{category}.json")
    extra = {category: f"; {note}" for category, note in (extra_notes or {}).items()}
    recs: list[Recomputed] = []
    parse_rule = ("answer read as option 1/2 when exactly one of '(1)'/'(2)' occurs; otherwise unparseable and "
                  "counted wrong")
    for (setting, category), sc in scores.items():
        agree = (f"; agrees with the file's own `correct` flag on {sc.flags_checked - sc.flag_disagreements}/"
                 f"{sc.flags_checked} examples" if sc.flags_checked else "")
        skipped = f"; skipped non-example entries {list(sc.skipped)}" if sc.skipped else ""
        note = f"{_score_text(sc)}; {parse_rule}{agree}{skipped}{extra.get(category, '')}"
        src = source(setting, category)
        recs += [Recomputed(PAPER, README_TABLE, setting, column, value, unit, src, PROFILE, "exact", note=note)
                 for column, value, unit in ((category, float(sc.accuracy), "fraction"),
                                             (f"{category} | correct", float(sc.correct), "count"),
                                             (f"{category} | total", float(sc.total), "count"))]
    averaged: dict[str, Fraction] = {}
    for category in CATEGORIES:
        pair = [scores.get((s, category)) for s in SETTINGS]
        if any(p is None for p in pair):
            continue
        mean = (pair[0].accuracy + pair[1].accuracy) / 2
        averaged[category] = mean
        note = (f"mean of positive-first and negative-first accuracy: ({_score_text(pair[0])}, "
                f"{_score_text(pair[1])}); {parse_rule}{extra.get(category, '')}")
        recs.append(Recomputed(
            PAPER, TABLE6, GPT4V_ROW, COLUMNS[category], float(100 * mean), "percent",
            f"{source('positive-first', category)} + {source('negative-first', category)}", PROFILE, "exact",
            note=note,
        ))
    if len(averaged) == len(CATEGORIES):
        avg = sum(averaged.values()) / len(averaged)
        recs.append(Recomputed(
            PAPER, TABLE6, GPT4V_ROW, "Average", float(100 * avg), "percent",
            "released GPT-4V answers, 14 files (7 categories x 2 settings)", PROFILE, "exact",
            note="unweighted mean of the 7 per-category (two-setting mean) accuracies",
        ))
    return recs


@dataclass(frozen=True)
class ModelRef:
    """One Table 6 model: its row key and open_clip (arch, pretrained tag)."""

    row: str
    arch: str
    pretrained: str


@dataclass(frozen=True)
class ModelMatch:
    model: ModelRef
    csv_name: str | None
    """The open_clip CSV's ``name`` that matched (None: not found)."""
    csv_pretrained: str | None
    imagenet: float | None
    """ImageNet-1k zero-shot top-1, a fraction as in the CSV."""
    how: str
    """"exact", "quickgelu alias" or "missing"."""
    also_listed_as: tuple[str, ...] = field(default=())
    """Other CSV names with the same tag and an equal value (e.g. the '-quickgelu' twin of an OpenAI model)."""


def imagenet_top1(csv_path: Path) -> dict[tuple[str, str], float]:
    """(name, pretrained) -> ImageNet-1k top-1 from open_clip's ``openclip_results.csv``, read strictly
    (``common.reporting.published.read_csv_rows``; a value must be a plain finite number: an error names file, line, column)."""
    _, rows = read_csv_rows(csv_path, AuditError, bom="strip", required=("name", "pretrained", IMAGENET_COLUMN))
    out: dict[tuple[str, str], float] = {}
    first: dict[tuple[str, str], int] = {}
    for line, row in rows:
        key = (row["name"].strip(), row["pretrained"].strip())
        if key in out:
            raise AuditError(f"{csv_path}:{line}: row {key} again (first on line {first[key]}); fetch the file again")
        try:
            out[key] = parse_number(row[IMAGENET_COLUMN].strip())
        except ValueError as exc:
            raise AuditError(f"{csv_path}:{line}: column {IMAGENET_COLUMN!r}: {exc}; fetch the file again") from None
        first[key] = line
    return out


def figure5_models(model_names: Sequence[str] | None = None) -> list[ModelRef]:
    """The paper's 17 pretrained CLIPs (Table 6 order): ``model_names`` (default ``sugarcrepe.models.full``) with an
    open_clip pretrained tag (not NegCLIP, which has a checkpoint instead)."""
    if model_names is None:
        model_names = section(read_params(), "sugarcrepe.models.full")
    return [ModelRef(f"{s.family} | {s.label}", s.arch, s.pretrained) for s in map(get_spec, model_names)
            if s.family in FIGURE5_FAMILIES and s.pretrained]


def match_models(imagenet: Mapping[tuple[str, str], float], models: Sequence[ModelRef]) -> list[ModelMatch]:
    """Match each model to a CSV row: (arch, tag) exactly, else (arch + '-quickgelu', tag)."""
    out = []
    for m in models:
        candidates = [(m.arch, "exact"), (f"{m.arch}-quickgelu", "quickgelu alias")]
        if m.arch.endswith("-quickgelu"):
            candidates.append((m.arch.removesuffix("-quickgelu"), "without -quickgelu"))
        for name, how in candidates:
            if (name, m.pretrained) in imagenet:
                value = imagenet[(name, m.pretrained)]
                twins = tuple(n for (n, t), v in imagenet.items()
                              if t == m.pretrained and n != name and v == value
                              and n.removesuffix("-quickgelu") == m.arch.removesuffix("-quickgelu"))
                out.append(ModelMatch(m, name, m.pretrained, value, how, twins))
                break
        else:
            out.append(ModelMatch(m, None, None, None, "missing"))
    return out


def pearson_r(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Pearson's r (NaN with fewer than 3 points or zero variance)."""
    if len(xs) != len(ys):
        raise ValueError("pearson_r: x and y differ in length")
    n = len(xs)
    if n < 3:
        return math.nan
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx == 0 or syy == 0:
        return math.nan
    return sxy / math.sqrt(sxx * syy)


def figure5_points(
    matches: Sequence[ModelMatch], table6: Mapping[tuple[str, str], float], columns: Mapping[str, str] = COLUMNS
) -> dict[str, tuple[list[str], list[float], list[float]]]:
    """category -> (rows, ImageNet top-1 in %, Table 6 accuracy of its column) over matched models with a published
    value."""
    out = {}
    for category, column in columns.items():
        kept = [m for m in matches if m.imagenet is not None and (m.model.row, column) in table6]
        out[category] = ([m.model.row for m in kept], [100.0 * m.imagenet for m in kept],
                         [table6[(m.model.row, column)] for m in kept])
    return out


def figure5_correlations(
    matches: Sequence[ModelMatch], table6: Mapping[tuple[str, str], float]
) -> dict[str, float]:
    """category -> Pearson r between ImageNet top-1 and the published Table 6 accuracy."""
    return {c: pearson_r(xs, ys) for c, (_, xs, ys) in figure5_points(matches, table6).items()}


def _match_table(matches: Sequence[ModelMatch]) -> str:
    parts = []
    for m in matches:
        if m.imagenet is None:
            parts.append(f"{m.model.row} -> MISSING ({m.model.arch}, {m.model.pretrained})")
            continue
        twin = f", also listed as {'/'.join(m.also_listed_as)}" if m.also_listed_as else ""
        parts.append(f"{m.model.row} -> {m.csv_name}/{m.csv_pretrained} {m.imagenet:.4f} [{m.how}{twin}]")
    return "; ".join(parts)


def figure5_recomputed(
    matches: Sequence[ModelMatch], table6: Mapping[tuple[str, str], float], source: str
) -> list[Recomputed]:
    """The Sec 5.3 correlation claims: r for SWAP-Obj and ADD-Att, and min r over the other five categories."""
    rs = figure5_correlations(matches, table6)
    n = sum(m.imagenet is not None for m in matches)
    missing = [m.model.row for m in matches if m.imagenet is None]
    base = (f"Pearson r over {n} pretrained CLIPs (ImageNet-1k zero-shot top-1 from open_clip vs published "
            f"Table 6 accuracy)" + (f"; not in open_clip's CSV: {missing}" if missing else ""))
    all_r = ", ".join(f"{SHORT[c]} {r:.4f}" for c, r in rs.items())
    recs = [Recomputed(PAPER, CLAIM_TABLE, claim_id, "value", rs[category], "other", source, PROFILE, "claim",
                       note=f"{base}; all r: {all_r}") for category, claim_id in CLAIM_R.items()]
    others = {c: r for c, r in rs.items() if c not in CLAIM_R}
    worst = min(others, key=lambda c: others[c])
    recs.append(Recomputed(
        PAPER, CLAIM_TABLE, CLAIM_R_OTHERS, "value", others[worst], "other", source, PROFILE, "claim",
        note=f"minimum r over the other five categories ({SHORT[worst]}); {base}; all r: {all_r}; "
             f"models: {_match_table(matches)}",
    ))
    return recs


def figure5_inputs(fetcher: Callable[[str], Path] | None = None, model_names: Sequence[str] | None = None):
    csv_path = (fetcher or quiet_fetch)(OPENCLIP_RESULTS_KEY)
    matches = match_models(imagenet_top1(csv_path), figure5_models(model_names))
    table6 = {(c.row, c.column): c.value for c in load_cells(PAPER) if c.table == TABLE6 and c.value is not None}
    return matches, table6, _source_of(OPENCLIP_RESULTS_KEY)


def draw_figure5(out_png: Path, matches: Sequence[ModelMatch] | None = None,
                 table6: Mapping[tuple[str, str], float] | None = None) -> Path:
    """Figure 5 redrawn: one panel per category, one point per pretrained CLIP, Pearson r in each title."""
    plt = pyplot()
    if matches is None or table6 is None:
        m2, t2, _ = figure5_inputs()
        matches = m2 if matches is None else matches
        table6 = t2 if table6 is None else table6
    points = figure5_points(matches, table6)
    fig, axes = plt.subplots(2, 4, figsize=(14, 6.6))
    flat = list(axes.flat)
    for ax, (category, (rows, xs, ys)) in zip(flat, points.items()):
        for family, color in FAMILY_COLORS.items():
            pts = [(x, y) for r, x, y in zip(rows, xs, ys) if r.startswith(family + " |")]
            if pts:
                ax.scatter(*zip(*pts), s=22, color=color, label=family, alpha=0.85)
        r = pearson_r(xs, ys)
        ax.set_title(f"{SHORT[category]}  (r = {r:.2f}, n = {len(xs)})", fontsize=10)
        ax.set_xlabel("ImageNet zero-shot top-1 (%)", fontsize=8)
        ax.set_ylabel("SugarCrepe accuracy (%)", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    handles, labels = flat[0].get_legend_handles_labels()
    flat[-1].axis("off")
    flat[-1].legend(handles, labels, loc="center", title="pretraining source", fontsize=9)
    fig.suptitle("SugarCrepe Figure 5 (recomputed): published Table 6 accuracy vs open_clip ImageNet-1k "
                 "zero-shot top-1", fontsize=11)
    fig.tight_layout()
    return save_figure(fig, out_png)


def table2_recomputed(counts: Mapping[str, int], source: str, notes: Mapping[str, str] | None = None) -> list[Recomputed]:
    """Table 2's per-category counts and the "7,512 examples" claim (when all seven categories are counted)."""
    notes = notes or {}
    recs = [Recomputed(PAPER, TABLE2, TABLE2_ROW, COLUMNS[c], float(n), "count", source, PROFILE, "exact",
                       note=f"examples in the released data/{c}.json" + (f"; {notes[c]}" if c in notes else ""))
            for c, n in counts.items()]
    if set(counts) == set(CATEGORIES):
        total = sum(counts.values())
        detail = "; ".join(notes.values())
        recs.append(Recomputed(PAPER, CLAIM_TABLE, CLAIM_TOTAL, "value", float(total), "count", source, PROFILE,
                               "exact", note="total examples over the 7 released category files"
                               + (f"; {detail}" if detail else "")))
    return recs


def _read_released_json(path: Path, what: str, values: str) -> dict[str, Any]:
    """A released JSON file, an object mapping example ids to ``values``: unreadable, malformed, too deep, an id twice
    or not an object is one ``AuditError`` naming it."""
    try:
        data = parse_json(path.read_text(encoding="utf-8"), path, unique_keys=True)
    except (OSError, UnicodeDecodeError) as exc:
        raise AuditError(f"{path}: cannot read {what}: {exc}") from exc
    except DatasetError as exc:
        raise AuditError(f"{exc} (in the {what})") from None
    if not isinstance(data, dict):
        raise AuditError(f"{path}: expected an object mapping example ids to {values}, got {type(data).__name__}")
    return data


def _keep_published(recs: list[Recomputed]) -> list[Recomputed]:
    """Drop recomputations of cells the paper leaves empty (not_reported); a key that matches nothing is a bug."""
    cells = {c.key: c for c in load_cells(PAPER)}
    claims = {(CLAIM_TABLE, c.claim_id, "value") for c in load_claims(PAPER)}
    unknown = [r.key for r in recs if r.key not in cells and r.key not in claims]
    if unknown:
        raise AuditError(f"released_sugarcrepe: recomputation(s) match no published cell or claim: {unknown}")
    return [r for r in recs if r.key in claims or cells[r.key].value is not None]


def _unavailable(keys: Iterable[tuple[str, str, str, str]], source: str, exc: Exception) -> list[Recomputed]:
    """NaN recomputations ("not recomputed yet") for (table, row, column, unit) keys, with the fetch error."""
    first = (str(exc).splitlines() or [""])[0][:300]
    return [Recomputed(PAPER, t, r, c, math.nan, u, source, PROFILE, "exact" if t != CLAIM_TABLE else "claim",
                       note=f"not recomputed yet: a released file could not be fetched ({type(exc).__name__}: {first})")
            for t, r, c, u in keys]


def recompute(fetcher: Callable[[str], Path] | None = None, model_names: Sequence[str] | None = None) -> list[Recomputed]:
    """Every SugarCrepe number recomputed here from released files; ``fetcher``: registry key -> verified path."""
    fetch_path = fetcher or quiet_fetch
    unavailable = (FetchError, RegistryError, OSError)
    recs: list[Recomputed] = []

    # Table 2 and the "7,512 examples" claim: the released benchmark JSON.
    counts: dict[str, int] | None = None
    released_ids: dict[str, set[str]] = {}
    try:
        released = {c: fetch_path(released_file_key(c)) for c in CATEGORIES}
        counts = category_counts(released)
        for category, path in released.items():  # each file an object keyed by example id
            released_ids[category] = set(_read_released_json(Path(path), "released SugarCrepe file", "examples"))
    except unavailable as exc:
        recs += _unavailable([(TABLE2, TABLE2_ROW, col, "count") for col in COLUMNS.values()]
                             + [(CLAIM_TABLE, CLAIM_TOTAL, "value", "count")], "sugarcrepe/data/*.json", exc)

    # GPT-4V: the 14 answer files.
    notes: dict[str, str] = {}
    try:
        scores = gpt4v_scores(fetcher=fetch_path)
    except unavailable as exc:
        keys = [(TABLE6, GPT4V_ROW, col, "percent") for col in (*COLUMNS.values(), "Average")]
        keys += [(README_TABLE, s, column, unit) for s in SETTINGS for c in CATEGORIES
                 for column, unit in ((c, "fraction"), (f"{c} | correct", "count"), (f"{c} | total", "count"))]
        recs += _unavailable(keys, "sugarcrepe/gpt-4v-results/*", exc)
    else:
        # Where GPT-4V answered examples that the released benchmark does not hold (or vice versa), say so.
        for category in CATEGORIES if counts is not None else ():
            answered = set().union(*(scores[(s, category)].ids for s in SETTINGS))
            extra, absent = sorted(answered - released_ids[category]), sorted(released_ids[category] - answered)
            if extra or absent:
                notes[category] = (f"released data/{category}.json holds {counts[category]} examples; GPT-4V answered "
                                   f"{len(answered)}" + (f" incl. id(s) {extra} absent from the released file" if extra else "")
                                   + (f"; released id(s) {absent} not answered" if absent else ""))
        gpt_notes = dict(notes)
        rel = scores[("negative-first", "replace_rel")]
        extra_note = (f"negative-first replace_rel is blank in the readme version transcribed; recomputed "
                      f"{rel.correct}/{rel.total} = {float(rel.accuracy):.4f}")
        gpt_notes["replace_rel"] = f"{gpt_notes['replace_rel']}; {extra_note}" if "replace_rel" in gpt_notes else extra_note
        recs += gpt4v_recomputed(scores, lambda s, c: _source_of(gpt4v_key(s, c)), gpt_notes)

    # Figure 5: open_clip's ImageNet results against the published Table 6.
    try:
        matches, table6, source = figure5_inputs(fetch_path, model_names)
    except unavailable as exc:
        recs += _unavailable([(CLAIM_TABLE, cid, "value", "other") for cid in (*CLAIM_R.values(), CLAIM_R_OTHERS)],
                             OPENCLIP_RESULTS_KEY, exc)
    else:
        recs += figure5_recomputed(matches, table6, f"{source} + published Table 6")

    if counts is not None:
        commit_source = _source_of(released_file_key(CATEGORIES[0])).rsplit(" ", 1)[0] + " data/<category>.json"
        recs += table2_recomputed(counts, commit_source, notes)
    return _keep_published(recs)
