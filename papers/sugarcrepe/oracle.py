"""SugarCrepe's own evaluation as the oracle (``python -m common oracle sugarcrepe``; ``common.oracle``).

SugarCrepe's evaluation script (``SCRIPT`` at the pinned commit of ``REPO``) runs as released, once per Table 6 row
scored here, on the full set's files and with ``--model``/``--pretrained`` as its own model list spells the row
(``authors_arguments``). Its per-category accuracies are set beside ``table6.csv`` at the paper's printed precision,
and each example's decision beside ``predictions/<model>.csv``: ``text_retrieval``'s return value
(``common.oracle.observe``), ``RAIVNLab/sugar-crepe@0047054b main_eval.py:54`` "return 1 if pos_score.item() >
neg_score.item() else 0" (a tie is wrong). Then every row of Tables 5 and 10 through the same script (``table5_runs``).

Replaced: the script's ``RAIVNLab/sugar-crepe@0047054b main_eval.py:33`` "model, _, transform =
open_clip.create_model_and_transforms(" builds what it built under the open_clip of its time, v2.20
(``common.oracle.models.open_clip_as_of_their_time``). In a rehearsal the architectures are the copy's shrunk ones
(``VLC_ARCH_OVERRIDES``) and the weights the stand-ins in its hub cache, which the authors' call finds on its own.
"""
from __future__ import annotations

import json
from pathlib import Path

from common.benchmarks.caption_negatives import CATEGORIES, PreparedSet, read_category
from common.oracle.authors import command_line, run_script
from common.oracle.core import NotCovered, PaperOracle, compare_decisions
from common.oracle.models import link, open_clip_as_of_their_time, weights_file
from common.oracle.observe import returns_of
from common.oracle.ours import number, our_predictions, rows_by
from common.paths import build_root
from common.zoo import get_spec, with_variants
from common.zoo.specs import register_local_configs

REPO = "RAIVNLab/sugar-crepe"
SCRIPT = "main_eval"
"""The release's evaluation script (a module of its root)."""
BENCHMARK = "SugarCrepe"
TABLE5 = "SugarCrepe, Tables 5 and 10's runs"
DECIMALS = 1
"""Table 6 prints accuracies in percent with one decimal."""
LOAD_MODEL = "main_eval load_model"
"""The function of the script that builds each model (``open_clip.create_model_and_transforms``)."""
QUICK_GELU_WHY = ("what it built under the open_clip of its time (v2.20: QuickGELU, as trained); open_clip {version} "
                  "builds GELU there and warns (common/zoo/specs.py activation_mismatch)")
"""Why the ``openai`` tag is built with ``force_quick_gelu=True``, as the report says it."""


def authors_arguments(name: str) -> tuple[str, str]:
    """(``--model``, ``--pretrained``) as the script's model list spells zoo model ``name``: the OpenAI rows by their
    bare architecture (``RAIVNLab/sugar-crepe@0047054b main_eval.py:15`` "('ViT-B-32', 'openai'),"), a QuickGELU
    variant by the ``-quickgelu`` architecture (``RAIVNLab/sugar-crepe@0047054b main_eval.py:19`` "#
    ('ViT-B-32-quickgelu', 'datacomp_s_s13m_b4k'),"), every other row by its
    open_clip architecture and tag."""
    spec = get_spec(name)
    if spec.backend != "open_clip" or spec.pretrained is None:
        raise ValueError(f"{name}: the authors' script loads open_clip pretrained tags only")
    if spec.pretrained == "openai":
        return spec.arch.removesuffix("-quickgelu"), spec.pretrained
    if spec.force_quick_gelu:
        return spec.arch.removesuffix("-quickgelu") + "-quickgelu", spec.pretrained
    return spec.arch, spec.pretrained


def run_weights(ctx, name: str) -> str:
    """``--pretrained`` for a Table 5/10 row: ``openai`` for the pretrained base, else the row's weights file linked
    into the working directory under a plain name (the script names its output file after ``--pretrained``, so a
    path with folders in it would not be written)."""
    # deferred: loads PIL, torch, tqdm only when called
    from papers.sugarcrepe.negclip_tables import OUT

    prefix = "sugarcrepe/full-"
    if name.startswith(prefix):  # a run of the pipeline's own (negclip-full@<run>), not a zoo entry
        source = build_root() / "full" / OUT / "models" / f"{name.removeprefix(prefix)}.safetensors"
    elif get_spec(name).pretrained == "openai":
        return "openai"
    else:
        source = weights_file(name)
    target = ctx.scratch / f"{name.replace('/', '__')}{source.suffix}"
    link(source, target)
    return target.name


def table5_runs(ctx, code, oracle: PaperOracle, results: Path, prepared, reason: str | None) -> None:
    """Tables 5 and 10's SugarCrepe columns: every row through the same script with its weights file, the
    per-category accuracies pooled as ``negclip_tables.SUGARCREPE_GROUPS`` pools them (micro average)."""
    # deferred: loads PIL, torch, tqdm only when called
    from papers.sugarcrepe.negclip_tables import SUGARCREPE_GROUPS

    rows = rows_by(results / "table5.csv", "model", optional=True)
    for name, row in rows_by(results / "table10.csv", "model", optional=True).items():
        rows.setdefault(name, row)
    counts = {c: len(read_category(prepared.data_dir / f"{c}.json")) for g in SUGARCREPE_GROUPS.values() for c in g}
    for name, row in rows.items():
        arch, pretrained = row["arch"], run_weights(ctx, name)
        out = ctx.scratch / "table5" / name.replace("/", "__")
        argv = ["--model", arch.removesuffix("-quickgelu") if pretrained == "openai" else arch, "--pretrained",
                pretrained, "--data_root", str(prepared.data_dir), "--coco_image_root", str(prepared.image_root),
                "--output", str(out)]
        with open_clip_as_of_their_time(ctx, LOAD_MODEL, QUICK_GELU_WHY):
            run_script(code, SCRIPT, argv, cwd=ctx.scratch)
        oracle.ran.append(command_line(code, SCRIPT, argv) + f"  [{name}]")
        metrics = json.loads((out / f"{argv[1]}-{Path(pretrained).name}.json").read_text(encoding="utf-8"))
        for group, members in SUGARCREPE_GROUPS.items():
            pooled = sum(metrics[c] * counts[c] for c in members) / sum(counts[c] for c in members)
            oracle.numbers.append(number(TABLE5, name, group, 100 * pooled, row.get(f"sugarcrepe_{group}"), DECIMALS,
                                         reason))


def run(ctx) -> PaperOracle:
    results = ctx.results("sugarcrepe")
    code = ctx.code(REPO)
    prepared = PreparedSet.load(build_root() / "full" / "sugarcrepe" / "manifest.json")
    context = json.loads((results / "table6_context.json").read_text(encoding="utf-8"))
    precision = context.get("engine", {}).get("precision", "fp32")
    reason = None if precision == "fp32" else (f"this workspace scored at {precision} (params.yaml engine); "
                                               "the authors' script at fp32")
    rows = rows_by(results / "table6.csv", "model")
    oracle = PaperOracle("sugarcrepe", code=[code.pinned])
    register_local_configs()  # a rehearsal's shrunk architectures (VLC_ARCH_OVERRIDES); nothing otherwise
    for name in with_variants(ctx.params["sugarcrepe"]["models"]["full"]):
        arch, tag = authors_arguments(name)
        out = ctx.scratch / name.replace("/", "__")
        argv = ["--model", arch, "--pretrained", tag, "--data_root", str(prepared.data_dir),
                "--coco_image_root", str(prepared.image_root), "--output", str(out)]
        with open_clip_as_of_their_time(ctx, LOAD_MODEL, QUICK_GELU_WHY), \
                returns_of(code.module_file(SCRIPT), "text_retrieval", ("c", "i")) as seen:
            run_script(code, SCRIPT, argv, cwd=ctx.scratch)
        oracle.ran.append(command_line(code, SCRIPT, argv))
        metrics = json.loads((out / f"{arch}-{tag}.json").read_text(encoding="utf-8"))
        ours = rows.get(name, {})
        for category in CATEGORIES:
            oracle.numbers.append(number(BENCHMARK, name, category, 100 * metrics[category], ours.get(category),
                                         DECIMALS, reason))
        authors = {f"{c['c']}/{c['i']}": value == 1 for c, value in zip(seen.callers, seen.values)}
        decided, _ = our_predictions(results / "predictions" / f"{name.replace('/', '__')}.csv")
        oracle.decisions.append(compare_decisions(BENCHMARK, name, authors, decided, reason))
    table5_runs(ctx, code, oracle, results, prepared, reason)
    oracle.not_covered += [
        NotCovered("Table 4 and Table 6's Vera/Grammar rows (blind attacks), the adversarial refinement",
                   "released at the same commit (scripts text_model_eval and adversarial_refine), but not among the "
                   "mirrored files (the registry's authors-code group holds the main_eval script alone), so not "
                   "fetchable offline"),
        NotCovered("Tables 5 and 10's ARO+CREPE columns", "the release has no evaluation of the rule-based "
                   "negatives: its main_eval script reads SugarCrepe's seven category files only"),
        NotCovered("Figure 5 and the recognition trend", "computed from published numbers (open_clip's and Oh et "
                   "al.'s tables), no model run: nothing for the authors' code to recompute")]
    return oracle
