"""Kamath et al. (hard positives), Tables 1-3 in the mini profile, by fine-tuning mini/xs-32k.

A hard-positive benchmark rendered from the mini world; mini/xs-32k fine-tuned with hard negatives only, with hard
positives and hard negatives, and the controls.

The paper (Sec. 2.4, 3, 4) adds a hard positive c_p (same meaning as the caption c) to each (image, c, c_n) of
VL-CheckList (REPLACE: attributes, relations) and VG-Attribution (SWAP), shows that hard-negative fine-tuning raises
Orig. Test Acc. (s(c) > s(c_n)) more than Aug. Test Acc. (c and c_p both above c_n) and makes models brittle (exactly
one of c, c_p above c_n), and that fine-tuning with hard positives as well reduces the brittleness. The world makes
hard positives true by construction (``common.miniworld.positives``: synonyms of ``lexicon.SURFACE``, converse
relations of ``lexicon.CONVERSE``).

Top to bottom:

1. ``set``: the benchmark (``TEST_STREAM``; held-out colour-shape pairs may appear, as unseen combinations), three
   groups of ``examples_per_group``: replace-attributes (c_n: one stated attribute replaced by a false value drawn
   from the world prior, ``negatives.replace_att``; c_p: the same attribute said with a synonym), replace-relations
   (``negatives.replace_rel``; c_p: the same relation's synonym) and swap (VG-Attribution: "A1 X and A2 Y", c_n
   "A2 X and A1 Y" by ``negatives.swap_att``, c_p "A2 Y and A1 X"). The world has synonyms for sizes, purple, three
   shapes and every relation, so replace-attributes is mostly sizes (small/little, large/big) and purple/violet.
   PNG images and ``manifest.json``; ``load_test_items`` reads them as (c, c_p, c_n) items
   (``papers.hard_positives.evaluation.triple_item``).
2. ``finetune-set``: rendered training scenes (``FINETUNE_STREAM``, no held-out colour-shape pairs), captions per
   image, and per caption one perturbation type (REPLACE or SWAP, drawn among those that give both), one hard
   positive and one hard negative of that type, drawn independently as in the paper (LLM rewrites and CREPE-style
   negatives are made apart): REPLACE negatives by ``replace_att`` / ``replace_rel`` / ``replace_obj``, SWAP
   negatives by ``swap_att`` / ``swap_obj``; REPLACE positives a synonym of any stated fact, SWAP positives a
   meaning-preserving reordering. Counts of what was set aside go to the manifest.
3. ``run <name>``: mini/xs-32k fine-tuned by the shared trainer with ``HardPositiveLoss`` (SVLC-style, Sec. 4.1;
   ``papers/hard_positives/losses.py``), the same captions, order, seed, steps and optimiser for every run of
   ``papers.hard_positives.runs.RUNS`` (the same runs as the full profile's): ``clip-ft`` (no HP, no HN: the paper's
   "COCO alone" control), ``hn`` (HN only), ``hp-hn``, ``hp-hn-swap`` and ``hp-hn-replace`` (only that type's rows;
   Table 1(d)), ``ratio-<w>`` (HP weight 1, HN weight w; Table 3, the paper's Sec. 4.3 reading of "ratio").
4. The tables: ``papers.hard_positives.mini_tables`` (a module of its own, so that editing how the tables are
   written does not retrain the runs).

Stages (``papers/hard_positives/dvc.yaml``): ``mini-test-set``, ``mini-finetune-set``, ``mini-finetune@<run>``
(``table1-mini`` is ``mini_tables``).
"""
from __future__ import annotations

import argparse
import json
import random
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np
import torch

from common.errors import WorkspaceError
from common.training.rendered import CaptionBatches, caption_tokens, pixels, refuse_same_tokens
from common.training.recipe import RunParams
from common.training.legacy import resume_path
from common.zoo.trained import tokenizer_for
from common.io import atomic_path, sha256_file, write_json_atomic, write_text_atomic
from common.miniworld import VERSION
from common.miniworld.build import scene_to_json, stream
from common.miniworld.claims import Claim, sample_claim
from common.miniworld.negatives import EDIT_TYPES, replace_att, replace_rel, swap_att
from common.miniworld.positives import HardPositive, hard_positive, positive_for_negative, swap_positive
from common.miniworld.render import NATURAL, render
from common.miniworld.scene import Scene, contains_heldout, sample_scene
from common.tasks import DatasetError, ImageToTextItem
from common.training import FromZoo, Init, TrainResult, train
from papers.hard_positives import evaluation
from papers.hard_positives.runs import RUNS, TYPES, loss_for, run_spec

NEGATIVE_EDITS: dict[str, tuple[str, ...]] = {"replace": ("replace_att", "replace_rel", "replace_obj"),
                                              "swap": ("swap_att", "swap_obj")}
"""The fluent hard negatives (``common.miniworld.negatives``) of each type in the fine-tuning set: SugarCrepe's
REPLACE and SWAP categories, the analog of the CREPE-process negatives the paper trains with."""
TEST_STREAM = "test-hard-positives"
FINETUNE_STREAM = "hard-positives-finetune-train"
TEST_STAGE = "papers/hard_positives/dvc.yaml:mini-test-set"
FINETUNE_SET_STAGE = "papers/hard_positives/dvc.yaml:mini-finetune-set"
RUN_STAGE = "papers/hard_positives/dvc.yaml:mini-finetune@{run}"
TABLE_STAGE = "papers/hard_positives/dvc.yaml:table1-mini"
CHECKPOINT_EVERY = 50


class HardPositivesMiniError(WorkspaceError):
    """An input of the mini hard-positive runs that cannot be used as given (the message names the file)."""


def _read_json(path: Path):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HardPositivesMiniError(f"{path}: missing (run the stage that builds it)") from None
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}: not valid JSON ({exc})") from None


# ------------------------------------------------------------------------------------------------------------------
# 1. The benchmark
# ------------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TestSetConfig:
    examples_per_group: int = 500
    image_size: int = 48
    seed: int = 0


@dataclass(frozen=True)
class TestExample:
    """One benchmark row before it has an image file: c, c_p, c_n and how c_p and c_n were made."""

    group: str
    claim: Claim
    positive: HardPositive
    negative: Claim
    negative_edit: str


def _scene_examples(scene: Scene, rng: random.Random) -> dict[str, TestExample]:
    """One candidate example per group for a scene (a group is missing when its edit does not apply). Every group is
    drawn for every scene, whatever is still needed, so a smaller set is a prefix of a larger one."""
    out: dict[str, TestExample] = {}
    for group, edit in (("replace-attributes", replace_att), ("replace-relations", replace_rel)):
        claim = sample_claim(rng, scene)
        negative = edit(scene, claim, rng)
        positive = positive_for_negative(scene, claim, negative, rng) if negative is not None else None
        if positive is not None:
            out[group] = TestExample(group, claim, positive, negative, edit.__name__)
    if len(scene.objects) >= 2:  # VG-Attribution: "the A1 X and the A2 Y"
        claim = sample_claim(rng, scene, pattern="pair")
        negative = swap_att(scene, claim, rng)
        positive = swap_positive(scene, claim, rng) if negative is not None else None
        if positive is not None:
            out["swap"] = TestExample("swap", claim, positive, negative, "swap_att")
    return out


def build_test_set(config: TestSetConfig, out_dir: Path) -> dict:
    """Render ``examples_per_group`` examples of each group into ``out_dir``: ``images/*.png``, ``manifest.json``
    (the rows, with counts) and ``scenes.jsonl`` (each image's scene graph and claims). Images are shared across
    groups, at most one example per group each."""
    rng = stream(config.seed, TEST_STREAM)
    quota = config.examples_per_group
    counts = {g: 0 for g in evaluation.GROUPS}
    records: list[dict] = []
    scene_lines: list[str] = []
    images_dir = Path(out_dir) / "images"
    images_dir.mkdir(parents=True, exist_ok=True)
    scenes_drawn = 0
    while min(counts.values()) < quota:
        index, scenes_drawn = scenes_drawn, scenes_drawn + 1
        scene = sample_scene(rng, allow_heldout=True)
        wanted = {g: e for g, e in _scene_examples(scene, rng).items() if counts[g] < quota}
        if not wanted:
            continue
        filename = f"hp_{index:06d}.png"
        with atomic_path(images_dir / filename) as tmp:
            render(scene, config.image_size, NATURAL, seed=index).save(tmp, format="PNG")
        heldout = contains_heldout(scene)
        for group, e in wanted.items():
            records.append({
                "id": f"{group}/{counts[group]}", "group": group, "filename": filename, "caption": e.claim.text(),
                "positive": e.positive.text, "negative": e.negative.text(), "negative_edit": e.negative_edit,
                "positive_variant": e.positive.variant, "heldout_combination": heldout})
            counts[group] += 1
        scene_lines.append(json.dumps({
            "filename": filename, "scene": scene_to_json(scene),
            "examples": {g: {"claim": asdict(e.claim), "positive_claim": asdict(e.positive.claim),
                             "negative_claim": asdict(e.negative)} for g, e in wanted.items()}}))
    scenes = write_text_atomic(Path(out_dir) / "scenes.jsonl", "\n".join(scene_lines) + "\n")
    manifest = {
        "kind": "hard-positives-test", "profile": "mini", "world_version": VERSION, "stream": TEST_STREAM,
        "config": asdict(config), "counts": counts, "n_images": len(scene_lines), "scenes_drawn": scenes_drawn,
        "positive_variants": dict(sorted(Counter(r["positive_variant"] for r in records).items())),
        "heldout_examples": sum(r["heldout_combination"] for r in records),
        "scenes_sha256": sha256_file(scenes), "examples": records,
    }
    write_json_atomic(Path(out_dir) / "manifest.json", manifest, indent=1)
    return {k: v for k, v in manifest.items() if k != "examples"}


TEST_FIELDS = ("id", "group", "filename", "caption", "positive", "negative")


def load_test_items(root: Path) -> list[ImageToTextItem]:
    """The benchmark as (c, c_p, c_n) items; a bad record is a ``DatasetError`` naming the file and the record."""
    root = Path(root)
    path = root / "manifest.json"
    manifest = _read_json(path)
    examples = manifest.get("examples") if isinstance(manifest, dict) else None
    if not isinstance(examples, list) or not examples:
        raise DatasetError(f"{path}: no 'examples' list (rebuild the test set: the mini-test-set stage)")
    items, seen = [], set()
    for k, record in enumerate(examples):
        where = f"{path}: record {k}"
        if not isinstance(record, dict):
            raise DatasetError(f"{where}: not an object")
        for name in TEST_FIELDS:
            if not isinstance(record.get(name), str) or not record[name]:
                raise DatasetError(f"{where}: no {name!r}")
        if record["id"] in seen:
            raise DatasetError(f"{where}: id {record['id']!r} repeats an earlier record")
        seen.add(record["id"])
        image = root / "images" / record["filename"]
        if not image.is_file():
            raise DatasetError(f"{where}: image {image} is missing")
        items.append(evaluation.triple_item(record["id"], record["group"], image, record["caption"],
                                            record["positive"], record["negative"], origin=where))
    return items


# ------------------------------------------------------------------------------------------------------------------
# 2. The fine-tuning set
# ------------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FinetuneSetConfig:
    train_images: int = 2000
    captions_per_image: int = 3
    image_size: int = 48
    seed: int = 0
    tries_per_image: int = 40
    """Claims drawn per scene before settling for fewer captions (a one-object scene has few true sentences)."""


@dataclass(frozen=True)
class TrainingRow:
    """A caption with one hard positive and one hard negative of its ``type`` (and the rules that made them)."""

    caption: str
    type: str
    positive: str
    negative: str
    positive_variant: str
    negative_edit: str


@dataclass(frozen=True)
class FinetuneSet:
    """Images (N, H, W, 3) uint8 and per image ``captions_per_image`` training rows."""

    images: np.ndarray
    rows: list[list[TrainingRow]]

    def __post_init__(self):
        if self.images.ndim != 4 or len(self.images) != len(self.rows):
            raise ValueError("FinetuneSet: images (N, H, W, 3) and one list of rows per image")
        if len({len(r) for r in self.rows}) != 1 or not self.rows[0]:
            raise ValueError("FinetuneSet: every image needs the same number of rows, at least one")

    @property
    def captions_per_image(self) -> int:
        return len(self.rows[0])

    def of_types(self, types: Sequence[str]) -> "FinetuneSet":
        """Only the rows of ``types``: the images that keep one, each padded to the same number of rows by repeating
        its kept rows in order (the batches need as many per image)."""
        kept = [(i, [r for r in rows if r.type in types]) for i, rows in enumerate(self.rows)]
        kept = [(i, rows) for i, rows in kept if rows]
        if not kept:
            raise HardPositivesMiniError(f"the fine-tuning set has no rows of types {list(types)}")
        per_image = self.captions_per_image
        return FinetuneSet(self.images[[i for i, _ in kept]],
                           [[rows[k % len(rows)] for k in range(per_image)] for _, rows in kept])

    def texts(self, name: str) -> list[list[str]]:
        """One field of every row, per image (``caption``, ``positive`` or ``negative``)."""
        return [[getattr(r, name) for r in rows] for rows in self.rows]

    @classmethod
    def load(cls, root: Path) -> "FinetuneSet":
        root = Path(root)
        try:
            images = np.load(root / "images.npy", allow_pickle=False)
        except FileNotFoundError:
            raise HardPositivesMiniError(f"{root / 'images.npy'}: no fine-tuning set here; run the mini-finetune-set "
                                         "stage (`python -m papers.hard_positives.mini finetune-set`)") from None
        path = root / "rows.json"
        records = _read_json(path)
        if not isinstance(records, list) or len(records) != len(images):
            raise DatasetError(f"{path}: expected {len(images)} lists of rows (one per image)")
        names = [f.name for f in fields(TrainingRow)]
        rows = []
        for i, image_rows in enumerate(records):
            if not isinstance(image_rows, list) or not image_rows:
                raise DatasetError(f"{path}: record {i}: expected a non-empty list of rows")
            out = []
            for j, row in enumerate(image_rows):
                bad = [n for n in names if not isinstance(row, dict) or not isinstance(row.get(n), str) or not row[n]]
                if bad:
                    raise DatasetError(f"{path}: record {i}: row {j}: no {bad[0]!r}")
                if row["type"] not in TYPES:
                    raise DatasetError(f"{path}: record {i}: row {j}: unknown type {row['type']!r} (one of {TYPES})")
                out.append(TrainingRow(**{n: row[n] for n in names}))
            rows.append(out)
        try:
            return cls(images, rows)
        except ValueError as exc:
            raise DatasetError(f"{root}: {exc}") from None


@dataclass
class SetAside:
    """What the fine-tuning set's draws left out, by reason (the manifest's ``counts``)."""

    scenes_without_a_qualifying_caption: int = 0
    repeated_claims: int = 0
    claims_without_a_type: int = 0
    no_positive: Counter = field(default_factory=Counter)
    no_negative: Counter = field(default_factory=Counter)


def _perturbations(scene: Scene, claim: Claim, rng: random.Random, aside: SetAside) -> dict[str, TrainingRow]:
    """Per type, a row with one hard positive and one hard negative of it (drawn independently), where both exist."""
    caption = claim.text()
    out = {}
    for kind in TYPES:
        positive = hard_positive(scene, claim, kind, rng)
        edits = list(NEGATIVE_EDITS[kind])
        rng.shuffle(edits)
        negative, edit = None, ""
        for edit in edits:
            negative = EDIT_TYPES[edit](scene, claim, rng)
            if negative is not None:
                break
        aside.no_positive[kind] += positive is None
        aside.no_negative[kind] += negative is None
        if positive is None or negative is None:
            continue
        texts = {caption.lower(), positive.text.lower(), negative.text().lower()}
        if len(texts) != 3:  # pragma: no cover - a true and a false claim never read alike
            raise AssertionError(f"{caption!r}: hard positive and negative coincide with it or each other")
        out[kind] = TrainingRow(caption, kind, positive.text, negative.text(), positive.variant, edit)
    return out


def _rows_for(rng: random.Random, scene: Scene, config: FinetuneSetConfig, aside: SetAside) -> list[TrainingRow]:
    """Up to ``captions_per_image`` rows with distinct captions (padded by repeating the first ones, as a scene with
    few such sentences allows), or nothing when no claim of the scene qualifies."""
    rows: list[TrainingRow] = []
    for _ in range(config.tries_per_image):
        claim = sample_claim(rng, scene)
        if any(r.caption == claim.text() for r in rows):
            aside.repeated_claims += 1
            continue
        options = _perturbations(scene, claim, rng, aside)
        if not options:
            aside.claims_without_a_type += 1
            continue
        rows.append(options[rng.choice(sorted(options))])
        if len(rows) == config.captions_per_image:
            break
    k = len(rows)
    return rows + [rows[i % k] for i in range(config.captions_per_image - k if k else 0)]


def render_finetune_set(config: FinetuneSetConfig) -> tuple[FinetuneSet, dict]:
    """The fine-tuning set and its counts (rows by type and rule, and what was set aside)."""
    rng = stream(config.seed, FINETUNE_STREAM)
    images = np.empty((config.train_images, config.image_size, config.image_size, 3), dtype=np.uint8)
    rows: list[list[TrainingRow]] = []
    aside = SetAside()
    padded = 0
    while len(rows) < config.train_images:
        scene = sample_scene(rng, allow_heldout=False)
        image_rows = _rows_for(rng, scene, config, aside)
        if not image_rows:
            aside.scenes_without_a_qualifying_caption += 1
            continue
        padded += len({r.caption for r in image_rows}) < len(image_rows)
        images[len(rows)] = np.asarray(render(scene, config.image_size, NATURAL, seed=rng.randrange(2**31)))
        rows.append(image_rows)
    distinct = {r for image_rows in rows for r in image_rows}
    counts = {
        "images": config.train_images, "rows": config.train_images * config.captions_per_image,
        "distinct_rows": len(distinct),
        "distinct_rows_by_type": dict(sorted(Counter(r.type for r in distinct).items())),
        "positive_variants": dict(sorted(Counter(r.positive_variant for r in distinct).items())),
        "negative_edits": dict(sorted(Counter(r.negative_edit for r in distinct).items())),
        "images_with_repeated_rows": padded,
        "scenes_without_a_qualifying_caption": aside.scenes_without_a_qualifying_caption,
        "repeated_claims": aside.repeated_claims, "claims_without_a_type": aside.claims_without_a_type,
        "claims_without_a_positive_by_type": {k: aside.no_positive[k] for k in TYPES},
        "claims_without_a_negative_by_type": {k: aside.no_negative[k] for k in TYPES},
    }
    return FinetuneSet(images, rows), counts


def build_finetune_set(config: FinetuneSetConfig, out_dir: Path) -> dict:
    """Write ``images.npy``, ``rows.json`` and ``manifest.json`` into ``out_dir``."""
    data, counts = render_finetune_set(config)
    out_dir = Path(out_dir)
    with atomic_path(out_dir / "images.npy") as tmp:
        with open(tmp, "wb") as fh:
            np.save(fh, data.images)
    write_json_atomic(out_dir / "rows.json", [[asdict(r) for r in rows] for rows in data.rows], indent=None)
    manifest = {"kind": "hard-positives-finetune", "profile": "mini", "world_version": VERSION,
                "stream": FINETUNE_STREAM, "config": asdict(config), "counts": counts,
                "sha256": {f: sha256_file(out_dir / f) for f in ("images.npy", "rows.json")}}
    write_json_atomic(out_dir / "manifest.json", manifest)
    return manifest


# ------------------------------------------------------------------------------------------------------------------
# 3. Runs
# ------------------------------------------------------------------------------------------------------------------
def run_data(run: str, data: FinetuneSet) -> FinetuneSet:
    """What ``run`` trains on: every row, or only its types' rows."""
    spec = run_spec(run)
    return data if set(spec.types) == set(TYPES) else data.of_types(spec.types)


def batches_for(data: FinetuneSet, tokenize: Callable[[Sequence[str]], torch.Tensor], name: str,
                where: str = "the fine-tuning set") -> CaptionBatches:
    """Texts per sample [caption, hard positive, hard negative] (the loss's layout); a hard positive or negative
    that tokenizes like its caption is refused."""
    captions = caption_tokens(tokenize, data.texts("caption"))
    extras = {k: caption_tokens(tokenize, data.texts(k)) for k in ("positive", "negative")}
    for k, tokens in extras.items():
        refuse_same_tokens(captions, tokens, data.texts("caption"), f"hard {k}", where)
    return CaptionBatches(pixels(data.images), captions, [extras["positive"], extras["negative"]], name,
                          fields={"texts": ["caption", "hard_positive", "hard_negative"]})


def train_run(run: str, data: FinetuneSet, params: RunParams, out_path: Path, *, init: Init | None = None,
              tokenize: Callable[[Sequence[str]], torch.Tensor] | None = None, provenance: Mapping | None = None,
              checkpoint_every: int = CHECKPOINT_EVERY, progress: bool = False) -> TrainResult:
    """Fine-tune ``init`` (default: the zoo's ``params.base``) as ``run`` on ``data`` (the whole set; the run keeps
    its types' rows) and write ``out_path`` with its sidecar."""
    spec = run_spec(run)
    data = run_data(run, data)
    if len(data.images) < params.batch_size:
        raise HardPositivesMiniError(f"{run}: {len(data.images)} training images cannot fill a batch of "
                                     f"{params.batch_size}")
    init = init or FromZoo(params.base)
    if tokenize is None:
        tokenize = tokenizer_for(init.describe()["arch"])
    batches = batches_for(data, tokenize, f"hard-positives-mini-{'-'.join(spec.types)}")
    provenance = {"run": run, "hard_positive_weight": spec.hard_positive_weight,
                  "hard_negative_weight": spec.hard_negative_weight, "types": list(spec.types), **(provenance or {})}
    key = {"run": run, "params": asdict(params), "init": init.describe(), "data": batches.describe(),
           "provenance": provenance}
    code = [Path(__file__), Path(__file__).with_name("losses.py"), Path(__file__).with_name("runs.py")]
    return train(params.trainer_config(), init, batches, loss_for(spec), out_path, provenance=provenance,
                 resume=True, progress=progress, checkpoint_every=checkpoint_every,
                 resume_path=resume_path(f"hard-positives-{run}", key, code))


# ------------------------------------------------------------------------------------------------------------------
# Entry points
# ------------------------------------------------------------------------------------------------------------------
def default_dir() -> Path:
    from common.paths import build_root

    return build_root() / "mini" / "hard_positives"


def _section(stage: str) -> tuple[dict, dict]:
    from common.params import stage_params

    params = stage_params(stage)
    return params, params["hard_positives"]["mini"]


def _cmd_set(args) -> int:
    params, section = _section(TEST_STAGE)
    config = TestSetConfig(examples_per_group=section["test_examples_per_group"],
                           image_size=params["mini"]["world"]["image_size"], seed=section["seed"])
    print(json.dumps(build_test_set(config, Path(args.out or default_dir() / "test")), indent=2))
    return 0


def _cmd_finetune_set(args) -> int:
    params, section = _section(FINETUNE_SET_STAGE)
    config = FinetuneSetConfig(train_images=section["train_images"], captions_per_image=section["captions_per_image"],
                               image_size=params["mini"]["world"]["image_size"], seed=section["seed"])
    manifest = build_finetune_set(config, Path(args.out or default_dir() / "finetune"))
    print(json.dumps(manifest["counts"], indent=2))
    return 0


def _cmd_run(args) -> int:
    from common import reproducible

    reproducible.reexec_pinned()  # before any tensor work: bit-identical weights on any x86-64 CPU
    reproducible.fix_threads()
    _, section = _section(RUN_STAGE.format(run=args.run))
    params = RunParams.from_params(section)
    set_dir = Path(args.set or default_dir() / "finetune")
    out = Path(args.out or default_dir() / "models" / f"{args.run}.safetensors")
    started = time.perf_counter()
    result = train_run(args.run, FinetuneSet.load(set_dir), params, out, progress=True, provenance={
        "set_manifest_sha256": sha256_file(set_dir / "manifest.json"), **reproducible.describe()})
    seconds = round(time.perf_counter() - started, 1)
    log = default_dir() / "logs" / f"{args.run}.json"
    write_json_atomic(log, {"run": args.run, "seconds": seconds, "train_seconds": result.train_seconds,
                            "resumed_from": result.resumed_from, "final_loss": result.final_loss,
                            "machine": reproducible.machine()})
    print(f"{args.run}: final loss {result.final_loss:.4f} after {params.steps} steps, {seconds} s; weights: {out}; "
          f"log (wall time, not a DVC output): {log}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m papers.hard_positives.mini", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("set", help="render the hard-positive benchmark (replace-attributes, replace-relations, swap)")
    p.add_argument("--out", default=None, help="default: build/mini/hard_positives/test")
    p.set_defaults(func=_cmd_set)
    p = sub.add_parser("finetune-set", help="render the fine-tuning set: captions with a hard positive and negative")
    p.add_argument("--out", default=None, help="default: build/mini/hard_positives/finetune")
    p.set_defaults(func=_cmd_finetune_set)
    p = sub.add_parser("run", help="fine-tune the base model as one of the runs")
    p.add_argument("run", choices=sorted(RUNS))
    p.add_argument("--set", default=None, help="default: build/mini/hard_positives/finetune")
    p.add_argument("--out", default=None, help="default: build/mini/hard_positives/models/<run>.safetensors")
    p.set_defaults(func=_cmd_run)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    from common.errors import run_entry_point

    raise SystemExit(run_entry_point(main))
