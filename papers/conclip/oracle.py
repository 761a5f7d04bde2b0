"""CoN-CLIP's own CC-Neg evaluation as the oracle (``python -m common oracle conclip``; ``common.oracle``).

What runs: the released CC-Neg evaluation, which is a README snippet, jaisidhsingh/CoN-CLIP@503388ac README.md:94
"def evaluate_clip_on_ccneg():" (lines 75-141, run at its README line numbers: the snippet never calls it), with its
dataset from the release's ``src.data.evaluation_datasets``, jaisidhsingh/CoN-CLIP@503388ac
src/data/evaluation_datasets.py:8 "class CCNegEvalDataset(Dataset):" (registered, unmodified), once per row of
``results/conclip/full/context.json`` that OpenAI's ``clip.load`` can build (``authors_construction`` says why
another cannot). It reads the ``.pt`` file and the image folder the full profile read (``context.json`` ``data``),
takes the file's last ``eval_size`` entries (jaisidhsingh/CoN-CLIP@503388ac src/data/evaluation_datasets.py:21
"self.image_paths = self.image_paths[-self.split_size:]") and decides each by jaisidhsingh/CoN-CLIP@503388ac
README.md:131 "preds = sim.argmax(dim=-1)" against jaisidhsingh/CoN-CLIP@503388ac README.md:133 "labels =
torch.zeros(batch_size).to(device)" (a tie is correct). Compared: its accuracy (README.md:137 "accuracy =
round(correct/total * 100, 2)", the value after the last batch) with ``table3.csv``'s ``ccneg`` at Table 3's two
decimals; each example's decision and its two similarities (``read_run``: the snippet keeps only counts) with
``predictions/<model>.csv``; and Tables 7-9's cells (``by_word_k.csv``) recounted from the authors' decisions. The
cells' grouping is this workspace's (``predictions/items.csv``): no released file groups the split by negation word
or K, so those numbers check only this workspace's counting.

Not registered, so replaced (each listed in the output): the release's ``src/data`` and ``src/configs`` packages'
``__init__`` files (``released_imports``, ``configs_module``). Model construction: README.md:95 "model, preprocess
= clip.load(model_name, device=device)" gets the row's weights (``common.oracle.models``); CoN-CLIP and the
fine-tunes are then loaded by the README's own ``load_checkpoint`` (README.md:32-36), i.e. what the snippet's
commented-out lines 98-99 do.
"""
from __future__ import annotations

import ast
import contextlib
import importlib
import json
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterator, Sequence

from common.oracle.authors import OracleError, importable, module_path, shimmed_modules
from common.oracle.core import NotCovered, PaperOracle, compare_decisions
from common.oracle.models import as_clip_archive, clip_load_from, save, state_dict, weights_file
from common.oracle.observe import locals_at_line
from common.oracle.ours import number, our_predictions, rows_by
from common.reporting.report import read_table
from common.zoo import get_spec
from common.zoo.specs import register_local_configs, runs_quick_gelu

REPO = "jaisidhsingh/CoN-CLIP"
CLIP_REPO = "openai/CLIP"
README = "README.md"
DATASET_MODULE = "src.data.evaluation_datasets"
"""The release's module that defines ``CCNegEvalDataset``."""
BENCHMARK = "CC-Neg"
CELLS = "CC-Neg by word and K"
DECIMALS = 2
"""Tables 3 and 7-9 print accuracies in percent with two decimals."""
EVALUATE = "evaluate_clip_on_ccneg"
LOAD_CHECKPOINT = "load_checkpoint"
CAPTURE_LINE = "bar.update(1)"
"""The snippet's last line per batch (README.md:140): ``sim``, ``preds`` and the running ``accuracy`` are set there."""
CAPTURED = ("sim", "preds", "accuracy", "correct", "total", "model", "ccneg_dataset")
RELEASED_CONCLIP = ("conclip/conclip-vit-b32", "conclip/conclip-vit-b16", "conclip/conclip-vit-l14")
"""The released CoN-CLIP checkpoints: the authors' training dict ``{"model": ...}`` (papers/conclip/models.toml),
which README.md:35 "model.load_state_dict(ckpt[\"model\"])" reads as released."""
CLIP_LOAD_CALL = "README.md:95 clip.load(model_name, device=device), which downloads OpenAI's file"


# --- The README's code blocks ---
@dataclass(frozen=True)
class Block:
    """A fenced ``python`` block of the README: its first line's number (1-based) and its text."""

    first_line: int
    text: str

    def padded(self) -> str:
        """The block at its README line numbers."""
        return "\n" * (self.first_line - 1) + self.text

    def line_of(self, statement: str) -> int:
        hits = [self.first_line + i for i, line in enumerate(self.text.splitlines()) if line.strip() == statement]
        if len(hits) != 1:
            raise ValueError(f"README block at line {self.first_line}: {len(hits)} lines read {statement!r}, not one")
        return hits[0]


def python_blocks(readme: str) -> list[Block]:
    blocks, start, lines = [], None, readme.splitlines(keepends=True)
    for lineno, line in enumerate(lines, 1):
        fence = line.strip()
        if start is None and fence == "```python":
            start = lineno + 1
        elif start is not None and fence == "```":
            blocks.append(Block(start, "".join(lines[start - 1:lineno - 1])))
            start = None
    return blocks


def block_defining(blocks: Sequence[Block], function: str) -> Block:
    found = [b for b in blocks if f"def {function}(" in b.text]
    if len(found) != 1:
        raise ValueError(f"{len(found)} README python blocks define {function}(), not one")
    return found[0]


def defined_function(block: Block, function: str, filename: str) -> Callable:
    """``function`` as the block defines it, with the block's imports, compiled at its README line numbers; the
    block's other statements (a demo on "dog.jpeg") are not run."""
    tree = ast.parse(block.padded(), filename=filename)
    keep = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
            or (isinstance(n, ast.FunctionDef) and n.name == function)]
    namespace: dict[str, Any] = {"__name__": "readme_block"}
    exec(compile(ast.Module(body=keep, type_ignores=[]), filename, "exec"), namespace)  # noqa: S102 - the authors' code
    return namespace[function]


# --- What the unreleased modules would have provided ---
def configs_module(pt_file: Path, split_size: int) -> types.ModuleType:
    """``configs`` (the release's ``src/configs`` package, not registered) with the names ``CCNegEvalDataset`` reads,
    derived as upstream derives them from ``ccneg_root_folder`` (jaisidhsingh/CoN-CLIP@503388ac
    src/configs/__init__.py:8 "configs.ccneg_root_folder =", the folder its "change this accordingly" asks for):
    jaisidhsingh/CoN-CLIP@503388ac src/configs/__init__.py:9 "{configs.ccneg_root_folder}/ccneg_preprocessed.pt",
    jaisidhsingh/CoN-CLIP@503388ac src/configs/__init__.py:11 "configs.num_ccneg_eval_samples = 40000" (here the
    split the full profile read)."""
    root = str(Path(pt_file).parent)
    module = types.ModuleType("configs")
    module.configs = types.SimpleNamespace(  # type: ignore[attr-defined]
        ccneg_root_folder=root, finetuning_dataset_path=f"{root}/ccneg_preprocessed.pt",
        num_ccneg_eval_samples=int(split_size))
    if Path(module.configs.finetuning_dataset_path) != Path(pt_file):  # type: ignore[attr-defined]
        raise ValueError(f"{pt_file}: the authors' configs derive the file's name, ccneg_preprocessed.pt")
    return module


@contextlib.contextmanager
def released_imports(code_root: Path, pt_file: Path, split_size: int) -> Iterator[None]:
    """``configs`` and ``data`` importable as the snippet expects, for the block: ``data`` the released ``src/data``
    folder as a package whose ``__init__`` (not registered) re-exports the dataset module, as the upstream one's
    ``from .evaluation_datasets import *`` does (the upstream one also has jaisidhsingh/CoN-CLIP@503388ac
    src/data/__init__.py:1 "from .finetuning_datasets import *", whose module is not registered)."""
    package = types.ModuleType("data")
    package.__path__ = [str(Path(code_root) / "src" / "data")]  # type: ignore[attr-defined]
    package.__package__ = "data"
    with shimmed_modules({"configs": configs_module(pt_file, split_size), "data": package}):
        module = importlib.import_module("data.evaluation_datasets")
        vars(package).update({name: getattr(module, name) for name in dir(module) if not name.startswith("_")})
        try:
            yield
        finally:
            sys.modules.pop("data.evaluation_datasets", None)


# --- Model construction ---
@dataclass(frozen=True)
class Construction:
    """How the snippet's ``clip.load`` gets a row: ``archive`` the zoo model whose weights it loads; with
    ``checkpoint``, README's ``load_checkpoint`` then loads that file's ``"model"`` entry (``converted``: written here
    in that layout)."""

    archive: str
    checkpoint: str | None = None
    converted: bool = False


def authors_construction(name: str) -> Construction | str:
    """How the authors' code builds zoo model ``name``, or why it cannot."""
    spec = get_spec(name)
    if spec.backend != "open_clip":
        return (f"{spec.backend} model: the snippet builds clip.load models only, and the authors' wrappers for BLIP "
                "and FLAVA are not among the registered files (nor in the release at the pinned commit)")
    if not runs_quick_gelu(spec):
        return ("built with GELU: OpenAI's clip.model builds QuickGELU only "
                '(openai/CLIP@d05afc43 clip/model.py:179 "QuickGELU()),"), '
                "and how the authors loaded this row is not released")
    if name in RELEASED_CONCLIP:
        return Construction(spec.finetuned_from or name, name)
    if (spec.checkpoint or "").startswith("build:"):
        if spec.finetuned_from is None:
            return "a checkpoint trained here with no fine-tuning base for clip.load to build first"
        return Construction(spec.finetuned_from, name, converted=True)
    return Construction(name)


def then_load_checkpoint(ctx, checkpoint: Path | None, load_checkpoint: Callable, why: str) -> ContextManager[None]:
    """``clip.load`` followed by README's ``load_checkpoint(model, checkpoint)`` for the block (None: left alone)."""
    # deferred: loads clip only when called
    import clip

    original = clip.load

    def load(*args, **kwargs):
        model, preprocess = original(*args, **kwargs)
        return load_checkpoint(model, str(checkpoint)), preprocess

    return ctx.replacing(clip, "load", None if checkpoint is None else load, CLIP_LOAD_CALL + " (a CoN-CLIP-style row)",
                         "the same, then README.md:32-36 load_checkpoint(model, <the row's checkpoint>)", why)


# --- The run ---
def cell_accuracies(decisions: dict[str, bool], items: Sequence[dict[str, str]]) -> dict[tuple[str, int], float]:
    """Tables 7-9's cells from per-example decisions, grouped as ``predictions/items.csv`` groups them."""
    cells: dict[tuple[str, int], list[bool]] = {}
    for item in items:
        if item["k"] == "" or item["item_id"] not in decisions:
            continue
        for word in item["words"].split():
            cells.setdefault((word, int(item["k"])), []).append(decisions[item["item_id"]])
    return {cell: round(100 * sum(v) / len(v), 2) for cell, v in cells.items()}


@dataclass
class AuthorsRun:
    """What one ``evaluate_clip_on_ccneg()`` produced: the accuracy it showed, and per example (file index as this
    workspace's ``item_id``) the decision, the two similarities divided by the raw ``model.logit_scale`` it multiplies
    them by, jaisidhsingh/CoN-CLIP@503388ac README.md:124 "sim_dense_true = (model.logit_scale * image_features @
    true_caption_features.T)" (so cosines, this workspace's unit), and the image file."""

    accuracy: float
    decisions: dict[str, bool]
    scores: dict[str, list[float]]
    images: dict[str, str]


def read_run(seen: Sequence[dict[str, Any]], first_index: int) -> AuthorsRun:
    if not seen:
        raise ValueError(f"{EVALUATE}() ran no batch")
    scale = float(seen[-1]["model"].logit_scale.detach())
    dataset = seen[-1]["ccneg_dataset"]
    decisions, scores, images = {}, {}, {}
    batches = [pair for batch in seen for pair in zip(batch["sim"].tolist(), batch["preds"].tolist(), strict=True)]
    for j, (row, pred) in enumerate(batches):
        key = str(first_index + j)
        decisions[key] = pred == 0
        scores[key] = [v / scale for v in row]
        images[key] = Path(dataset.image_paths[j]).name
    return AuthorsRun(float(seen[-1]["accuracy"]), decisions, scores, images)


def run_snippet(ctx, code, clip_code, snippet: Path, line: int, pt_file: Path, split_size: int,
                construction: Construction, archive: Path, load_checkpoint: Callable) -> list[dict[str, Any]]:
    """``evaluate_clip_on_ccneg()`` of the written snippet for one row; the frame's locals at each batch's end."""
    with importable(clip_code.root):
        checkpoint = None
        if construction.converted:  # as the authors' training dict {"model": state_dict}, which README.md:35 reads
            checkpoint = save({"model": dict(state_dict(construction.checkpoint))},
                              ctx.scratch / "weights" / f"{construction.checkpoint.replace('/', '__')}.model.pt")
        elif construction.checkpoint is not None:
            checkpoint = weights_file(construction.checkpoint)
        namespace: dict[str, Any] = {"__name__": "__main__", "__file__": str(snippet)}
        with importable(code.root / "src"), released_imports(code.root, pt_file, split_size):
            exec(compile(snippet.read_text(encoding="utf-8"), str(snippet), "exec"), namespace)  # noqa: S102
            if namespace["device"] != ctx.device and not str(ctx.device).startswith("cuda"):
                ctx.replaced('README.md:83 device = "cuda"', f'device = "{ctx.device}"',
                             "no GPU where the oracle ran; clip.load then casts its model back to fp32 "
                             '(openai/CLIP@d05afc43 clip/clip.py:140-141 "model.float()" on the CPU), '
                             "where CUDA keeps fp16")
                namespace["device"] = ctx.device
            why = ("the row's own fp32 weights, loaded as README.md:98-99 (commented out: 'load vlm weights here') "
                   "and load_checkpoint load CoN-CLIP: the released CoN-CLIP file as released; a checkpoint trained "
                   "here first saved as {'model': state_dict} from its safetensors")
            with clip_load_from(ctx, archive, CLIP_LOAD_CALL), \
                    then_load_checkpoint(ctx, checkpoint, load_checkpoint, why), \
                    locals_at_line(snippet, EVALUATE, line, CAPTURED) as seen:
                try:
                    namespace[EVALUATE]()
                except FileNotFoundError as exc:
                    raise OracleError(
                        f"the authors' loader cannot open an image of {pt_file}: {exc}. It opens each image_paths "
                        "entry with /workspace/datasets/cc3m/ replaced by ccneg_root_folder/ "
                        f"({code.pinned} {module_path(DATASET_MODULE)}:18): the paths must read "
                        "/workspace/datasets/cc3m/ccneg_images/cc3m_subset_images_extracted_final/<name>.jpg for the "
                        "released layout (a stand-in: "
                        "tests/rehearsal/papers/conclip.py AUTHORS_IMAGES)") from None
    return seen


def run(ctx) -> PaperOracle:
    results = ctx.results("conclip")
    context = json.loads((results / "context.json").read_text(encoding="utf-8"))
    data = context["data"]
    pt_file, split_size, first_index = Path(data["file"]), int(data["eval_size"]), int(data["eval_indices"][0])
    code, clip_code = ctx.code(REPO), ctx.code(CLIP_REPO)
    oracle = PaperOracle("conclip", code=[code.pinned, clip_code.pinned])
    readme = code.path(README)
    blocks = python_blocks(readme.read_text(encoding="utf-8"))
    evaluation = block_defining(blocks, EVALUATE)
    snippet = ctx.scratch / "readme_ccneg_evaluation"  # Python, the README's lines at their line numbers
    snippet.parent.mkdir(parents=True, exist_ok=True)
    snippet.write_text(evaluation.padded(), encoding="utf-8")
    line = evaluation.line_of(CAPTURE_LINE)
    with importable(clip_code.root):  # the block's own imports (clip, torch, PIL)
        load_checkpoint = defined_function(block_defining(blocks, LOAD_CHECKPOINT), LOAD_CHECKPOINT, str(readme))
    ctx.replaced("src.configs (not registered): from configs import configs",
                 f"configs with ccneg_root_folder = {pt_file.parent}, finetuning_dataset_path derived from it as "
                 f"upstream does, num_ccneg_eval_samples = {split_size}",
                 "the release's configs file is not registered and asks to be edited ('change this accordingly'); "
                 "the split is the full profile's (40,000 as upstream; full_inputs.cap when capped)")
    ctx.replaced("src.data's __init__ (not registered): from data import CCNegEvalDataset",
                 f"the released src/data folder as package data, its __init__ re-exporting {DATASET_MODULE}",
                 "the upstream __init__ also star-imports src.data.finetuning_datasets, not registered")
    ctx.replaced(f"README.md:75-141 (a snippet that defines {EVALUATE} and never calls it)",
                 f"the block written byte-exact to a file at its README line numbers, then {EVALUATE}() called",
                 "the README's CC-Neg evaluation is not released as a script")
    precision = context.get("engine", {}).get("precision", "fp32")
    items = read_table(results / "predictions" / "items.csv")
    our_images = {i["item_id"]: i["image"] for i in items}
    ours_table = rows_by(results / "table3.csv", "model")
    ours_cells = {(r["model"], r["word"], int(r["k"])): r["accuracy"] for r in read_table(results / "by_word_k.csv")}
    register_local_configs()  # a rehearsal's shrunk architectures; nothing otherwise
    for row, entry in context["models"].items():
        name = entry["model"]
        construction = authors_construction(name)
        if isinstance(construction, str):
            oracle.not_covered.append(NotCovered(f"{BENCHMARK} ({row}: {name})", construction))
            continue
        seen = run_snippet(ctx, code, clip_code, snippet, line, pt_file, split_size, construction,
                           as_clip_archive(construction.archive, ctx.scratch / "weights", clip_code), load_checkpoint)
        oracle.ran.append(f"{code.pinned} README.md:94 {EVALUATE}()  [{row}: {name}]")
        authors = read_run(seen, first_index)
        wrong_images = [k for k, image in authors.images.items() if our_images.get(k, image) != image]
        if wrong_images:
            raise ValueError(f"examples {wrong_images[:5]}: the authors' image is not this workspace's (the split's "
                             "order differs)")
        theirs = "fp16" if str(ctx.device).startswith("cuda") and construction.checkpoint is None else "fp32"
        reason = None if theirs == precision else (f"the snippet scores at {theirs} (clip.load on {ctx.device}), "
                                                   f"this workspace at {precision} (params.yaml engine)")
        oracle.numbers.append(number(BENCHMARK, name, "accuracy", authors.accuracy,
                                     ours_table.get(name, {}).get("ccneg"), DECIMALS, reason))
        decided, our_scores = our_predictions(results / "predictions" / f"{name.replace('/', '__')}.csv")
        oracle.decisions.append(compare_decisions(BENCHMARK, name, authors.decisions, decided, reason,
                                                  authors_scores=authors.scores, our_scores=our_scores))
        for (word, k), value in sorted(cell_accuracies(authors.decisions, items).items()):
            oracle.numbers.append(number(CELLS, name, f"{word} K={k}", value, ours_cells.get((name, word, k)),
                                         DECIMALS, reason))
    # the paper's other benchmarks: their code is not among the registered files (and, but for the fine-tuning
    # script, not in the release at the pinned commit either), or not released at all
    unregistered = (f"is not among the registered files (registry group authors-code: only the {DATASET_MODULE} "
                    f"module and README.md of {REPO})")
    oracle.not_covered += [
        NotCovered("Zero-shot classification (Tables 4, 15, 16)", f"the authors' zero-shot classification code "
                   f"{unregistered}; the README gives no snippet for it"),
        NotCovered("SugarCrepe (Tables 5, 13, 14; Table 6's columns)", f"the authors' copy of SugarCrepe's main_eval "
                   f"script {unregistered} (SugarCrepe's own main_eval script is run by papers/sugarcrepe's oracle, "
                   "on its Table 6 rows)"),
        NotCovered("Fine-tuning (Table 6's runs)", f"the release's src.conclip_fine_tuning script {unregistered}; this "
                   "oracle scores the runs trained here on CC-Neg only"),
        NotCovered("Distractor mining (Supplementary 0.B)", "the authors' mining code is not in the release "
                   "(only its output, distractor_image_mapping.pt)"),
    ]
    return oracle
