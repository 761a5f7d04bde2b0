"""BiVLC's own evaluation as the oracle (``python -m common oracle bivlc``; ``common.oracle``).

What runs, as released (``IMirandaM/BiVLC@84f0d175``), once per row this workspace's ``tables-full`` scored:

* Table 5 (``run_detectors``): ``src/Detectors/Detector_evaluation_BiVLC`` per detector row of ``table5.csv``, with
  the row's heads, ``--model_cache_dir`` the hub cache this workspace read and its defaults otherwise. What it prints
  (``DETECTOR_PRINTS``) is set beside ``table5.csv`` at the paper's two decimals; each instance's seven decisions
  (``DETECTOR_GLOBALS``) and its four P(synthetic) (its frame, paired as IMirandaM/BiVLC@84f0d175
  src/Detectors/Detector_evaluation_BiVLC.py:153 "positives = df[df['label'] == 0]") beside this workspace's,
  recomputed here by the stage's own functions (``tables.score_detectors_rows``, which must give ``table5.csv``
  again): the stage keeps no per-instance detector output. Then ``src/Detectors/Detector_evaluation_SugarCrepe``, its
  ``--data-path`` a CSV in the columns of its default file (``SUGARCREPE_COLUMNS``) holding the examples this
  workspace read, in their order.
* Tables 2-4 and their SugarCrepe column (``run_contrastive``): ``main_evaluation_BiVLC`` and
  ``evaluation_SugarCrepe``, wherever ``src.CLIP_fine_tuning.CLIP_utils``, which both import, can be fetched: it is
  registered (group ``authors-code``) but not in the shared mirror, and ``run`` says what did not run without it. Run
  on the rehearsal's stand-ins with the file at hand (2026-11-29): 4 of 4 benchmarks agree.

Replaced, each listed in the output: the data download (IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_utils.py:92
`dataset = load_dataset("imirandam/BiVLC", split = "test")`) reads the snapshot this workspace read
(``hub_dataset_from``); ``load_model``'s call (IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_utils.py:24 "model, _,
transform = open_clip.create_model_and_transforms(") gets ``force_quick_gelu=True`` for the ``openai`` tag, what
open_clip 2.24 built (IMirandaM/BiVLC@84f0d175 requirements.txt:37 "open-clip-torch==2.24.0"); heads and models
trained here are written in the layout their loaders read (``head_checkpoint``, ``model_checkpoint``).
``torchsummary`` must be the package their requirements name (``summary_package``; IMirandaM/BiVLC@84f0d175
requirements.txt:57 "torch-summary==1.4.5"): its ``summary`` has no ``input_size`` argument, so
(IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_evaluation_BiVLC.py:89 "summary(text_classifier,
input_size=(args.batch_size, 77))") prints the layers and runs no forward pass.

Limits: heads that are not ``Linear(512, 1)`` on a 512-wide tower cannot be built by the authors' classes
(``HEAD_WIDTH``: a rehearsal whose shrunk ViT-B-32 has another joint width is reported as a wrong stand-in). Their
``torch.load`` has no ``map_location`` (IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_evaluation_BiVLC.py:92
"checkpoint = torch.load(args.image_checkpoint)"): heads saved from a GPU load only where one is (``--device cuda``).
"""
from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import ContextManager, Sequence

from common.benchmarks.caption_negatives import PreparedSet
from common.files.tasks import as_ref
from common.oracle.authors import OracleError, command_line, importable, module_path, printed, run_script
from common.oracle.core import NotCovered, PaperOracle, compare_decisions
from common.oracle.models import open_clip_as_of_their_time, save, state_dict, weights_file
from common.oracle.observe import returns_of
from common.oracle.ours import number, rows_by
from common.paths import build_dir, data_root
from common.pipeline.inputs import full_inputs
from common.zoo import get_spec
from common.zoo.specs import register_local_configs, runs_quick_gelu
from papers.bivlc.detection import FINER, detector_decisions

REPO = "IMirandaM/BiVLC"
PAPER = "bivlc"
DECIMALS = 2
"""Tables 2-5 print scores in points with two decimals (e.g. Table 5's "61.34")."""
CLIP_UTILS = "src.CLIP_fine_tuning.CLIP_utils"
MAIN_SCRIPT = "main_evaluation_BiVLC"
SUGARCREPE_SCRIPT = "evaluation_SugarCrepe"
DETECTOR_BIVLC = "src.Detectors.Detector_evaluation_BiVLC"
DETECTOR_SUGARCREPE = "src.Detectors.Detector_evaluation_SugarCrepe"
DETECTOR_UTILS = "src.Detectors.Detector_utils"
"""The released modules run or replaced in (dotted, as their imports name them; ``authors.module_path``: the file)."""
HUB_DATASET = "imirandam/BiVLC"
AUTHORS_MODEL = ("ViT-B-32", "openai")
"""``--clip-model`` / ``--pretrained`` of every script's default: the only architecture their code evaluates."""
LOAD_DATA = "load_dataset('imirandam/BiVLC', split='test')"
"""The data download of their code replaced, as the output names it."""
QUICK_GELU_WHY = ("what open_clip 2.24 (their requirements.txt) built for the 'openai' tag: QuickGELU, as trained; "
                  "open_clip {version} builds GELU there and warns")
"""Why their ``load_model`` gets ``force_quick_gelu=True`` for the ``openai`` tag
(``common.oracle.models.open_clip_as_of_their_time``), as the output says it."""
HEAD_WIDTH = 512
"""The authors' heads are ``Linear(in_features=512, out_features=1)`` (a ViT-B/32's joint width)."""
TYPES = ("replace", "swap", "add")
MAIN = ("I2T", "T2I", "group")

BIVLC, SUGARCREPE = "BiVLC", "SugarCrepe (BiVLC's column)"
DET_BIVLC, DET_SUGARCREPE = "BiVLC detectors (Table 5)", "SugarCrepe detectors (Table 5)"

DETECTOR_PRINTS = {
    "text_detection": (r"checkpoint text accuracy:\s+(\S+)", 100.0),
    "image_detection": (r"checkpoint img accuracy:\s+(\S+)", 100.0),
    "I2T": (r"Text_score: ([^,\s]+),", 1.0),
    "T2I": (r"Image_score: ([^,\s]+),", 1.0),
    "group": (r"Group_score: (\S+)", 1.0),
    "Ipos2T": (r"Text_score_i0: ([^,\s]+)", 1.0),
    "Ineg2T": (r"Text_score_i1: ([^,\s]+)", 1.0),
    "Tpos2I": (r"Image_score_c0: ([^,\s]+)", 1.0),
    "Tneg2I": (r"Image_score_c1: ([^,\s]+)", 1.0),
}
"""What ``Detector_evaluation_BiVLC`` prints, by the table5.csv column it is, and the factor to points (the
accuracies are fractions: IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_evaluation_BiVLC.py:150
"print(f'{args.run_name} checkpoint text accuracy:  {np.mean(text_acc)}')"; the scores in percent:
IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_evaluation_BiVLC.py:208-209 "Text_score: {100*np.mean(text_score)}")."""
DETECTOR_GLOBALS = {"Ipos2T": "text_score_i0", "Ineg2T": "text_score_i1", "Tpos2I": "img_score_c0",
                    "Tneg2I": "img_score_c1", "I2T": "text_score", "T2I": "img_score", "group": "group_score"}
"""The per-instance 1/0 lists ``Detector_evaluation_BiVLC`` leaves in its globals, by table5.csv column
(IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_evaluation_BiVLC.py:156-162 "text_score_i0 = []")."""
MAIN_PRINT_KEYS = {"I2T": "I2T", "T2I": "T2I", "Group score": "group", "Ipos_2T": "Ipos2T", "Ineg_2T": "Ineg2T",
                   "Tpos_2I": "Tpos2I", "Tneg_2I": "Tneg2I"}
"""The labels of what ``main_evaluation_BiVLC`` prints (IMirandaM/BiVLC@84f0d175 main_evaluation_BiVLC.py:87 "I2T:
{100*(sum(I2T)/len(data))}, T2I:") -> table2.csv's columns."""
MAIN_GLOBALS = {"I2T": ("I2T", "text_score"), "T2I": ("T2I", "image_score"), "group": ("group_score", "group_score"),
                "Ipos2T": ("Ipos_2T", "text_score_i0"), "Ineg2T": ("Ineg_2T", "text_score_i1"),
                "Tpos2I": ("Tpos_2I", "image_score_c0"), "Tneg2I": ("Tneg_2I", "image_score_c1")}
"""table2.csv's column -> (the 1/0 list ``main_evaluation_BiVLC`` leaves in its globals, the predictions' column)."""
SIMILARITIES = ("sim_C0_I0", "sim_C0_I1", "sim_C1_I0", "sim_C1_I1")
"""``evaluate_BiVLC``'s per-instance similarities (its locals) and this workspace's predictions' columns."""
SUGARCREPE_COLUMNS = ("filename", "caption", "negative_caption", "type", "subtype")
"""The authors' SugarCrepe copy's columns (IMirandaM/BiVLC@84f0d175 evaluation_SugarCrepe.py:59
"usecols=['filename','caption','negative_caption','type','subtype']")."""


# -- Reading what the authors' scripts print ----------------------------------------------------------------------
def printed_once(script: str, pattern: str, text: str, flags: int = 0):
    """The one match of ``pattern`` in what ``script`` printed (none or several: a ValueError)."""
    found = re.findall(pattern, text, flags)
    if len(found) != 1:
        raise ValueError(f"{script}: {len(found)} printed match(es) of {pattern!r}, expected one")
    return found[0]


def printed_detector_scores(text: str) -> dict[str, float]:
    """``Detector_evaluation_BiVLC``'s printed numbers, in points, by table5.csv column."""
    return {column: scale * float(printed_once(DETECTOR_BIVLC, pattern, text))
            for column, (pattern, scale) in DETECTOR_PRINTS.items()}


def printed_sugarcrepe_detector(text: str) -> float:
    """What ``Detector_evaluation_SugarCrepe`` prints as "Text_score_i0: ...", in points."""
    return float(printed_once(DETECTOR_SUGARCREPE, r"^Text_score_i0: (\S+)$", text, re.M))


def printed_main_scores(text: str) -> dict[str, dict[str, float]]:
    """``main_evaluation_BiVLC``'s printed scores (points): {"overall"|"replace"|"swap"|"add": {column: value}}."""
    out: dict[str, dict[str, float]] = {}
    for line in text.splitlines():
        m = re.search(r"checkpoint (OVERALL|REPLACE|SWAP|ADD)(?: \(\d+\))? scores:\s+(.*)$", line)
        if m is None:
            continue
        values = dict(re.findall(r"(I2T|T2I|Group score|Ipos_2T|Ineg_2T|Tpos_2I|Tneg_2I): ([^,\s]+)", m.group(2)))
        out[m.group(1).lower()] = {MAIN_PRINT_KEYS[k]: float(v) for k, v in values.items()}
    if "overall" not in out:
        raise ValueError(f"{MAIN_SCRIPT}: no 'checkpoint OVERALL scores:' line printed")
    return out


def printed_sugarcrepe_count(text: str) -> tuple[int, int]:
    """The count ``evaluation_SugarCrepe`` prints after "SUGARCREPE OVERALL:", (correct, n): exact, where the
    mean beside it has four significant digits only."""
    correct, n = printed_once(SUGARCREPE_SCRIPT, r"SUGARCREPE OVERALL:\s+\S+ \((\d+)/(\d+)\)", text)
    return int(correct), int(n)


def write_sugarcrepe_csv(path: Path, items: Sequence, image_root: Path) -> Path:
    """SugarCrepe's examples (``ImageToTextItem``: captions[0] positive, [1] negative; group ``<type>_<subtype>``)
    as the authors' copy (``SUGARCREPE_COLUMNS``, every field quoted), the image relative to ``image_root`` where it
    lies below."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(SUGARCREPE_COLUMNS), quoting=csv.QUOTE_ALL)
        writer.writeheader()
        for item in items:
            image = Path(as_ref(item.image).path)
            kind, _, sub = item.group.partition("_")
            writer.writerow({"filename": image.relative_to(image_root).as_posix() if image.is_relative_to(image_root)
                             else str(image), "caption": item.captions[0], "negative_caption": item.captions[1],
                             "type": kind, "subtype": sub})
    return path


# -- Running their scripts ----------------------------------------------------------------------------------------
def hub_dataset_from(ctx, snapshot: Path, where: str) -> ContextManager[None]:
    """``datasets.load_dataset("imirandam/BiVLC", ...)`` -> ``load_dataset(<the local snapshot of that repository>,
    ...)``: the same files (the data files of a repository and of its snapshot folder are resolved alike), no
    download."""
    # deferred: loads datasets only when called
    import datasets

    original = datasets.load_dataset

    def load(path, *args, **kwargs):
        return original(str(snapshot) if path == HUB_DATASET else path, *args, **kwargs)

    return ctx.replacing(datasets, "load_dataset", load, where,
                         f"load_dataset(<the snapshot of {HUB_DATASET} this workspace read>, split='test')",
                         "a hub download of data: the files this workspace's tables-full read (data/bivlc/BiVLC), "
                         "through the same call")


def run_released(code, oracle: PaperOracle, script: str, argv: Sequence[str], cwd: Path, log: Path,
                 tag: str) -> tuple[dict, str]:
    """``python <script> ARGV`` of the release in ``cwd`` (its own folder first on ``sys.path``, as ``python`` puts it
    there), listed in ``oracle.ran`` with ``[tag]``: the script's globals and what it printed."""
    with importable(code.module_file(script).parent), printed(log) as out:
        scope = run_script(code, script, argv, cwd=cwd)
    oracle.ran.append(command_line(code, script, argv) + f"  [{tag}]")
    return scope, out.getvalue()


# -- Weights in the form their loaders read -----------------------------------------------------------------------
def head_checkpoint(head: Path, tower: str, encoder: str, folder: Path) -> tuple[Path, bool]:
    """The file ``--image-checkpoint``/``--text-checkpoint`` loads for a head: a released one as it is (its
    ``model_state_dict`` holds the tower it was trained on and ``classifier.*``); a head trained here (the trainer's
    safetensors, ``head.weight``/``head.bias``) written in that layout with ``encoder``'s tower. Returns (file,
    whether it was written here)."""
    if Path(head).suffix != ".safetensors":
        return Path(head), False
    # deferred: loads safetensors only when called
    from safetensors.torch import load_file

    # deferred: loads torch only when called
    from papers.bivlc.detector_heads import RELEASED_TOWER_PREFIX

    ours, theirs = RELEASED_TOWER_PREFIX[tower]
    weights = load_file(str(head))
    state = {ours + k[len(theirs):]: v for k, v in state_dict(encoder).items()
             if (k.startswith(theirs) if theirs else not k.startswith("visual."))}
    state.update({"classifier.weight": weights["head.weight"].float(), "classifier.bias": weights["head.bias"].float()})
    target = folder / f"{encoder.replace('/', '__')}.{Path(head).stem}.{tower}.pt"
    return save({"model_state_dict": state}, target), True


def model_checkpoint(name: str, folder: Path) -> tuple[Path | None, bool]:
    """``--model-checkpoint`` for zoo model ``name``: None for OpenAI's weights (``--pretrained openai``); a torch
    training dict whose ``model_state_dict``/``state_dict`` their ``load_state_dict`` reads as it is; anything else
    (safetensors, wrapped keys) written as ``{"model_state_dict": ...}``. Returns (file, whether written here)."""
    # deferred: loads torch only when called
    import torch

    spec = get_spec(name)
    if spec.pretrained == "openai":
        return None, False
    source = weights_file(name)
    if source.suffix in (".pt", ".pth"):
        saved = torch.load(source, map_location="cpu", weights_only=True)
        inner = saved.get("state_dict", saved.get("model_state_dict")) if isinstance(saved, dict) else None
        if isinstance(inner, dict) and not any(k.startswith("module.") for k in inner):
            return source, False
    return save({"model_state_dict": state_dict(name)}, folder / f"{name.replace('/', '__')}.pt"), True


def authors_can_build(name: str) -> str | None:
    """Why ``--clip-model ViT-B-32 --pretrained openai`` (their only model) cannot be zoo model ``name``, or None."""
    spec = get_spec(name)
    if spec.backend != "open_clip" or spec.arch.removesuffix("-quickgelu") != AUTHORS_MODEL[0]:
        return f"{name} is {spec.backend} {spec.arch}; their load_model builds ViT-B-32 only"
    if not runs_quick_gelu(spec):
        return f"{name} runs GELU; their ViT-B-32 'openai' runs QuickGELU (open_clip 2.24)"
    return None


def summary_package() -> None:
    """Refuse to run with another ``torchsummary`` than their requirements' ``torch-summary==1.4.5`` (PyPI's
    ``torchsummary`` 1.5.1 installs a module of the same name whose ``summary`` runs a forward pass on float inputs)."""
    try:
        found = version("torch-summary")
    except PackageNotFoundError:
        found = None
    if found != "1.4.5":
        raise OracleError(f"their detector scripts import torchsummary from torch-summary==1.4.5 (their "
                          f"requirements.txt); installed: {found or 'none'}: pip install 'torch-summary==1.4.5'")


# -- This workspace's side ----------------------------------------------------------------------------------------
def _value(cell) -> float | None:
    return None if cell in (None, "") else round(float(cell), DECIMALS)


@dataclass(frozen=True)
class Inputs:
    """What ``tables-full`` read: the BiVLC snapshot, its instances (all, and the ones scored), SugarCrepe's set."""

    snapshot: Path
    all_ids: tuple[str, ...]
    items: tuple
    sugarcrepe: tuple
    sugarcrepe_root: Path


def read_inputs(ctx) -> Inputs:
    # deferred: loads PIL, torch, tqdm only when called
    from papers.bivlc.tables import default_image_dir, load_bivlc, load_sugarcrepe

    snapshot = data_root() / "bivlc" / "BiVLC"
    data = load_bivlc(snapshot, default_image_dir(), None)
    all_ids = tuple(it.item_id for it in data.items)
    cap = full_inputs(ctx.params).cap
    if cap is not None and len(data.capped(cap).items) != len(data.items):
        raise ValueError(f"{snapshot}: the stand-in holds more instances per category than full_inputs.cap ({cap}); "
                         "the authors' code reads the whole split, so both sides would not read the same instances")
    manifest = build_dir("full", "sugarcrepe") / "manifest.json"
    sugarcrepe, _ = load_sugarcrepe(manifest)
    return Inputs(snapshot, all_ids, data.items, tuple(sugarcrepe), PreparedSet.load(manifest).image_root)


# -- Table 5: the detectors ---------------------------------------------------------------------------------------
def run_detectors(ctx, code, oracle: PaperOracle, inputs: Inputs, results: Path) -> None:
    """Both detector scripts per row of ``table5.csv``, beside it and beside the stage's recomputed probabilities."""
    # deferred: loads open_clip only when called
    import open_clip
    # deferred: loads huggingface_hub only when called
    from huggingface_hub.constants import HF_HUB_CACHE

    # deferred: loads PIL, torch, tqdm only when called
    from papers.bivlc.tables import DetectorSpec, score_detectors_rows, table5_row

    table5 = rows_by(results / "table5.csv", "row")
    if not table5:
        oracle.not_covered.append(NotCovered(DET_BIVLC, "table5.csv has no row: no detector was scored here"))
        return
    width = int(open_clip.get_model_config(AUTHORS_MODEL[0])["embed_dim"])  # a rehearsal's shrunk one, or 512
    if width != HEAD_WIDTH:
        why = (f"STAND-IN WRONG: the ViT-B-32 open_clip builds here has a joint width of {width}; the authors' heads "
               f"are Linear({HEAD_WIDTH}, 1) ({code.pinned} {module_path(DETECTOR_BIVLC)}:28 \"self.classifier = "
               "torch.nn.Linear(in_features=512,\"), so their load_state_dict cannot read the rehearsal's heads: the "
               f"rehearsal's shrunk architectures must keep the joint width (embed_dim) of the real one")
        oracle.not_covered += [NotCovered(DET_BIVLC, why), NotCovered(DET_SUGARCREPE, why)]
        return
    summary_package()
    rows = ctx.params[PAPER]["full"]["detector_rows"]
    specs = {row: DetectorSpec.from_params(rows[row]) for row in table5}
    ours_scored = {d.row: d for d in score_detectors_rows(specs, inputs.items, inputs.sugarcrepe, ctx.device)[0]}
    sc_csv = write_sugarcrepe_csv(ctx.scratch / "inputs" / "test_SugarCrepe.csv", inputs.sugarcrepe,
                                  inputs.sugarcrepe_root)
    ids = [it.item_id for it in inputs.items]
    position = {item: k for k, item in enumerate(inputs.all_ids)}
    for row, spec in specs.items():
        scored = ours_scored[row]
        again = table5_row(scored)
        drifted = [k for k in (*MAIN, *FINER, "text_detection", "image_detection", "sugarcrepe")
                   if _value(again[k]) != _value(table5[row][k])]
        if drifted:
            raise RuntimeError(f"{row}: the stage's functions recomputed here do not give table5.csv's {drifted}")
        heads = {}
        # IMirandaM/BiVLC@84f0d175 src/Detectors/Detector_evaluation_BiVLC.py:96
        # "image_classifier.load_state_dict(checkpoint['model_state_dict'])": the layout head_checkpoint writes
        for tower, head in (("image", spec.image_head), ("text", spec.text_head)):
            heads[tower], written = head_checkpoint(head, tower, spec.encoder, ctx.scratch / "heads")
            if written:
                ctx.replaced(f"--{tower}-checkpoint (row {row}: a head trained here, {head.name})",
                             "the same head and its row's encoder tower in the released heads' torch.save layout",
                             "their loader reads only that layout: load_state_dict(checkpoint['model_state_dict'])")
        out = ctx.scratch / "detectors" / row
        out.mkdir(parents=True, exist_ok=True)
        common = ["--device", ctx.device, "--model_cache_dir", HF_HUB_CACHE, "--save-path", str(out), "--run_name", row]
        argv = [*common, "--image-checkpoint", str(heads["image"]), "--text-checkpoint", str(heads["text"])]
        with open_clip_as_of_their_time(ctx, f"{DETECTOR_UTILS} load_model", QUICK_GELU_WHY), \
                hub_dataset_from(ctx, inputs.snapshot, f"{DETECTOR_UTILS} dataset('classifiers_eval'): {LOAD_DATA}"):
            scope, text = run_released(code, oracle, DETECTOR_BIVLC, argv, ctx.scratch, out / "bivlc.log", row)
        for column, value in printed_detector_scores(text).items():
            oracle.numbers.append(number(DET_BIVLC, spec.encoder, f"{row} {column}", value, table5[row][column],
                                         DECIMALS))
        frame = scope["df"]
        natural, synthetic = frame[frame["label"] == 0], frame[frame["label"] == 1]
        if len(natural) != len(inputs.all_ids):
            raise RuntimeError(f"{row}: the authors' code read {len(natural)} instances, {len(inputs.all_ids)} here")
        p = scored.probabilities
        ours_d = detector_decisions(p.image, p.text)
        authors, ours, a_scores, o_scores = {}, {}, {}, {}
        for j, item in enumerate(ids):
            k = position[item]
            for metric, name in DETECTOR_GLOBALS.items():
                key = f"{item}/{metric}"
                authors[key] = bool(scope[name][k])
                ours[key] = bool(ours_d[metric][j])
                a_scores[key] = [float(natural["img_pred"].iloc[k]), float(synthetic["img_pred"].iloc[k]),
                                 float(natural["text_pred"].iloc[k]), float(synthetic["text_pred"].iloc[k])]
                o_scores[key] = [float(p.image[j, 0]), float(p.image[j, 1]), float(p.text[j, 0]), float(p.text[j, 1])]
        oracle.decisions.append(compare_decisions(DET_BIVLC, f"{spec.encoder} [{row}]", authors, ours,
                                                  authors_scores=a_scores, our_scores=o_scores))

        argv = [*common, "--text-checkpoint", str(heads["text"]), "--data-path", str(sc_csv)]
        with open_clip_as_of_their_time(ctx, f"{DETECTOR_UTILS} load_model", QUICK_GELU_WHY):
            scope, text = run_released(code, oracle, DETECTOR_SUGARCREPE, argv, ctx.scratch, out / "sugarcrepe.log",
                                       row)
        oracle.numbers.append(number(DET_SUGARCREPE, spec.encoder, f"{row} sugarcrepe",
                                     printed_sugarcrepe_detector(text), table5[row]["sugarcrepe"], DECIMALS))
        frame = scope["df"]
        pos, neg = frame[frame["label"] == 0]["text_pred"].tolist(), frame[frame["label"] == 1]["text_pred"].tolist()
        sc = p.sugarcrepe_text
        oracle.decisions.append(compare_decisions(
            DET_SUGARCREPE, f"{spec.encoder} [{row}]",
            {it.item_id: bool(v) for it, v in zip(inputs.sugarcrepe, scope["text_score_i0"], strict=True)},
            {it.item_id: bool(sc[k, 0] < sc[k, 1]) for k, it in enumerate(inputs.sugarcrepe)},
            authors_scores={it.item_id: [pos[k], neg[k]] for k, it in enumerate(inputs.sugarcrepe)},
            our_scores={it.item_id: [float(sc[k, 0]), float(sc[k, 1])] for k, it in enumerate(inputs.sugarcrepe)}))


# -- Tables 2-4: the contrastive models (where CLIP_utils can be fetched) -----------------------------------------
def run_contrastive(ctx, code, oracle: PaperOracle, inputs: Inputs, results: Path) -> None:
    """``main_evaluation_BiVLC`` and ``evaluation_SugarCrepe`` per row of ``table2.csv``. SugarCrepe is compared by
    its number only: ``tables-full`` keeps no per-example SugarCrepe decision."""
    # deferred: loads torch only when called
    import torch
    # deferred: loads huggingface_hub only when called
    from huggingface_hub.constants import HF_HUB_CACHE

    context = json.loads((results / "context.json").read_text(encoding="utf-8"))
    precision = (context.get("engine") or {}).get("precision", "fp32")
    reason = None if precision == "fp32" else f"this workspace scored at {precision} (params.yaml engine); theirs fp32"
    table2, table4 = rows_by(results / "table2.csv", "row"), rows_by(results / "table4.csv", "row")
    sc_csv = write_sugarcrepe_csv(ctx.scratch / "inputs" / "test_SugarCrepe.csv", inputs.sugarcrepe,
                                  inputs.sugarcrepe_root)
    for row, ours in table2.items():
        name = ours["model"]
        why = authors_can_build(name)
        if why is not None:
            oracle.not_covered.append(NotCovered(f"{BIVLC} ({row})", why))
            continue
        checkpoint, written = model_checkpoint(name, ctx.scratch / "weights")
        if written:
            ctx.replaced(f"--model-checkpoint (row {row}: {name})", "its weights as {'model_state_dict': ...}",
                         "their loader reads a torch training dict: load_state_dict(checkpoint['model_state_dict'])")
        out = ctx.scratch / "contrastive" / row
        out.mkdir(parents=True, exist_ok=True)
        common = ["--device", ctx.device, "--model_cache_dir", HF_HUB_CACHE, "--save-path", str(out), "--run_name", row,
                  *(["--model-checkpoint", str(checkpoint)] if checkpoint else [])]
        load_model = f"{CLIP_UTILS} load_model"
        with open_clip_as_of_their_time(ctx, load_model, QUICK_GELU_WHY), \
                hub_dataset_from(ctx, inputs.snapshot, f"{CLIP_UTILS} dataset('evaluation'): {LOAD_DATA}"), \
                returns_of(code.module_file(CLIP_UTILS), "evaluate_BiVLC", own_locals=SIMILARITIES) as seen:
            scope, text = run_released(code, oracle, MAIN_SCRIPT, common, ctx.scratch, out / "bivlc.log", name)
        scores = printed_main_scores(text)
        for column, value in scores["overall"].items():
            oracle.numbers.append(number(BIVLC, name, column, value, ours[column], DECIMALS, reason))
        for kind in TYPES:
            for column in MAIN:
                if kind in scores and column in scores[kind]:
                    oracle.numbers.append(number(BIVLC, name, f"{kind} {column}", scores[kind][column],
                                                 table4.get(row, {}).get(f"{kind}_{column}"), DECIMALS, reason))
        sims = {s: torch.cat([f[s].reshape(-1) for f in seen.locals]).tolist() for s in SIMILARITIES}
        predictions = rows_by(results / "predictions" / f"{name.replace('/', '__')}.csv", "item_id")
        authors, mine, a_scores, o_scores = {}, {}, {}, {}
        for k, item in enumerate(inputs.all_ids):
            if item not in predictions:
                continue
            for metric, (glob, column) in MAIN_GLOBALS.items():
                key = f"{item}/{metric}"
                authors[key] = bool(scope[glob][k])
                mine[key] = predictions[item][column] in ("1", "True", "true")
                a_scores[key] = [sims[s][k] for s in SIMILARITIES]
                o_scores[key] = [float(predictions[item][s]) for s in SIMILARITIES]
        oracle.decisions.append(compare_decisions(BIVLC, name, authors, mine, reason, a_scores, o_scores))

        argv = [*common, "--data-path", str(sc_csv), "--img-path", str(inputs.sugarcrepe_root)]
        with open_clip_as_of_their_time(ctx, load_model, QUICK_GELU_WHY):
            scope, text = run_released(code, oracle, SUGARCREPE_SCRIPT, argv, ctx.scratch, out / "sugarcrepe.log",
                                       name)
        correct, total = printed_sugarcrepe_count(text)
        oracle.numbers.append(number(SUGARCREPE, name, "micro average", 100.0 * correct / total, ours["sugarcrepe"],
                                     DECIMALS, reason))


def run(ctx) -> PaperOracle:
    results = ctx.results(PAPER)
    code = ctx.code(REPO)
    oracle = PaperOracle(PAPER, code=[code.pinned])
    register_local_configs()  # a rehearsal's shrunk architectures (VLC_ARCH_OVERRIDES); nothing otherwise
    inputs = read_inputs(ctx)
    if (code.root / module_path(CLIP_UTILS)).is_file():
        run_contrastive(ctx, code, oracle, inputs, results)
    else:
        imports = "from src.CLIP_fine_tuning.CLIP_utils import load_model, random_seed,"
        oracle.not_covered += [NotCovered(benchmark, (
            f"{module_path(CLIP_UTILS)}, registered (group authors-code), could not be fetched here: it is not in the "
            f"mirror and there is no network; {module_path(script)} imports it ({code.pinned} {module_path(script)}:"
            f"{line} \"{imports} {names}\"), so it runs wherever the file can be fetched"))
            for benchmark, script, line, names in ((f"{BIVLC} (Tables 2-4)", MAIN_SCRIPT, 16,
                                                    "dataset, evaluate_BiVLC"),
                                                   (SUGARCREPE, SUGARCREPE_SCRIPT, 14, "evaluate_SugarCrepe"))]
    run_detectors(ctx, code, oracle, inputs, results)
    oracle.not_covered.append(NotCovered(
        "Tables 2-3's generative rows (Open CapPa, VQAScore)", "their evaluation scripts (OSCapPa_*.py, "
        "VQAScore_*.py) are not in the issue's list nor registered, and this workspace does not score those models"))
    return oracle
