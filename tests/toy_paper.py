"""The toy paper: the smallest complete paper package (a dvc.yaml, a sources file, a set stage, a job builder and a
table), added to a throwaway copy of the workspace by the tests that run DVC end to end on a paper of their own
(``test_new_paper``: a new paper edits no file of common/, and a team shares its outputs through a DVC remote)."""
from __future__ import annotations

import json
import tomllib
from pathlib import Path

from common.paths import ROOT
from shared_files import MIRROR  # VLC_MIRROR when set, else ../shared/mirror

PARAMS = "\ntoy:\n  mini:\n    images: 24\n    seed: 0\n    steps: 3\n    batch_size: 8\n"

INIT = '''"""A toy paper: the smallest complete paper package (no audit, report, card, rehearsal or oracle)."""
from common.paper import Paper

PAPER = Paper(name="toy")
'''

SETS = '''"""The toy paper's set: mini-world scenes with two captions each, and the size of one fetched file."""
import argparse
import json
import random
from pathlib import Path

import numpy as np

from common.files.io import write_json_atomic
from common.miniworld.claims import sample_claim
from common.miniworld.render import render
from common.miniworld.scene import sample_scene
from common.pipeline.params import own_section
from common.registry.fetch import fetch


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    _, section = own_section("toy.mini")
    released = json.loads(fetch("toy/swap_att.json", progress=False).read_text())
    rng = random.Random(section["seed"])
    scenes = [sample_scene(rng) for _ in range(section["images"])]
    args.out.mkdir(parents=True, exist_ok=True)
    np.save(args.out / "images.npy", np.stack([np.asarray(render(s, 48, seed=i)) for i, s in enumerate(scenes)]))
    write_json_atomic(args.out / "captions.json", [[sample_claim(rng, s).text() for _ in range(2)] for s in scenes])
    write_json_atomic(args.out / "manifest.json", {"images": len(scenes), "released_examples": len(released)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
'''

TRAIN = '''"""The toy paper's fine-tune: a job builder and the shared run command, nothing else."""
import argparse
import json

import numpy as np

from common.paths import build_dir
from common.pipeline.params import own_section
from common.training import ClipLoss, FromScratch, TrainConfig
from common.training.job import FinetuneJob
from common.training.launch import add_run_command
from common.training.rendered import CaptionBatches, caption_tokens, pixels
from common.zoo.trained import tokenizer_for

RUNS = ("clip",)


def build(args, world, cpu_profile) -> FinetuneJob:
    _, section = own_section("toy.mini")
    set_dir = build_dir("mini", "toy") / "set"
    captions = json.loads((set_dir / "captions.json").read_text())
    batches = CaptionBatches(pixels(np.load(set_dir / "images.npy")),
                             caption_tokens(tokenizer_for("mini-vit-xs"), captions), name="toy")
    config = TrainConfig(steps=section["steps"], batch_size=section["batch_size"], warmup_steps=1,
                         seed=section["seed"])
    return FinetuneJob(f"toy-{args.run}", FromScratch("mini-vit-xs"), batches, ClipLoss, config, __name__,
                       provenance=dict(cpu_profile))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    add_run_command(sub, RUNS, build, out_path=lambda args: build_dir("mini", "toy") / "models" / f"{args.run}.safetensors",
                    log_dir=lambda: build_dir("mini", "toy") / "logs")
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
'''

TABLES = '''"""The toy paper's table: its fine-tune scored by the shared engine (image -> caption vs another image's caption)."""
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from common.evaluation.engine import Engine, EngineConfig
from common.files.io import write_csv_atomic
from common.paths import RESULTS, build_dir
from common.evaluation.scoring.selection import image_to_text
from common.files.tasks import ImageToTextItem
from common.zoo.trained import served


@dataclass(frozen=True)
class Row:
    name: str
    checkpoint: Path | None
    label: str = "toy CLIP"


def main() -> int:
    set_dir = build_dir("mini", "toy") / "set"
    images = np.load(set_dir / "images.npy")
    captions = json.loads((set_dir / "captions.json").read_text())
    image_dir = build_dir("mini", "toy") / "images"
    image_dir.mkdir(parents=True, exist_ok=True)
    items = []
    for i, pixels in enumerate(images):
        path = image_dir / f"{i}.png"
        Image.fromarray(pixels).save(path)
        items.append(ImageToTextItem(f"toy/{i}", "toy", path, (captions[i][0], captions[(i + 1) % len(images)][0])))
    model = served(Row("toy/clip", build_dir("mini", "toy") / "models" / "clip.safetensors"), "mini-vit-xs")
    result = image_to_text(Engine(model, EngineConfig(progress=False)), items)
    accuracy = float(np.mean([o.correct for o in result.outcomes]))
    write_csv_atomic(RESULTS / "toy" / "mini" / "table.csv", [{"model": "toy/clip", "n": len(items),
                                                                "accuracy": round(accuracy, 4)}],
                     ["model", "n", "accuracy"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
'''

DVC_YAML = '''# The toy paper (tests/test_new_paper.py). Code deps: `python -m common deps --write papers/toy/dvc.yaml`.
vars:
  - ../../params.yaml

stages:
  mini-set:
    wdir: ../..
    cmd: python -m papers.toy.sets_mini --out build/mini/toy/set
    deps:
      - papers/toy/sets_mini.py
    params:
      - toy.mini.images
      - toy.mini.seed
    outs:
      - build/mini/toy/set

  finetune-mini:  # a foreach stage, as the papers' runs are: its module finds its item's stage from DVC_STAGE
    foreach: [clip]
    do:
      wdir: ../..
      cmd: python -m papers.toy.train_mini run ${item}
      deps:
        - build/mini/toy/set
        - papers/toy/train_mini.py
      params:
        - toy.mini
      outs:
        - build/mini/toy/models/${item}.safetensors
        - build/mini/toy/models/${item}.json

  table-mini:
    wdir: ../..
    cmd: python -m papers.toy.tables_mini
    deps:
      - build/mini/toy/set
      - build/mini/toy/models/clip.safetensors
      - papers/toy/tables_mini.py
    outs:
      - results/toy/mini/table.csv:
          cache: false
'''


AGGREGATE = '''
  papers/toy:
    cmd: python -c "import sys; sys.stdout.write(open('results/toy/mini/table.csv').read())"
    deps:
      - results/toy/mini/table.csv
'''


def source_entry(key: str) -> dict:
    """The registry entry of SugarCrepe's released swap_att.json, wherever the workspace keeps it."""
    for path in [ROOT / "common" / "registry" / "sources.toml", *sorted((ROOT / "papers").glob("*/sources.toml"))]:
        for source in tomllib.loads(path.read_text()).get("source", []):
            if source["key"] == key:
                return source
    raise LookupError(key)




def add_toy_paper(work: Path) -> Path:
    """Write papers/toy into the workspace copy ``work``, its params section and its aggregate stage; return it."""
    toy = work / "papers" / "toy"
    toy.mkdir()
    released = source_entry("sugarcrepe/data/swap_att.json")
    (toy / "__init__.py").write_text(INIT)
    (toy / "sources.toml").write_text(
        "version = 1\n\n[[source]]\n" + "".join(
            f"{k} = {json.dumps(v)}\n" for k, v in {
                "key": "toy/swap_att.json", "group": "toy", "method": "http", "url": released["url"],
                "sha256": released["sha256"], "size": released["size"], "license": released["license"],
                "dest": "toy/swap_att.json"}.items()))
    (toy / "sets_mini.py").write_text(SETS)
    (toy / "train_mini.py").write_text(TRAIN)
    (toy / "tables_mini.py").write_text(TABLES)
    (toy / "dvc.yaml").write_text(DVC_YAML)
    with open(work / "params.yaml", "a", encoding="utf-8") as fh:
        fh.write(PARAMS)
    with open(work / "dvc.yaml", "a", encoding="utf-8") as fh:  # the paper's aggregate stage: `dvc repro papers/toy`
        fh.write(AGGREGATE)
    return toy
