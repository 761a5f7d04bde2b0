"""The layout's rules (README "Layout"), as tests: ``common`` names no paper, no paper imports or reads another
paper, and no two modules or packages import each other, directly or round a loop.

The import rules are import-linter contracts in ``pyproject.toml`` (``[tool.importlinter]``; ``lint-imports`` runs
them too); a test runs one contract through import-linter's command line and fails with its report, which lists
every offending import with its line. Imports inside functions count (grimp reads every import statement).
"""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import grimp
import pytest
from importlinter import api as importlinter_api

from common.paths import ROOT
from common.pipeline.stage_deps import module_file
from common.plugins import paper_names

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(contract_id: str) -> tuple[bool, str]:
    """(kept, import-linter's report of the broken contract) for one contract of pyproject.toml."""
    result = subprocess.run([str(LINT_IMPORTS), "--contract", contract_id, "--no-cache"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    report = result.stdout + result.stderr
    start = report.find("Broken contracts")
    return result.returncode == 0, report[start:] if start >= 0 else report


def test_common_imports_no_paper():
    kept, report = _lint("common-imports-no-paper")
    assert kept, "common/ imports a paper (give it a plug point instead):\n" + report


def test_no_paper_imports_another_paper():
    """A benchmark two papers score belongs in common/ (``common.benchmarks``), not in one paper imported by another."""
    kept, report = _lint("papers-independent")
    assert kept, "a paper imports another paper:\n" + report


def test_no_production_module_imports_the_rehearsal():
    """The rehearsal (``tests/rehearsal``) sets production parameters in its copy (``params.yaml full_inputs``,
    ``max_steps``); production code never imports it, nor anything else under ``tests/``."""
    kept, report = _lint("production-never-imports-rehearsal")
    assert kept, ("a production module imports tests/ (the rehearsal: read common.pipeline.inputs' parameters "
                  "instead):\n" + report)


def test_common_packages_import_only_those_below_them():
    """common/ grouped by concern: each package or top-level module imports only those below it in the layers
    contract, the contract names every child of ``common`` (a new one must be placed), and docs/layout.md lists them
    in the same order, lowest first."""
    kept, report = _lint("common-layers")
    assert kept, "a package of common/ imports one above it (move the shared piece down):\n" + report
    contracts = importlinter_api.read_configuration(str(ROOT / "pyproject.toml"))["contracts_options"]
    layers = next(c for c in contracts if c.get("id") == "common-layers")["layers"]
    children = {m.removeprefix("common.") for m in grimp.build_graph("common", cache_dir=None).find_children("common")}
    assert set(layers) == children, f"not in the layers contract: {sorted(children - set(layers))}; " \
                                    f"gone: {sorted(set(layers) - children)}"
    tree = (ROOT / "docs" / "layout.md").read_text().split("\ncommon/ ", 1)[1].split("\npapers/<paper>/ ")[0]
    names_column = [line[:24] for line in tree.splitlines() if re.match(r"  \w", line)]
    listed = [name for column in names_column for name in re.findall(r"(\w+)(?:/|\.py)", column)]
    documented = [name for name in layers[::-1] if name != "__main__"]
    assert [name for name in listed if name in documented] == documented, listed


def _unexplained_deferred_imports(path: Path) -> list[int]:
    """Lines of imports made inside a function of ``path`` with no comment saying why (on the line, on the line
    above, or on the first of a run of such imports); one under ``try`` (an optional package) or ``TYPE_CHECKING``
    says why itself."""
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    found: list[ast.stmt] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Try) or (isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test)):
                continue
            if in_function and isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append(child)
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    visit(ast.parse(source), False)
    explained_ends: set[int] = set()
    bad = []
    for node in sorted(found, key=lambda n: n.lineno):
        above = lines[node.lineno - 2].strip() if node.lineno > 1 else ""
        if "#" in lines[node.lineno - 1] or above.startswith("#") or node.lineno - 1 in explained_ends:
            explained_ends.add(node.end_lineno)
        else:
            bad.append(node.lineno)
    return bad


def test_imports_are_sorted_and_at_the_top_unless_a_comment_says_why():
    """common/, papers/ and tests/: imports sorted (isort, ``[tool.isort]`` in pyproject.toml). In common/ and papers/
    they are at the top of the module; one deferred into a function (it would load torch, open_clip, ... for every
    importer) carries a comment saying why. The scan is checked on a toy module too."""
    done = subprocess.run([sys.executable, "-m", "isort", "--check-only", "--diff", "common", "papers", "tests"],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, "imports out of order (run `isort common papers tests`):\n" + done.stdout[-3000:]
    bad = {path.relative_to(ROOT).as_posix(): lines for path in sorted([*(ROOT / "common").rglob("*.py"),
                                                                          *(ROOT / "papers").rglob("*.py")])
           if (lines := _unexplained_deferred_imports(path))}
    assert not bad, f"imports inside functions with no comment saying why (move them to the top): {bad}"


def test_the_deferred_import_scan_finds_an_unexplained_one(tmp_path):
    toy = tmp_path / "toy.py"
    toy.write_text("def f():\n    # deferred: loads torch\n    import torch\n    import numpy\n\n"
                   "def g():\n    x = 1\n    import json\n    try:\n        import yaml\n    except ImportError:\n"
                   "        pass\n")
    assert _unexplained_deferred_imports(toy) == [8]


def test_the_independence_contract_covers_every_paper():
    """``papers.*``: a new paper is covered without editing the contract."""
    contracts = importlinter_api.read_configuration(str(ROOT / "pyproject.toml"))["contracts_options"]
    independence = next(c for c in contracts if c.get("id") == "papers-independent")
    assert independence["modules"] == ["papers.*"], independence
    graph = grimp.build_graph("papers", cache_dir=None)
    assert {m.removeprefix("papers.") for m in graph.find_children("papers")} >= set(paper_names())


def _module_cycles() -> list[str]:
    """Every import cycle between modules, one line each with the import's line numbers (one cycle per set of
    modules; the shortest way back)."""
    graph = grimp.build_graph("common", "papers", cache_dir=None)
    seen: dict[frozenset[str], str] = {}
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if not back or frozenset(back) in seen:
                continue
            chain = (importer, *back)
            steps = [chain[0]]
            for a, b in zip(chain, chain[1:]):
                lines = sorted(d["line_number"] for d in graph.get_import_details(importer=a, imported=b))
                where = module_file(a).relative_to(ROOT).as_posix()
                steps.append(f"-> {b} ({where} l.{','.join(map(str, lines))})")
            seen[frozenset(back)] = " ".join(steps)
    return sorted(seen.values())


def test_no_import_cycles():
    """``acyclic_siblings``: no cycle between the children of any package (modules, or packages taken whole). It
    does not see a package's ``__init__`` and one of its own submodules importing each other, so every cycle between
    two modules (grimp's graph, a cycle through every import) fails the test too; the failure lists them with lines."""
    kept, report = _lint("no-import-cycles")
    cycles = _module_cycles()
    assert kept and not cycles, (("" if kept else "import cycles (import-linter names the imports to remove):\n"
                                  + report + "\n")
                                 + "module cycles:\n" + "\n".join(f"  {c}" for c in cycles))


@dataclass(frozen=True)
class DataRead:
    """A paper's module naming another paper's file."""

    file: str
    line: int
    how: str
    path: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.how} names {self.path}"


def _docstrings(tree: ast.Module) -> set[int]:
    """ids of the docstring nodes (module, class, function), which document rather than read."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _other_papers_files() -> list[DataRead]:
    papers = set(paper_names())
    pattern = re.compile(r"papers/(\w+)/[\w./${}*-]*")
    found = []
    for paper in sorted(papers):
        for path in sorted((ROOT / "papers" / paper).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
            declared: set[int] = set()
            for node in tree.body:
                if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "DATA_FILES"
                                                        for t in node.targets):
                    for item in ast.walk(node.value):
                        if isinstance(item, ast.Constant) and isinstance(item.value, str):
                            declared.add(id(item))
            skip = _docstrings(tree)
            for node in ast.walk(tree):
                if not isinstance(node, ast.Constant) or not isinstance(node.value, str) or id(node) in skip:
                    continue
                for match in pattern.finditer(node.value):
                    if match.group(1) in papers and match.group(1) != paper:
                        how = "DATA_FILES" if id(node) in declared else "a string"
                        found.append(DataRead(rel, node.lineno, how, match.group(0)))
    return found


def test_no_paper_reads_another_papers_files():
    """A simple AST scan of papers/<paper>/**/*.py: every ``DATA_FILES`` entry and every other string literal
    (docstrings aside) that names ``papers/<other>/`` is a violation. What it cannot see: a path assembled from
    pieces (``ROOT / "papers" / name``) or a registry key another paper owns read without being declared (the
    stage's deps check, ``common.pipeline.stage_deps``, finds those when the module declares what it reads)."""
    found = _other_papers_files()
    assert not found, ("a paper reads another paper's files (move the shared file to common/, or the entry to this "
                       "paper's own registry file):\n" + "\n".join(f"  {f}" for f in found))



def _profile_twins(root: Path) -> list[str]:
    """``papers/<paper>/<stem>`` for every ``<stem>_mini.py`` that has a ``<stem>_full.py`` beside it."""
    return sorted(str(mini.parent.relative_to(root) / mini.name[:-len("_mini.py")])
                  for mini in root.glob("papers/*/*_mini.py") if mini.with_name(mini.name[:-8] + "_full.py").exists())


def test_only_set_builders_come_in_mini_and_full_twins(tmp_path):
    """One module per stage for both profiles (docs/layout.md): a ``<stem>_mini.py`` / ``<stem>_full.py`` pair is
    allowed only for a set builder (stem ``sets`` or ``<kind>_sets``), whose inputs differ in kind: the mini world's
    renderer against the upstream files' reader, both writing the one format one reader reads."""
    twins = [t for t in _profile_twins(ROOT) if not re.search(r"(^|_)sets$", t.rsplit("/", 1)[1])]
    assert not twins, ("a stage's module is written twice, once per profile (make it one module, the profile an "
                       "argument): " + ", ".join(twins))
    (tmp_path / "papers" / "toy").mkdir(parents=True)
    for name in ("train_mini.py", "train_full.py", "sets_mini.py", "sets_full.py", "rows_mini.py"):
        (tmp_path / "papers" / "toy" / name).write_text("")
    assert _profile_twins(tmp_path) == ["papers/toy/sets", "papers/toy/train"]

if __name__ == "__main__":  # pragma: no cover - `python tests/test_layout.py`: the current list of violations
    sys.exit(pytest.main([__file__, "-q"]))
