"""Nothing in common/ or papers/ unpickles a file: every ``torch.load`` passes ``weights_only=True`` (tensors and
plain containers only), every ``np.load`` passes ``allow_pickle=False``, and no module imports pickle, joblib, dill
or cloudpickle or calls ``pandas.read_pickle``. Weights and tensors from outside load through safetensors or these.
One exception: a module may import ``pickle`` to *write* one (``pickle.dump``/``dumps`` and nothing else of it: the
rehearsal's CIFAR stand-ins in torchvision's python-pickle layout), which runs no code from a file.

A static check over the source (AST, so aliases like ``from torch import load`` are caught too): adding an unsafe
load anywhere fails here.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TREES = ("common", "papers")
UNPICKLERS = {"pickle", "_pickle", "cPickle", "joblib", "dill", "cloudpickle", "shelve", "marshal"}
PICKLE_WRITERS = {"dump", "dumps"}
"""What a module that imports ``pickle`` may use of it: writing only."""


def _sources() -> list[Path]:
    return sorted(p for tree in TREES for p in (ROOT / tree).rglob("*.py") if "__pycache__" not in p.parts)


def _keyword_is(call: ast.Call, name: str, value: bool) -> bool:
    return any(k.arg == name and isinstance(k.value, ast.Constant) and k.value.value is value for k in call.keywords)


def problems(source: str, where: str = "<source>") -> list[str]:
    """Unsafe loads in one module's source, as 'where:line: what' lines."""
    tree = ast.parse(source)
    modules: dict[str, str] = {}  # local name -> module (import torch as th: th -> torch)
    functions: dict[str, str] = {}  # local name -> module.function (from numpy import load: load -> numpy.load)
    found = []
    writers: dict[str, int] = {}  # local name of an imported pickle module -> its import's line (write-only use)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                modules[alias.asname or alias.name.split(".")[0]] = alias.name
                if alias.name == "pickle":
                    writers[alias.asname or alias.name] = node.lineno
                elif alias.name.split(".")[0] in UNPICKLERS:
                    found.append(f"{where}:{node.lineno}: imports {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                functions[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            if node.module.split(".")[0] in UNPICKLERS and not (
                    node.module == "pickle" and all(a.name in PICKLE_WRITERS for a in node.names)):
                found.append(f"{where}:{node.lineno}: imports from {node.module}")
    if writers:  # every use of the pickle module must be pickle.dump/dumps
        written = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                   and isinstance(n.value, ast.Name) and n.value.id in writers and n.attr in PICKLE_WRITERS}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id in writers and id(node) not in written:
                found.append(f"{where}:{node.lineno}: uses pickle beyond dump/dumps (imported at line "
                             f"{writers[node.id]})")
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            target = f"{modules.get(func.value.id, func.value.id)}.{func.attr}"
        elif isinstance(func, ast.Name) and func.id in functions:
            target = functions[func.id]
        else:
            continue
        if target == "torch.load" and not _keyword_is(node, "weights_only", True):
            found.append(f"{where}:{node.lineno}: torch.load without weights_only=True")
        elif target in ("numpy.load", "np.load") and not _keyword_is(node, "allow_pickle", False):
            found.append(f"{where}:{node.lineno}: np.load without allow_pickle=False")
        elif target.endswith(".read_pickle") or target in ("torch.jit.load",):
            found.append(f"{where}:{node.lineno}: {target} (unpickles)")
    return found


def test_the_source_tree_never_unpickles():
    sources = _sources()
    assert len(sources) > 50  # the trees were found
    found = [line for path in sources
             for line in problems(path.read_text(), path.relative_to(ROOT).as_posix())]
    assert not found, "unsafe loads (use weights_only=True / allow_pickle=False / safetensors):\n" + "\n".join(found)


@pytest.mark.parametrize("source, expected", [
    ("import torch\ntorch.load(p)", "torch.load without weights_only=True"),
    ("import torch\ntorch.load(p, weights_only=False)", "torch.load without weights_only=True"),
    ("from torch import load\nload(p)", "torch.load without weights_only=True"),
    ("import numpy as np\nnp.load(p)", "np.load without allow_pickle=False"),
    ("import numpy\nnumpy.load(p, allow_pickle=True)", "np.load without allow_pickle=False"),
    ("from numpy import load as l\nl(p)", "np.load without allow_pickle=False"),
    ("import pickle\npickle.loads(b)", "uses pickle beyond dump/dumps (imported at line 1)"),
    ("import pickle as p\nf = p.load", "uses pickle beyond dump/dumps (imported at line 1)"),
    ("import pickle\nsave(pickle)", "uses pickle beyond dump/dumps (imported at line 1)"),
    ("from pickle import loads", "imports from pickle"),
    ("import _pickle", "imports _pickle"),
    ("from joblib import load", "imports from joblib"),
    ("import pandas as pd\npd.read_pickle(p)", "pandas.read_pickle (unpickles)"),
])
def test_the_check_catches_unsafe_loads(source, expected):
    found = problems(source)
    assert len(found) == 1 and found[0].endswith(expected), found


def test_writing_a_pickle_is_allowed():
    assert problems("import pickle\ndata = pickle.dumps({'a': 1}, protocol=2)\npickle.dump(x, f)") == []
    assert problems("from pickle import dumps\ndumps(x)") == []


def test_the_check_accepts_safe_loads():
    assert problems("import torch\nimport numpy as np\ntorch.load(p, map_location='cpu', weights_only=True)\n"
                    "np.load(p, mmap_mode='r', allow_pickle=False)\nimport json\njson.load(f)") == []
