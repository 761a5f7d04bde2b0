"""CoN-CLIP's oracle without the rehearsal copy: the README's blocks read at their line numbers, the unreleased
``configs`` derived as upstream derives it, the zoo rows mapped to how the authors' code builds them, and the
per-example reading of the snippet's batches (``papers.conclip.oracle``; the observer of a running function's locals
is ``common.oracle.observe.locals_at_line``: tests/common/test_oracle.py)."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from papers.conclip import oracle

README = """# title

```python
import math


def load_checkpoint(model, path):
\treturn (model, path, math.pi)


raise SystemExit("the demo must not run")
```

text

```python
def evaluate():
\ttotal = 0
\tfor x in [1, 2, 3]:
\t\ttotal += x
\t\tdone = True
\treturn total
```
"""


def test_blocks_keep_their_readme_line_numbers(tmp_path: Path) -> None:
    blocks = oracle.python_blocks(README)
    assert [b.first_line for b in blocks] == [4, 17]
    evaluation = oracle.block_defining(blocks, "evaluate")
    assert evaluation.line_of("done = True") == 21
    assert evaluation.padded().splitlines()[20].strip() == "done = True"
    with pytest.raises(ValueError, match="not one"):
        oracle.block_defining(blocks, "missing")


def test_defined_function_runs_only_the_imports_and_the_definition() -> None:
    load = oracle.defined_function(oracle.python_blocks(README)[0], "load_checkpoint", "README.md")
    assert load("m", "p")[:2] == ("m", "p")
    assert load.__code__.co_firstlineno == 7


def test_configs_as_upstream_derives_them(tmp_path: Path) -> None:
    module = oracle.configs_module(tmp_path / "ccneg_preprocessed.pt", 4)
    assert module.configs.ccneg_root_folder == str(tmp_path)
    assert module.configs.finetuning_dataset_path == f"{tmp_path}/ccneg_preprocessed.pt"
    assert module.configs.num_ccneg_eval_samples == 4
    with pytest.raises(ValueError, match="ccneg_preprocessed.pt"):
        oracle.configs_module(tmp_path / "other.pt", 4)


def test_zoo_rows_map_to_the_authors_construction() -> None:
    assert oracle.authors_construction("openai/ViT-B-32") == oracle.Construction("openai/ViT-B-32")
    assert oracle.authors_construction("conclip/conclip-vit-b32") == oracle.Construction(
        "openai/ViT-B-32", "conclip/conclip-vit-b32")
    assert oracle.authors_construction("conclip/full-l1") == oracle.Construction(
        "openai/ViT-B-32", "conclip/full-l1", converted=True)
    assert "not among the registered files" in oracle.authors_construction("blip/itm-base-coco")
    assert "QuickGELU only" in oracle.authors_construction("conclip/laclip-laion400m-vit-b32")


def test_read_run_turns_batches_into_examples() -> None:
    model = SimpleNamespace(logit_scale=torch.tensor(2.0))
    dataset = SimpleNamespace(image_paths=["/r/a.jpg", "/r/b.jpg", "/r/c.jpg"])
    batches = [{"sim": torch.tensor([[1.0, 0.5], [0.2, 0.2]]), "preds": torch.tensor([0, 0]), "accuracy": 100.0,
                "model": model, "ccneg_dataset": dataset},
               {"sim": torch.tensor([[0.0, 0.4]]), "preds": torch.tensor([1]), "accuracy": 66.67,
                "model": model, "ccneg_dataset": dataset}]
    run = oracle.read_run(batches, first_index=20)
    assert run.accuracy == 66.67
    assert run.decisions == {"20": True, "21": True, "22": False}  # a tie: argmax's first index, correct
    assert run.scores["20"] == [0.5, 0.25] and run.images == {"20": "a.jpg", "21": "b.jpg", "22": "c.jpg"}


def test_cells_count_an_entry_in_each_of_its_words() -> None:
    items = [{"item_id": "1", "k": "1", "words": "no not"}, {"item_id": "2", "k": "1", "words": "not"},
             {"item_id": "3", "k": "", "words": "no"}]
    cells = oracle.cell_accuracies({"1": True, "2": False, "3": True}, items)
    assert cells == {("no", 1): 100.0, ("not", 1): 50.0}
