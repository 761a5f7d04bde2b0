"""Hard positives' own evaluation as the oracle (``python -m common oracle hard_positives``; ``common.oracle``): the
release's ``run_eval`` script run as released, once per row this workspace scored and per part (``PARTS``), beside
this workspace's numbers and decisions. What it runs, compares, replaces and leaves out, with the authors' lines: the
README's "The authors' code as the oracle".
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ContextManager, Mapping

import numpy as np

from common.files.io import sha256_file, write_json_atomic, write_text_atomic
from common.oracle.authors import OracleError, command_line, importable, module_path, printed, run_script
from common.oracle.core import NotCovered, PaperOracle, compare_decisions
from common.oracle.models import as_clip_archive, clip_load_from, link, save
from common.oracle.observe import returns_of
from common.oracle.ours import number, our_predictions, rows_by
from common.paths import build_root
from common.zoo import get_spec
from common.zoo.specs import register_local_configs

REPO = "amitakamath/hard_positives"
CLIP_REPO = "openai/CLIP"
SCRIPT = "run_eval"
DECIMALS = 1
"""Tables 1 and 3 print accuracies and Brittleness in percent with one decimal."""
TABLE2_DECIMALS = 3
"""Table 2 prints mean scores with three decimals."""
ROOT_DIR, SWAPPED_DIR = "data", "swapped_data"
"""Where the script reads c, c_n (``data/``) and c_p, c_n (``swapped_data/``), relative to its cwd
(``amitakamath/hard_positives@33addaae run_eval.py:43-44`` "root_dir =", then ``swapped_dir``)."""
MODELS_DIR = Path("replace") / "models"
"""Where the CREPE models and the fine-tunes are read from (``amitakamath/hard_positives@33addaae
model_zoo/__init__.py:99`` "replace/models/{}.pt")."""


@dataclass(frozen=True)
class Part:
    """One ``dataset_name`` of the script, the benchmark and group it is here, and its cells' prefix there."""

    dataset: str
    benchmark: str
    group: str
    key_prefix: str = ""


PARTS = (Part("replace_att", "REPLACE", "replace-attributes", "attributes: "),
         Part("replace_rel", "REPLACE", "replace-relations", "relations: "),
         Part("swap", "SWAP", "swap"))
COLUMNS = {"REPLACE": ("replace-attributes", "replace-relations"), "SWAP": ("swap",)}
"""Table 1's columns: the unweighted mean of their parts (the caption of Table 1)."""
METRICS = (("orig", "Orig. Test Acc."), ("aug", "Aug. Test Acc."), ("brittleness", "Brittleness"))
TABLE2 = (("mean_original", "c"), ("mean_negative", "c_n"), ("mean_positive", "c_p"))
"""Table 2's columns as the paper orders them, by ``groups.csv``'s / ``table2.csv``'s names (``replace_<name>``)."""

GELU_BUILDS = {"aro/negclip-gelu": "NegCLIP", "hard_positives/crepe-swap-gelu": "crepe_ft_swap",
               "hard_positives/crepe-replace-gelu": "crepe_ft_replace"}
"""Zoo model -> the script's name for it (``amitakamath/hard_positives@33addaae run_eval.py:28-29``
"crepe_ft_replace", among the choices of its ``model_name``)."""
RUN_NAMES = {"clip-ft": "coco_control", "hn": "coco_crepe_negs", "hp-hn": "coco_crepe_negs_hard_pos",
             "hp-hn-swap": "coco_crepe_negs_hard_pos_swap_only",
             "hp-hn-replace": "coco_crepe_negs_hard_pos_replace_only", "ratio-0": "coco_crepe_pos",
             "ratio-0.25": "coco_crepe_negs_hard_pos_25", "ratio-0.5": "coco_crepe_negs_hard_pos_50",
             "ratio-0.75": "coco_crepe_negs_hard_pos_75"}
"""A run of ``papers.hard_positives.runs`` -> the ``coco_*`` name of the same fine-tune among the script's choices
(``amitakamath/hard_positives@33addaae run_eval.py:32-36`` "coco_crepe_negs_hard_pos_replace_only"; "coco_control"
the COCO-only control, "coco_crepe_pos" hard positives only, i.e. hard-negative weight 0)."""
GET_MODEL_CALL = 'run_eval main: get_model(model_name=model_name, device="cuda", root_dir=root_dir)'
CLIP_LOAD_CALL = ("model_zoo get_model: clip.load(variant, device=device, download_root=root_dir), which downloads "
                  "OpenAI's file")
"""The authors' calls replaced, as the output names them (their module and function)."""


@dataclass(frozen=True)
class AuthorsRow:
    """A row this workspace scored (``model``: with ``@<precision>`` for a reference at another precision), its
    precision here, and its file under ``predictions/`` (``stem``), as the script is run for it."""

    row: str
    model: str
    authors_name: str
    precision: str
    stem: str


def openai_variant(arch: str) -> str:
    """open_clip's architecture name -> ``clip.load``'s (``ViT-B-32-quickgelu`` -> ``ViT-B/32``, ``RN101`` as is)."""
    arch = arch.removesuffix("-quickgelu")
    return "/".join(arch.rsplit("-", 1)) if arch.startswith("ViT-") else arch


def authors_model(model: str, run: str | None = None) -> str | None:
    """The script's ``model_name`` for zoo model ``model`` (or fine-tune ``run``); None where none builds it so."""
    if run is not None:
        return RUN_NAMES.get(run)
    if model in GELU_BUILDS:
        return GELU_BUILDS[model]
    spec = get_spec(model)
    openai = spec.backend == "open_clip" and spec.pretrained == "openai"
    return f"openai-clip:{openai_variant(spec.arch)}" if openai else None


def authors_precision(authors_name: str, device: str) -> str:
    """The precision the script scores at on ``device``: ``clip.load`` builds fp16 weights and casts them to fp32 on
    the CPU only (``openai/CLIP@d05afc43 clip/clip.py:141`` "model.float()"); ``open_clip.create_model_and_transforms``
    without a precision, fp32."""
    return "fp16" if authors_name.startswith("openai-clip:") and not str(device).startswith("cpu") else "fp32"


def printed_counts(text: str, model_name: str, dataset_name: str) -> tuple[int, ...]:
    """The five counts the script prints after its model and dataset names (``amitakamath/hard_positives@33addaae
    run_eval.py:48-49`` "print(model_name) print(dataset_name)", then lines 100-116): c_n below both, c > c_n > c_p,
    c_p > c_n > c, c_n above both, ties."""
    lines = text.splitlines()
    starts = [i for i in range(1, len(lines)) if lines[i] == dataset_name and lines[i - 1] == model_name]
    if not starts or len(lines) < starts[-1] + 6:
        raise ValueError(f"{SCRIPT} printed no counts after {model_name!r} / {dataset_name!r}:\n{text[-2000:]}")
    return tuple(int(line) for line in lines[starts[-1] + 1: starts[-1] + 6])


def get_model_on(ctx, target: str) -> ContextManager[None]:
    """``model_zoo.get_model`` called with ``target`` instead of the ``"cuda"`` the script hard-codes (nothing changes
    on CUDA). The script imports the name from the module (``amitakamath/hard_positives@33addaae run_eval.py:9`` "from
    model_zoo import get_model"), so the module is imported first and its attribute wrapped; the fetched release must
    be importable."""
    # deferred: loads model_zoo only when called
    import model_zoo

    original = model_zoo.get_model

    def get_model(model_name, device=None, **kwargs):  # noqa: ARG001 - the released keyword, overridden
        return original(model_name, target, **kwargs)

    return ctx.replacing(model_zoo, "get_model", None if str(target).startswith("cuda") else get_model, GET_MODEL_CALL,
                         f'get_model(model_name=model_name, device="{target}", root_dir=root_dir)',
                         "the script hard-codes CUDA; this run has none (clip.load then builds fp32: it casts to float "
                         "on the CPU)")


def plan(context: Mapping, device: str) -> tuple[list[AuthorsRow], list[NotCovered]]:
    """The rows the script runs for (one per model, the one at its precision on ``device``), and why not the rest."""
    runs = set(context.get("checkpoints", {}))
    chosen: dict[str, AuthorsRow] = {}
    skipped: list[NotCovered] = []
    for row, info in context["models"].items():
        model, precision = info["model"], info["precision"]
        name = authors_model(model, row if row in runs else None)
        label = f"REPLACE, SWAP ({row}: {model})"
        if info.get("reference") == "activation" or name is None:
            skipped.append(NotCovered(label, f"no model name of {SCRIPT} builds it this way (its model_zoo builds "
                                             "NegCLIP and the CREPE models GELU only: open_clip."
                                             "create_model_and_transforms('ViT-B-32', pretrained=path, ...))"))
            continue
        scoring = model + (f"@{precision}" if info.get("reference") == "precision" else "")
        entry = AuthorsRow(row, scoring, name, precision, scoring.replace("/", "__"))  # as tables.write_outputs
        wanted = authors_precision(name, device)
        previous = chosen.get(name)
        if previous is None or (precision == wanted and previous.precision != wanted):
            chosen[name], entry = entry, previous  # the row it displaces, if any, is the one left out
        if entry is not None:
            skipped.append(NotCovered(f"REPLACE, SWAP ({entry.row}: {entry.model})",
                                      f"scored here at {entry.precision}; {SCRIPT} scores {entry.authors_name} at "
                                      f"{wanted} on {device} (OpenAI's clip.load: fp16 on CUDA, fp32 on the CPU)"))
    return list(chosen.values()), skipped


def released_layout(scratch: Path, manifest: Path) -> int | None:
    """The prepared set's files and images where the script looks, relative to ``scratch`` (its cwd); a
    capped set (``full_inputs.cap``) as the first ``cap`` rows of each file, in the released format. Returns the cap."""
    # deferred: loads PIL, torch, tqdm only when called
    from papers.hard_positives.sets_full import FullSet

    full = FullSet.load(manifest)
    base = full.path.parent
    for key in full.info["files"]:
        source = full.fetch(key)  # sha256 checked against the manifest
        target = scratch / key.removeprefix("hard_positives/")
        if full.cap is None:
            link(source, target)
        else:
            write_text_atomic(target, json.dumps(json.loads(source.read_text(encoding="utf-8"))[: full.cap]))
    for name, folder in full.info["vg_image_folders"].items():
        link(base / folder, scratch / ROOT_DIR / name)
    for root in (ROOT_DIR, SWAPPED_DIR):
        link(base / full.info["swap_image_root"], scratch / root / "images")
    return full.cap


@dataclass
class PartResult:
    """One run of the script (``DATASET MODEL``): what it printed and computed, and its two score arrays."""

    counts: tuple[int, ...]
    orig_acc: float
    orig: Any
    """N x 1 x 2: (c_n, c) per example, from ``data/``."""
    mod: Any
    """N x 1 x 2: (c_n, c_p) per example, from ``swapped_data/``."""

    def cells(self) -> dict[str, float]:
        """Percentages as the paper prints them, and Table 2's means (over the same lists of scores)."""
        below, original_only, positive_only = self.counts[:3]
        n = len(self.orig)
        return {"orig": 100.0 * self.orig_acc, "aug": 100.0 * below / n,
                "brittleness": 100.0 * (original_only + positive_only) / n,
                "mean_original": float(np.mean(np.asarray([v[0][1] for v in self.orig], dtype=np.float64))),
                "mean_positive": float(np.mean(np.asarray([v[0][1] for v in self.mod], dtype=np.float64))),
                "mean_negative": float(np.mean(np.asarray([v[0][0] for v in self.mod], dtype=np.float64)))}

    def decisions(self, group: str) -> tuple[dict[str, bool], dict[str, list[float]]]:
        """Per item (``<group>/<row index>``): line 100's condition, and the scores of (c, c_p, c_n)."""
        right, scores = {}, {}
        for i, (o, m) in enumerate(zip(self.orig, self.mod)):
            right[f"{group}/{i}"] = bool(m[0][0] < m[0][1] and m[0][0] < o[0][1])
            scores[f"{group}/{i}"] = [float(o[0][1]), float(m[0][1]), float(m[0][0])]
        return right, scores


def place_weights(ctx, entry: AuthorsRow, checkpoints: Mapping[str, Mapping], clip_code) -> Path | None:
    """Link or write the row's weights where the authors' loader finds them; the archive ``clip.load`` gets, if any."""
    model, target = entry.model.split("@")[0], ctx.scratch / MODELS_DIR / f"{entry.authors_name}.pt"
    if entry.authors_name.startswith("openai-clip:"):
        return as_clip_archive(model, ctx.scratch / "weights", clip_code)
    if entry.authors_name == "NegCLIP":
        link(get_spec(model).checkpoint_path(), ctx.scratch / ROOT_DIR / "negclip.pth")
    elif entry.row in checkpoints:
        # deferred: loads safetensors only when called
        from safetensors.torch import load_file

        source = Path(checkpoints[entry.row]["path"])
        if sha256_file(source) != checkpoints[entry.row].get("sha256"):
            raise OracleError(f"{source}: not the weights results/hard_positives/full scored (sha256 differs "
                              "from context.json's): run the table1-full stage again")
        ctx.replaced("model_zoo get_model: replace/models/<coco_* name>.pt (the authors' fine-tune, not released)",
                     "this workspace's run of the same name: its safetensors written there as a torch.save state dict",
                     "the row's own weights, in the format the authors' loader reads (open_clip load_checkpoint: "
                     "torch.load on a .pt path)")
        save(load_file(str(source)), target)
    else:
        link(get_spec(model).checkpoint_path(), target)
    return None


def run_part(ctx, code, clip_code, entry: AuthorsRow, part: Part, archive: Path | None, log: Path) -> PartResult:
    """The script run with ``<part> <model>`` in the scratch folder; its printout (kept in ``log``) and arrays."""
    argv = [part.dataset, entry.authors_name]
    with importable(clip_code.root), clip_load_from(ctx, archive, CLIP_LOAD_CALL), importable(code.root), \
            get_model_on(ctx, ctx.device), \
            returns_of(code.module_file("model_zoo.clip_models"), "get_retrieval_scores_batched") as scores, \
            returns_of(code.module_file(SCRIPT), "main", own_locals=("orig_acc",)) as main, \
            printed(log) as output:
        run_script(code, SCRIPT, argv, cwd=ctx.scratch)
    if len(scores.values) != 2 or len(main.locals) != 1:
        raise RuntimeError(f"{SCRIPT} {' '.join(argv)}: expected two scorings and one return of main, saw "
                           f"{len(scores.values)} and {len(main.locals)}")
    return PartResult(printed_counts(output.getvalue(), entry.authors_name, part.dataset),
                      float(main.locals[0]["orig_acc"]), scores.values[0], scores.values[1])


def compare_row(oracle: PaperOracle, entry: AuthorsRow, parts: Mapping[str, PartResult], results: Path,
                groups: Mapping, columns: Mapping, table2: Mapping, reason: str | None) -> None:
    """The row's numbers and decisions, the authors' beside this workspace's."""
    cells = {p.group: parts[p.dataset].cells() for p in PARTS}

    def add(benchmark: str, key: str, authors: float, here: str | None, decimals: int = DECIMALS) -> None:
        oracle.numbers.append(number(benchmark, entry.model, key, authors, here, decimals, reason))

    for part in PARTS:
        if part.key_prefix:
            for metric, title in METRICS:
                add(part.benchmark, part.key_prefix + title, cells[part.group][metric],
                    groups.get((entry.row, part.group), {}).get(metric))
    for benchmark, members in COLUMNS.items():
        for metric, title in METRICS:
            add(benchmark, title, sum(cells[g][metric] for g in members) / len(members),
                columns.get(entry.row, {}).get(f"{benchmark.lower()}_{metric}"))
    for metric, caption in TABLE2:
        members = COLUMNS["REPLACE"]
        add("REPLACE", f"Table 2: mean s({caption})", sum(cells[g][metric] for g in members) / len(members),
            table2.get(entry.row, {}).get(f"replace_{metric}"), TABLE2_DECIMALS)
    decided, our_scores = our_predictions(results / "predictions" / f"{entry.stem}.csv")
    for benchmark, members in COLUMNS.items():
        authors, authors_scores = {}, {}
        for part in (p for p in PARTS if p.group in members):
            right, scores = parts[part.dataset].decisions(part.group)
            authors.update(right)
            authors_scores.update(scores)
        here = {k: v for k, v in decided.items() if k.split("/")[0] in members}
        oracle.decisions.append(compare_decisions(benchmark, entry.model, authors, here, reason,
                                                  authors_scores=authors_scores,
                                                  our_scores={k: our_scores[k] for k in here}))


RUNS_ACTIVATION = ("a run trained here is scored as trained (QuickGELU); the authors' loader builds every coco_* "
                   "fine-tune as open_clip ViT-B-32, GELU (papers/hard_positives/README.md, Deviations)")
"""The stated deviation of the fine-tunes' rows: the scores differ (by up to 4e-3 on the stand-ins)."""


def run(ctx) -> PaperOracle:
    results = ctx.results("hard_positives")
    code, clip_code = ctx.code(REPO), ctx.code(CLIP_REPO)
    context = json.loads((results / "context.json").read_text(encoding="utf-8"))
    oracle = PaperOracle("hard_positives", code=[code.pinned, clip_code.pinned])
    register_local_configs()  # a rehearsal's shrunk architectures (VLC_ARCH_OVERRIDES); nothing otherwise
    cap = released_layout(ctx.scratch, build_root() / "full" / "hard_positives" / "manifest.json")
    if cap is not None:
        ctx.replaced(f"{ROOT_DIR}/*.json, {SWAPPED_DIR}/*.json (every row)",
                     f"their first {cap} rows, the same JSON list cut",
                     f"the capped set scores the first full_inputs.cap = {cap} items of each part "
                     f"(sets_full.FullSet.capped); {SCRIPT} scores every row")
    entries, skipped = plan(context, ctx.device)
    oracle.not_covered += skipped
    groups = rows_by(results / "groups.csv", "row", "group")
    columns = {**rows_by(results / "table3.csv", "row", optional=True),
               **rows_by(results / "table1.csv", "row", optional=True)}
    table2 = rows_by(results / "table2.csv", "row", optional=True)
    for entry in entries:
        archive = place_weights(ctx, entry, context.get("checkpoints", {}), clip_code)
        wanted = authors_precision(entry.authors_name, ctx.device)
        reasons = [] if entry.precision == wanted else [f"this workspace scored the row at {entry.precision}; "
                                                        f"the authors' script on {ctx.device} at {wanted}"]
        if entry.authors_name.startswith("coco_"):
            reasons.append(RUNS_ACTIVATION)
        reason = "; ".join(reasons) or None
        parts = {}
        for part in PARTS:
            parts[part.dataset] = run_part(ctx, code, clip_code, entry, part, archive,
                                           ctx.scratch / "logs" / f"{entry.row}-{part.dataset}.log")
            oracle.ran.append(command_line(code, SCRIPT, [part.dataset, entry.authors_name]) + f"  [{entry.row}]")
        compare_row(oracle, entry, parts, results, groups, columns, table2, reason)
        # the authors' (c, c_p, c_n) scores per item, kept in the scratch folder to look into a difference
        write_json_atomic(ctx.scratch / "scores" / f"{entry.stem}.json",
                          {k: v for p in PARTS for k, v in parts[p.dataset].decisions(p.group)[1].items()})
    oracle.not_covered.append(NotCovered(
        "ImageNet-1K, CIFAR-10/100, COCO and Flickr30K retrieval (Sec. 4.2, supplementary)",
        f"{code.pinned} releases no evaluation for them: its only script's datasets are {module_path(SCRIPT)}:17 "
        '"choices=[\\"swap\\", \\"replace_rel\\", \\"replace_att\\", \\"replace_obj\\", '
        '\\"negate\\"])"'))
    return oracle
