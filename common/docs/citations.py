"""Every citation checkable: the workspace's references to the authors' code and to the papers, found and checked
(the shape, where the quote may stand and what is refused: docs/audit.md, "Citations"). ``shape`` checks offline,
``quotes`` (``--repos DIR``) every quote against local clones of the upstream repositories.
"""
from __future__ import annotations

import argparse
import bisect
import json
import re
import subprocess
import tomllib
from dataclasses import dataclass, field, replace
from functools import lru_cache, partial
from pathlib import Path
from typing import Iterable, Sequence

from common.errors import WorkspaceError
from common.paths import ROOT, mirror_root
from common.registry.mirror import mirror_path
from common.registry.sources import REGISTRY_PATH

UPSTREAM_FILE = REGISTRY_PATH.with_name("upstream.toml")
WRONG_REPOS = {"mertyg/neg_clip": "vinid/neg_clip"}
"""Repository names that have been cited by mistake, and the right one."""
PAPERS = ("aro", "hard_positives", "conclip", "bivlc", "sugarcrepe")
"""The papers' text files (``../shared/papers/<name>.txt``), whose lines are never cited: cite the paper itself."""
SCANNED_SUFFIXES = (".py", ".md", ".toml", ".yaml", ".yml", ".ipynb", ".j2", ".cfg", ".txt")
SKIPPED = ("results/",)
"""Generated files: what writes them is scanned instead."""
KEPT = ("results/published/",)
"""Hand-written files under a skipped folder."""
SELF = ("common/docs/citations.py", "tests/common/test_citations.py")
"""The checker and its tests: they spell out the mistakes they look for."""
FIXTURES = ("tests/", "CHANGELOG.md")
"""Where a named file need not be this project's now (tests make files, the changelog names old ones)."""
DATA_SUFFIXES = (".csv", ".tsv", ".json", ".jsonl", ".txt", ".parquet", ".gz", ".zip", ".tar", ".npy", ".pt",
                 ".pth", ".safetensors", ".png", ".jpg")
MIN_QUOTE = 4
"""Characters (white space folded) a quote needs: enough that it could be wrong."""

_SHA = r"[0-9a-f]{7,40}"
_PIN = re.compile(r"(?<![\w./-])(?P<repo>[A-Za-z0-9][\w-]*/[A-Za-z0-9][\w.-]*?)@(?P<commit>[^\s`'\",;:)\]]+)")
_PATH = re.compile(r":?\s?(?P<path>(?![a-z]+://)[\w.+-]+(?:/[\w.+-]+)*\.\w+|[\w.+-]+(?:/[\w.+-]+)+/?)"
                   r"(?::(?P<lines>\d+(?:-\d+)?(?:,\s?\d+(?:-\d+)?)*))?")
_QUOTE = re.compile(r"[`)\]]*(?:\s?[:,]|\s[-\u2014])?\s?(?:\"(?P<quote>[^\"]*)\"|(?<![`\w])`(?P<code>[^`]{0,200}\"[^`]{0,200})`(?!`))")
_FILE_LINE = re.compile(r"(?<![\w./@<{*-])(?P<path>[\w.+-]+(?:/[\w.+-]+)*\.(?:py|sh|ipynb))"
                        r"(?::(?P<lines>\d+(?:-\d+)?(?:,\s?\d+(?:-\d+)?)*))?(?![\w/])")
MACHINE_ROOTS = ("work", "root", "home", "Users")
"""Top-level folders of an absolute path that a clone never has."""
_MACHINE = re.compile(r"(?P<hit>(?<![\w.-])/(?:" + "|".join(MACHINE_ROOTS) + r")/|shared/papers/\w+\.txt|(?<![\w/.-])(?:"
                      + "|".join(PAPERS) + r")\.txt:\d+)")


class CitationError(WorkspaceError):
    """The upstream registry or a cited repository that cannot be read (the message names it)."""


@dataclass(frozen=True)
class Reference:
    """One reference to an upstream repository, where it stands and what it quotes."""

    file: str
    line: int
    repo: str
    commit: str
    path: str = ""
    lines: str = ""
    quote: str | None = None

    @property
    def text(self) -> str:
        where = f" {self.path}" + (f":{self.lines}" if self.lines else "") if self.path else ""
        return f"{self.repo}@{self.commit}{where}"

    @property
    def span(self) -> tuple[int, int] | None:
        if not self.lines or not re.fullmatch(r"\d+(?:-\d+)?", self.lines):
            return None
        a, _, b = self.lines.partition("-")
        return int(a), int(b or a)


@dataclass(frozen=True)
class PaperQuote:
    """A TOML table's quote of its paper (its ``source`` names a section, page or table of the paper)."""

    file: str
    line: int
    paper: str
    source: str
    quote: str


@dataclass
class Found:
    """What one scan found: the references, the paper quotes and the problems (``file:line: message``)."""

    references: list[Reference] = field(default_factory=list)
    paper_quotes: list[PaperQuote] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def add(self, file: str, line: int, message: str) -> None:
        self.problems.append(f"{file}:{line}: {message}")


def upstream() -> dict[str, tuple[str, ...]]:
    """``OWNER/REPO`` -> the full commits references may pin (``UPSTREAM_FILE``)."""
    return _upstream(UPSTREAM_FILE)


@lru_cache(maxsize=None)
def _upstream(path: Path) -> dict[str, tuple[str, ...]]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        repos = {name: tuple(entry["commits"]) for name, entry in data["repos"].items()}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, KeyError, TypeError) as exc:
        raise CitationError(f"{path}: not a registry of upstream repositories ({exc})") from None
    for name, commits in repos.items():
        if not commits or not all(isinstance(c, str) and re.fullmatch(r"[0-9a-f]{40}", c) for c in commits):
            raise CitationError(f"{path}: [repos.{name!r}].commits: full 40-hex commits, at least one")
    return repos


def fold(text: str) -> str:
    """White space folded to one space, Markdown's escaped bar read as a bar: how quotes and lines compare."""
    return re.sub(r"\s+", " ", text.replace("\\|", "|")).strip()


def _scan_prose(found: Found, file: str, raw: str, suffix: str, quotes: Sequence[str] | None = None) -> None:
    """References in code, comments and Markdown: each with its quote right after it (or from ``quotes``)."""
    # line numbers: fold a copy with the same length, newline by newline, so offsets map back
    text, lines = _fold_keep_lines(raw, suffix)
    given = list(quotes) if quotes is not None else None
    for m in _PIN.finditer(text):
        line = lines(m.start())
        repo, commit = m.group("repo"), m.group("commit")
        if _is_wrong_repo(found, file, line, repo):
            continue
        if repo not in upstream():
            if not re.fullmatch(_SHA, commit):
                continue  # not a citation (an e-mail, a package spec)
            found.add(file, line, f"{repo}@{commit}: not a repository of common/registry/upstream.toml")
            continue
        if not re.fullmatch(_SHA, commit):
            found.add(file, line, f"{repo}@{commit}: pin a commit (7 hex digits or more), not {commit!r}")
            continue
        if not any(c.startswith(commit) for c in upstream()[repo]):
            found.add(file, line, f"{repo}@{commit}: not a commit common/registry/upstream.toml pins for {repo}")
            continue
        p = _PATH.match(text, m.end())
        path, lines_, end = "", "", m.end()
        if p and ("." in p.group("path") or p.group("lines")):
            path, lines_, end = p.group("path").rstrip("/"), p.group("lines") or "", p.end()
        if given is not None:
            quote = given.pop(0) if given else None
        else:
            q = _QUOTE.match(text, end)
            quote = (q.group("quote") if q.group("quote") is not None else q.group("code")) if q else None
        ref = Reference(file, line, repo, commit, path, lines_, quote)
        found.references.append(ref)
        _check_shape(found, ref)
    _scan_unpinned(found, file, text, lines)


def _is_wrong_repo(found: Found, file: str, line: int, repo: str) -> bool:
    """A repository cited by mistake (``WRONG_REPOS``): reported with the right one, and True."""
    if repo in WRONG_REPOS:
        found.add(file, line, f"{repo} is not the repository: {WRONG_REPOS[repo]} is")
    return repo in WRONG_REPOS


def _fold_keep_lines(raw: str, suffix: str):
    """The text with every line break (and a comment's ``#`` after it) turned into one space, and offset -> line."""
    text = raw.replace("\r", "")
    pattern = r"\n[ \t]*(?:#[ \t]?)?" if suffix == ".py" else r"\n[ \t]*"
    starts, removed = [0], 0
    for m in re.finditer(pattern, text):  # where each line starts in the folded text
        removed += len(m.group()) - 1
        starts.append(m.end() - removed)
    return re.sub(pattern, " ", text), partial(bisect.bisect_right, starts)


def _check_shape(found: Found, ref: Reference) -> None:
    def bad(message: str) -> None:
        found.add(ref.file, ref.line, f"{ref.text}: {message}")

    if not ref.path:
        if ref.quote is not None:
            bad("a quote needs the file and lines it comes from")
    elif ref.lines and ref.span is None:
        bad("one line or one range (LINE or LINE-LINE) per reference")
    elif ref.span and ref.span[0] > ref.span[1]:
        bad("the range runs backwards")
    elif not ref.lines:
        if Path(ref.path).suffix.lower() not in DATA_SUFFIXES:  # a released data file may be cited whole
            bad("name the lines (PATH:LINE or PATH:LINE-LINE)")
    elif ref.quote is None:
        bad("no quote: follow it with \"the words of those lines\"")
    else:
        if len(fold(ref.quote)) < MIN_QUOTE:
            bad(f"the quote {ref.quote!r} is too short to be checked")
        if _MACHINE.search(ref.quote):
            bad("the quote names a machine path")


def _scan_unpinned(found: Found, file: str, text: str, lines) -> None:
    """Unpinned upstream files, file:line references that are not this project's, machine paths."""
    names = sorted(set(upstream()) | set(WRONG_REPOS), key=len, reverse=True)
    repo_names = re.compile(r"(?<![\w./-])(?P<repo>" + "|".join(re.escape(n) for n in names) + r")(?!@|[\w-])")
    for m in repo_names.finditer(text):
        if _is_wrong_repo(found, file, lines(m.start()), m.group("repo")):
            continue
        after = text[m.end():m.end() + 60]
        p = re.match(r"(?:'s)?[`'\s:,(]*(?:the |file |files )?`*(?P<path>[\w.+-]+(?:/[\w.+-]+)*\.(?:py|sh|ipynb)"
                     r"(?::\d+)?)", after)
        if p:
            found.add(file, lines(m.start()), f"{m.group('repo')} {p.group('path')}: unpinned (cite "
                                              f"{m.group('repo')}@COMMIT PATH:LINES \"quote\")")
    pins = list(_PIN.finditer(text))
    for m in _FILE_LINE.finditer(text) if not file.startswith(FIXTURES) else ():
        count = _project_lines(m.group("path"))
        if count is not None and all(int(n) <= count for n in re.findall(r"\d+", m.group("lines") or "")):
            continue
        if any(p.end() < m.start() and re.fullmatch(r":?\s?", text[p.end():m.start()]) for p in pins):
            continue  # the path of a pinned reference
        found.add(file, lines(m.start()), f"{m.group(0)}: neither this project's file nor pinned to a repository "
                                          f"(OWNER/REPO@COMMIT PATH:LINES \"quote\")")
    for m in _MACHINE.finditer(text):
        found.add(file, lines(m.start()), f"{m.group('hit')}: a machine path; cite the paper (section, page, table) "
                                          f"or the repository")


def _git_files(root: Path) -> list[str] | None:
    """Git's tracked and unignored files under ``root`` (None: not a git work tree, or no git)."""
    try:
        return subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=root,
                              capture_output=True, text=True, check=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return None


@lru_cache(maxsize=None)
def _tracked() -> dict[str, str]:
    """This project's files by path and by every unambiguous trailing part (``training/files.py``)."""
    names = _git_files(ROOT) or []
    out: dict[str, str] = {}
    ambiguous = set()
    for name in names:
        parts = name.split("/")
        for i in range(len(parts)):
            tail = "/".join(parts[i:])
            if i == 0:
                out[tail] = name
            elif tail in out and out[tail] != name:
                ambiguous.add(tail)
            else:
                out.setdefault(tail, name)
    for tail in ambiguous:
        out[tail] = ""  # a name several files end with: this project's, but which one is not known
    return out


@lru_cache(maxsize=None)
def _project_lines(path: str) -> int | None:
    name = _tracked().get(path)
    if name == "":
        return 10 ** 9
    try:
        return None if name is None else (ROOT / name).read_bytes().count(b"\n") + 1
    except OSError:  # a folder, or a file gone
        return None


def _scan_toml(found: Found, file: str, raw: str) -> None:
    """References in a TOML file's strings, each table's ``quote`` beside its ``source``; paper quotes."""
    try:
        data = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as exc:
        found.add(file, 1, f"not TOML ({exc})")
        return
    parts = Path(file).parts
    paper = parts[1] if len(parts) > 2 and parts[0] == "papers" and parts[1] in PAPERS else None
    # comments are prose: references in them need their quotes inline
    comments = "\n".join(line.split("#", 1)[1] if "#" in line and not _in_string(line) else "" for line in
                         raw.splitlines())
    _scan_prose(found, file, comments, ".md")

    def walk(node, key_path: str) -> None:
        if isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, f"{key_path}[{i}]")
            return
        if not isinstance(node, dict):
            return
        strings = [(k, v) for k, v in node.items() if isinstance(v, str) and k not in ("quote", "paper_quote")]
        quote = node.get("quote")
        quotes = [quote] if isinstance(quote, str) else list(quote) if isinstance(quote, list) else None
        line = _toml_line(raw, key_path)
        refs_before = len(found.references)
        for k, v in strings:
            if k == "source" or _PIN.search(v):
                sub = Found()
                given = quotes if quotes is not None and _PIN.search(v) else None
                _scan_prose(sub, file, v, ".md", given)
                found.references += [replace(r, line=line) for r in sub.references]
                found.problems += [f"{file}:{line}: " + p.split(": ", 1)[1] for p in sub.problems]
        took = len(found.references) - refs_before
        source = node.get("source")
        texts = [q for q in quotes or [] if isinstance(q, str)]
        if isinstance(source, str) and took == 0 and texts and paper:
            found.paper_quotes += [PaperQuote(file, line, paper, source, q) for q in texts]
        elif isinstance(source, str) and took == 0 and texts and not paper:
            found.add(file, line, f"{key_path}: a quote of a paper outside papers/<paper>/: name the paper's folder")
        if quotes and took and isinstance(quote, list):
            found.add(file, line, f"{key_path}: {len(quotes)} quotes more than references")
        for k, v in node.items():
            if isinstance(v, (dict, list)):
                walk(v, f"{key_path}.{k}" if key_path else k)

    walk(data, "")


def _in_string(line: str) -> bool:
    """Whether the line's first ``#`` is inside a string (a TOML value), roughly: an odd count of quotes before."""
    head = line.split("#", 1)[0]
    return head.count('"') % 2 == 1 or head.count("'") % 2 == 1


def _toml_line(raw: str, key_path: str) -> int:
    last = key_path.rsplit(".", 1)[-1].split("[")[0] if key_path else ""
    if not last:
        return 1
    m = re.search(rf"(?m)^\s*(?:\[+[^\]]*\b{re.escape(last)}\b[^\]]*\]+|\"?{re.escape(last)}\"?\s*=)", raw)
    return raw.count("\n", 0, m.start()) + 1 if m else 1


def _scan_notebook(found: Found, file: str, raw: str) -> None:
    try:
        cells = json.loads(raw).get("cells", [])
    except (ValueError, AttributeError):
        found.add(file, 1, "not a notebook")
        return
    for cell in cells:
        source = cell.get("source", "")
        _scan_prose(found, file, "".join(source) if isinstance(source, list) else str(source),
                    ".py" if cell.get("cell_type") == "code" else ".md")


def scanned_files(root: Path = ROOT) -> list[str]:
    """Git's tracked and unignored files of the kinds above, generated results left out."""
    out = _git_files(root)
    if out is None:
        out = [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()]
    return [name for name in sorted(set(out)) if name.endswith(SCANNED_SUFFIXES) and (root / name).is_file()
            and not (name.startswith(SKIPPED) and not name.startswith(KEPT)) and name not in SELF
            and not (name.startswith("results/published/") and name.endswith(".csv"))]


def scan(root: Path = ROOT, files: Iterable[str] | None = None) -> Found:
    """Every reference and paper quote of ``files`` (default: ``scanned_files``), with the shape problems."""
    found = Found()
    for name in files if files is not None else scanned_files(root):
        try:
            raw = (root / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            found.add(name, 1, f"cannot be read as UTF-8 text ({exc})")
            continue
        suffix = Path(name).suffix
        if suffix == ".toml":
            _scan_toml(found, name, raw)
        elif suffix == ".ipynb":
            _scan_notebook(found, name, raw)
        else:
            _scan_prose(found, name, raw, suffix)
    return found


# --- what the quotes say -----------------------------------------------------------------------------------------

def paper_text(paper: str, dirs: Sequence[Path]) -> str | None:
    for d in dirs:
        path = Path(d) / f"{paper}.txt"
        if path.is_file():
            return path.read_text(encoding="utf-8")
    return None


def _loose(text: str) -> str:
    """Letters and digits only, lower case: where a PDF quote and the extracted text differ, the words do not."""
    return re.sub(r"[^0-9a-z]+", "", text.lower())


def _extracted(text: str) -> str:
    """A paper's extracted text with the extraction's echoes (``63%percent6363\\%``, ``0.590.590.59``) undone."""
    text = re.sub(r"(\d+(?:\.\d+)?)%percent\1\1\\%", r"\1%", text)
    return re.sub(r"(\d+\.\d+)\1\1", r"\1", text)


def check_paper_quotes(found: Found, dirs: Sequence[Path]) -> tuple[int, list[str]]:
    """How many paper quotes were checked, and the problems: each must be in its paper's text."""
    checked, problems = 0, []
    raw = {paper: paper_text(paper, dirs) for paper in {q.paper for q in found.paper_quotes}}
    texts = {paper: _loose(_extracted(t)) for paper, t in raw.items() if t is not None}
    for q in found.paper_quotes:
        text = texts.get(q.paper)
        if text is None:
            continue
        checked += 1
        if len(_loose(q.quote)) < MIN_QUOTE:
            problems.append(f"{q.file}:{q.line}: the quote {q.quote!r} is too short to be checked")
        elif _loose(q.quote) not in text:
            problems.append(f"{q.file}:{q.line}: {q.source}: the paper's text does not say {q.quote!r}")
    return checked, problems


def _lines_hold(content: str, ref: Reference) -> str | None:
    """None when ``ref``'s lines of ``content`` hold its quote; else what is wrong."""
    all_lines = content.splitlines()
    a, b = ref.span  # type: ignore[misc]
    if b > len(all_lines):
        return f"{ref.text}: the file has {len(all_lines)} lines"
    if ref.quote is None:
        return None
    if fold(ref.quote) not in fold(" ".join(all_lines[a - 1:b])):
        return f"{ref.text}: those lines do not say {fold(ref.quote)!r}"
    return None


def check_mirror_quotes(found: Found, mirror: Path | None) -> tuple[int, list[str]]:
    """The quotes whose file the mirror holds at the pinned commit, checked offline."""
    if mirror is None or not mirror.is_dir():
        return 0, []
    checked, problems = 0, []
    for ref in found.references:
        if ref.span is None:
            continue
        full = next(c for c in upstream()[ref.repo] if c.startswith(ref.commit))
        try:
            path = mirror_path(f"https://raw.githubusercontent.com/{ref.repo}/{full}/{ref.path}", mirror)
        except ValueError:  # a path that could leave the mirror: not a file it holds
            continue
        if not path.is_file():
            continue
        checked += 1
        problem = _lines_hold(path.read_text(encoding="utf-8", errors="replace"), ref)
        if problem:
            problems.append(f"{ref.file}:{ref.line}: {problem}")
    return checked, problems


def shape(root: Path = ROOT, paper_dirs: Sequence[Path] = (), mirror: Path | None = None) -> Found:
    """The offline check: shapes, plus the quotes that the papers' texts and the mirror can confirm."""
    found = scan(root)
    found.problems += check_paper_quotes(found, paper_dirs)[1] + check_mirror_quotes(found, mirror)[1]
    return found


def _clone(repos: Path, repo: str) -> Path | None:
    owner, name = repo.split("/")
    for candidate in (repos / f"{owner}+{name}", repos / f"{owner}+{name}" / "repo", repos / owner / name,
                      repos / name):
        if (candidate / ".git").exists() or (candidate / "HEAD").is_file():
            return candidate
    return None


def _git_show(clone: Path, commit: str, path: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(clone), "show", f"{commit}:{path}"], capture_output=True, check=True)
    except subprocess.CalledProcessError:
        return None
    return out.stdout.decode("utf-8", errors="replace")


def quotes(found: Found, repos: Path) -> tuple[dict[str, int], list[str]]:
    """Every reference against the clones under ``repos``: per repository the count checked, and the problems."""
    checked: dict[str, int] = {}
    problems = []
    cache: dict[tuple[str, str, str], str | None] = {}
    for ref in found.references:
        clone = _clone(repos, ref.repo)
        where = f"{ref.file}:{ref.line}: "
        if clone is None:
            problems.append(where + f"{ref.text}: no clone of {ref.repo} under {repos}")
            continue
        checked[ref.repo] = checked.get(ref.repo, 0) + 1
        full = next(c for c in upstream()[ref.repo] if c.startswith(ref.commit))
        if not ref.path:
            if _git_show(clone, full, "") is None:
                problems.append(where + f"{ref.text}: the clone has no commit {full}")
            continue
        key = (ref.repo, full, ref.path)
        if key not in cache:
            cache[key] = _git_show(clone, full, ref.path)
        content = cache[key]
        if content is None:
            problems.append(where + f"{ref.text}: no file {ref.path} at {full[:12]}")
            continue
        if ref.span is None:
            continue
        problem = _lines_hold(content, ref)
        if problem:
            problems.append(where + problem)
    return checked, problems


def _paper_dirs() -> list[Path]:
    mirror = mirror_root()
    return [ROOT.parent / "shared" / "papers", *([mirror.parent / "papers"] if mirror is not None else [])]


def _cmd(args: argparse.Namespace) -> int:
    found = shape(ROOT, _paper_dirs(), mirror_root() or (ROOT.parent / "shared" / "mirror"))
    problems = list(found.problems)
    paper_checked, _ = check_paper_quotes(found, _paper_dirs())
    print(f"{len(found.references)} references to {len({r.repo for r in found.references})} upstream repositories "
          f"in {len({r.file for r in found.references})} files; {len(found.paper_quotes)} paper quotes "
          f"({paper_checked} checked against the papers' text)")
    if args.repos is not None:
        repos = Path(args.repos)
        if not repos.is_dir():
            raise CitationError(f"--repos {repos}: no such folder")
        checked, more = quotes(found, repos)
        problems += more
        for repo, n in sorted(checked.items()):
            bad = sum(1 for p in more if f" {repo}@" in p)
            print(f"  {repo}: {n} references checked against the clone, {bad} wrong")
    for p in problems:
        print(p)
    print("citations: ok" if not problems else f"citations: {len(problems)} problems")
    return 0 if not problems else 1


def register_cli(subparsers) -> None:
    p = subparsers.add_parser("citations", help="check every reference to the authors' code and the papers")
    sub = p.add_subparsers(dest="citations_command", required=True, metavar="ACTION")
    c = sub.add_parser("check", help="pinned, quoted, no machine paths; with --repos, every quote against clones",
                       description="Every upstream reference pinned (common/registry/upstream.toml) and quoted; "
                                   "paper quotes against ../shared/papers; with --repos DIR, every quote against "
                                   "local clones of the upstream repositories (DIR/OWNER+REPO, DIR/OWNER/REPO or "
                                   "DIR/REPO).")
    c.add_argument("--repos", metavar="DIR", help="a folder of git clones of the upstream repositories")
    c.set_defaults(func=_cmd)
