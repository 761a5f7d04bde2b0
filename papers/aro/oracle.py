"""ARO's own evaluation as the oracle (``python -m common oracle aro``; ``common.oracle``).

ARO's evaluation script (``SCRIPT``, at the pinned commit of ``REPO``) runs as released, once per model row and
dataset (``DATASETS``), on the annotations and images this workspace's ``full-set`` read
(``build/full/aro/benchmarks/manifest.json``). Its dataset package reads them from a literal relative path,
``mertyg/vision-language-models-are-bows@81fdd20d dataset_zoo/constants.py:1`` "ARO_ROOT =" and the path
``~/.cache/prerelease_bow``, never expanded, so the oracle runs it in a scratch folder where that path links to them
(``released_layout``). Its per-group records (the CSV it saves) are set beside ``DATASETS``' tables at the paper's two
decimals, and each example's decision and scores beside ``predictions/<model>/``: the scores
``get_retrieval_scores_batched`` returns (recorded by ``common.oracle.observe``) under the authors' own rule,
``mertyg/vision-language-models-are-bows@81fdd20d dataset_zoo/aro_datasets.py:87-88`` "preds =
np.argmax(np.squeeze(scores_i2t, axis=1), axis=-1) correct_mask = (preds == 1)".

Models (``authors_model``): OpenAI's weights as ``openai-clip:ViT-B/32``, whose ``clip.load`` would download OpenAI's
file (``mertyg/vision-language-models-are-bows@81fdd20d model_zoo/__init__.py:15`` "model, image_preprocess =
clip.load(variant, device=device, download_root=root_dir)"): it is given the row's weights instead, as the TorchScript
archive ``clip.load(path)`` reads (a listed replacement). Every other ViT-B/32 row through the authors' own path for a
checkpoint, ``get_model("NegCLIP")``, its file linked where that looks (``CACHE_DIR``). That line builds GELU
(``mertyg/vision-language-models-are-bows@81fdd20d model_zoo/__init__.py:71`` "model, _, image_preprocess =
open_clip.create_model_and_transforms('ViT-B-32', pretrained=path, device=device)"), which is the row
``aro/negclip-gelu`` as released; a row trained with QuickGELU gets ``force_quick_gelu=True`` on it (listed). Shim:
``torch._six`` (``run``: torch 2.0 removed it; the release's ``misc`` package imports it).

COCO and Flickr30k retrieval: ``RETRIEVAL_SCRIPT``, unshuffled, on the Karpathy test splits the full profile read,
linked where the released constants look (``RETRIEVAL_ROOTS``), its four precisions beside Table 3's "No Shuffling"
row at the paper's three decimals. What is not run, and why, closes ``run`` (``NotCovered``).
"""
from __future__ import annotations

import json
import os
import types
from pathlib import Path
from unittest import mock

import numpy as np

from common.oracle.authors import command_line, importable, output_rows, run_script, shimmed_modules
from common.oracle.core import NotCovered, PaperOracle, compare_decisions
from common.oracle.models import (
    as_clip_archive, clip_load_from, link, open_clip_quick_gelu, save, state_dict, weights_file)
from common.oracle.observe import returns_of
from common.oracle.ours import number, our_predictions, rows_by
from common.paths import build_root
from common.reporting.report import read_table
from common.zoo import get_spec
from common.zoo.specs import register_local_configs, runs_quick_gelu

REPO = "mertyg/vision-language-models-are-bows"
CLIP_REPO = "openai/CLIP"
SCRIPT = "main_aro"
"""The release's evaluation script (a module of its root)."""
DECIMALS = 2
"""The paper prints VG-Relation and VG-Attribution accuracies with two decimals."""
DATASETS = {"VG_Relation": ("VG-Relation", "table2_vg_relation.csv", "vg_relation.csv", "Relation"),
            "VG_Attribution": ("VG-Attribution", "vg_attribution.csv", "vg_attribution.csv", "Attributes")}
"""The authors' --dataset -> (benchmark, this workspace's per-group table, its predictions file, key column)."""
NEGCLIP_CALL = ("model_zoo get_model('NegCLIP'): open_clip.create_model_and_transforms('ViT-B-32', "
                "pretrained=path, device=device), for a row trained with QuickGELU")
QUICK_GELU_WHY = ("the row's weights were trained with QuickGELU (OpenAI's ViT-B/32 and its fine-tunes); the released "
                  "line builds GELU, which is the separate row aro/negclip-gelu")
GET_MODEL_CALL = ("model_zoo get_model('openai-clip:ViT-B/32'): clip.load('ViT-B/32', ...), which "
                  "downloads OpenAI's file")
ARO_ROOT = Path("~") / ".cache" / "prerelease_bow"
CACHE_DIR = Path("~") / ".cache"
"""Where ``get_model("NegCLIP")`` looks for ``negclip.pth`` (``mertyg/vision-language-models-are-bows@81fdd20d
model_zoo/__init__.py:66`` "path = os.path.join(root_dir,")."""
RETRIEVAL_ROOTS = {"coco": (Path("~") / ".cache" / "coco" / "2014", "coco_karpathy_test.json"),
                   "flickr30k": (Path("~") / ".cache" / "flickr30k" / "images", "flickr30k_test.json")}
"""The release's ``dataset_zoo.constants`` (``mertyg/vision-language-models-are-bows@81fdd20d
dataset_zoo/constants.py:2`` "COCO_ROOT =", ``mertyg/vision-language-models-are-bows@81fdd20d
dataset_zoo/constants.py:3`` "FLICKR_ROOT =") and ``model_zoo.constants``, relative to the working directory as
released, and the annotation file its retrieval datasets read there (the ``dataset_zoo.retrieval`` module)."""
HOME_WHY = ("the release opens the annotation file at the unexpanded relative path (the dataset_zoo.retrieval "
            "module: json.load(open(os.path.join(root_dir,filenames[split]),'r'))) but first has torchvision's "
            "download_url look for it, which expands ~ to the home folder: as released the two agree only when the "
            "working directory's literal ~ folder is the home folder's copy; with HOME there both read the same file "
            "and nothing is downloaded")
RETRIEVAL_SCRIPT = "main_retrieval"
RETRIEVAL = {  # the authors' --dataset -> (benchmark, this workspace's split key and Table 3 dataset name)
    "COCO_Retrieval": ("COCO retrieval", "coco", "COCO"),
    "Flickr30k_Retrieval": ("Flickr30k retrieval", "flickr30k", "Flickr30k"),
}
RETRIEVAL_COLUMNS = {"TextPrec@1": "Text Recall@1", "TextPrec@5": "Text Recall@5",
                     "ImagePrec@1": "Image Recall@1", "ImagePrec@5": "Image Recall@5"}
"""The authors' record fields -> Table 3's columns (the "No Shuffling" row), which the paper prints with three
decimals."""
RETRIEVAL_DECIMALS = 3
NO_SHUFFLE_TABLE = "table3_text_shuffle.csv"


def authors_model(name: str) -> str | None:
    """The ``--model-name`` that scores zoo model ``name`` with the authors' code (the module docstring's Models), or
    None."""
    spec = get_spec(name)
    if spec.backend != "open_clip" or spec.arch.removesuffix("-quickgelu") != "ViT-B-32":
        return None
    if spec.pretrained == "openai":
        return "openai-clip:ViT-B/32"
    return "NegCLIP" if spec.checkpoint else None


def our_scoring(name: str, model_name: str, ctx) -> tuple[str, str]:
    """(key, column label) of this workspace's scoring of ``name`` at the precision the authors' code runs it here:
    ``clip.load`` keeps OpenAI's fp16 weights on CUDA and casts them to fp32 on a CPU
    (``openai/CLIP@d05afc43 clip/clip.py:140-141`` "if str(device) == "), so on a CPU the authors' run is set beside
    the row scored at ``engine.precision`` (``<name>@fp32``, ``papers.aro.tables.Scoring``), on CUDA beside the
    authors'-precision row (``aro.full.authors_precision``); a checkpoint through open_clip runs at fp32 either way."""
    # deferred: loads PIL, torch, tqdm only when called
    from papers.aro.tables import Scoring

    ran_at = "fp16" if model_name.startswith("openai-clip") and str(ctx.device).startswith("cuda") else "fp32"
    authors = ctx.params["aro"]["full"].get("authors_precision", {}).get(name)
    engine = ctx.params.get("engine", {}).get("precision", "fp32")
    if authors is None or authors == ran_at:
        scoring = Scoring(name, authors or engine)
    elif engine == ran_at:
        scoring = Scoring(name, engine, reference=True)  # the tables' row beside the authors' precision
    else:
        raise ValueError(f"{name}: the authors' code runs it at {ran_at} on {ctx.device}; this workspace scored it "
                         f"at {authors} and {engine}")
    return scoring.key, scoring.label()


def released_layout(scratch: Path, manifest: dict) -> None:
    """The inputs where the released constants look, relative to ``scratch`` (the working directory)."""
    root = scratch / ARO_ROOT
    for kind in ("vg_relation", "vg_attribution"):
        link(Path(manifest[kind]["annotations"]), root / f"visual_genome_{kind.removeprefix('vg_')}.json")
    images = {manifest[k]["image_root"] for k in ("vg_relation", "vg_attribution")}
    if len(images) != 1:
        raise ValueError(f"VG-Relation and VG-Attribution read different image folders ({sorted(images)}); ARO's "
                         "code reads one (~/.cache/prerelease_bow/images)")
    link(Path(images.pop()), root / "images")


def retrieval_layout(scratch: Path, manifest: dict) -> list[str]:
    """The Karpathy test splits where the release's retrieval datasets look (``RETRIEVAL_ROOTS``, relative to
    ``scratch``): the annotation file, and beside it every entry of the image folder the full profile read (BLIP's
    image paths start with ``val2014/`` or ``flickr30k-images/``). The splits the manifest holds."""
    present = []
    for split, (root, annotation_file) in RETRIEVAL_ROOTS.items():
        entry = manifest.get("retrieval", {}).get(split)
        if entry is None:
            continue
        image_root = Path(entry["image_root"])
        for child in image_root.iterdir():
            if child.name != annotation_file:
                link(child, scratch / root / child.name)
        link(Path(entry["annotations"]), scratch / root / annotation_file)
        present.append(split)
    return present


def run(ctx) -> PaperOracle:
    # deferred: loads PIL, torch, tqdm only when called
    from papers.aro.tables import NO_SHUFFLE

    results = ctx.results("aro")
    code, clip_code = ctx.code(REPO), ctx.code(CLIP_REPO)
    manifest_path = build_root() / "full" / "aro" / "benchmarks" / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    for entry in (manifest["vg_relation"], manifest["vg_attribution"], *manifest.get("retrieval", {}).values()):
        for key in ("annotations", "image_root"):
            entry[key] = str(manifest_path.parent / entry[key])
    scored = list(json.loads((results / "context.json").read_text(encoding="utf-8"))["models"])
    oracle = PaperOracle("aro", code=[code.pinned, clip_code.pinned])
    # mertyg/vision-language-models-are-bows@81fdd20d misc/__init__.py:9 "from torch._six import string_classes"
    torch_six = types.ModuleType("torch._six")
    torch_six.string_classes = (str, bytes)  # type: ignore[attr-defined]
    ctx.replaced("torch._six (the misc package: from torch._six import string_classes)",
                 "a module holding string_classes = (str, bytes), as torch 1.x defined it",
                 "torch 2.0 removed torch._six, so the script cannot start as released")
    register_local_configs()
    released_layout(ctx.scratch, manifest)
    splits = retrieval_layout(ctx.scratch, manifest)
    if splits:
        ctx.replaced("HOME, for the retrieval runs", "the scratch folder's literal ~ folder (where the relative "
                     "constants already point)", HOME_WHY)
    for name in scored:
        model_name = authors_model(name)
        if model_name is None:
            oracle.not_covered.append(NotCovered(f"VG ({name})", "no model name of the authors' model_zoo loads it"))
            continue
        archive = None
        if model_name == "NegCLIP":  # where its get_model looks, relative to the working directory
            source = weights_file(name)
            if source.suffix == ".safetensors":  # as a plain state dict, which its torch.load reads
                source = save(state_dict(name), ctx.scratch / "weights" / f"{name.replace('/', '__')}.pth")
            link(source, ctx.scratch / CACHE_DIR / "negclip.pth")
        else:
            archive = as_clip_archive(name, ctx.scratch / "weights", clip_code)
        quick_gelu = model_name == "NegCLIP" and runs_quick_gelu(get_spec(name))
        key, label = our_scoring(name, model_name, ctx)
        out = ctx.scratch / "outputs" / name.replace("/", "__")
        out.mkdir(parents=True, exist_ok=True)

        def released(script: str, dataset: str) -> list[dict[str, str]]:
            """``script --dataset dataset`` as released, on this row's model: the records of the CSV it saves."""
            (out / f"{dataset}.csv").unlink(missing_ok=True)  # the script appends to an existing file
            argv = ["--device", ctx.device, "--num_workers", "0", "--model-name", model_name, "--dataset", dataset,
                    "--output-dir", str(out)]
            with shimmed_modules({"torch._six": torch_six}), importable(clip_code.root), \
                    clip_load_from(ctx, archive, GET_MODEL_CALL), \
                    open_clip_quick_gelu(ctx, NEGCLIP_CALL, QUICK_GELU_WHY, enabled=quick_gelu):
                run_script(code, script, argv, cwd=ctx.scratch)
            oracle.ran.append(command_line(code, script, argv) + f"  [{key}]")
            return output_rows(out / f"{dataset}.csv")

        for dataset, (benchmark, table, predictions, key_column) in DATASETS.items():
            with returns_of(code.module_file("model_zoo.clip_models"), "get_retrieval_scores_batched") as seen:
                records = released(SCRIPT, dataset)
            ours = rows_by(results / table, "group")
            for record in records:
                group = record[key_column]
                oracle.numbers.append(number(benchmark, key, group, record["Accuracy"],
                                             ours.get(group, {}).get(label), DECIMALS))
            scores = seen.values[-1]
            right = np.argmax(np.squeeze(scores, axis=1), axis=-1) == 1
            kind = predictions.removesuffix(".csv")
            authors = {f"{kind}/{i}": bool(r) for i, r in enumerate(right)}
            authors_scores = {f"{kind}/{i}": list(row[0]) for i, row in enumerate(scores)}
            decided, our_scores = our_predictions(results / "predictions" / key.replace("/", "__") / predictions)
            oracle.decisions.append(compare_decisions(benchmark, key, authors, decided,
                                                      authors_scores=authors_scores, our_scores=our_scores))
        for dataset, (benchmark, split, table_name) in RETRIEVAL.items():
            if split not in splits:
                continue
            with mock.patch.dict(os.environ, HOME=str(ctx.scratch / "~")):  # see HOME_WHY
                (record,) = released(RETRIEVAL_SCRIPT, dataset)
            ours = next((row for row in read_table(results / NO_SHUFFLE_TABLE) if row["strategy"] == NO_SHUFFLE
                         and row["model"] == label and row["dataset"] == table_name), {})  # Table 3's row
            for field, column in RETRIEVAL_COLUMNS.items():
                oracle.numbers.append(number(benchmark, key, column, record[field], ours.get(column),
                                             RETRIEVAL_DECIMALS))
    oracle.not_covered += [
        NotCovered("COCO-Order, Flickr30k-Order", "the authors' dataset_zoo draws each example's four perturbed "
                   "captions at load time (TextShuffler, spaCy and numpy's global stream); this workspace draws them "
                   "once per seed (papers/aro/order.py): the options differ, so the scores cannot be compared"),
        NotCovered("COCO/Flickr30k text- and image-shuffled retrieval (Tables 3-4 but their No Shuffling rows)",
                   "the release shuffles with numpy's, Python's and torch's global streams, seeded once per run, "
                   "caption after caption and image after image (main_retrieval; the dataset_zoo.perturbations "
                   "module); this workspace draws each caption's and image's permutation from its own seeded stream "
                   "(common/text/caption_text.py, common/files/image_transforms.py): the shuffled inputs differ, so "
                   "the scores cannot be compared"),
        NotCovered("CIFAR-10/100 zero-shot classification (Table 6)",
                   "the release has no zero-shot classification code (main_retrieval takes COCO_Retrieval or "
                   "Flickr30k_Retrieval only)")]
    return oracle
