"""The released blind scorers of SugarCrepe's text-only evaluation: Vera and the CoLA grammar model.

Both map a caption alone to a plausibility in [0, 1]; an example is solved blind when its positive scores strictly
higher than its negative (``common.blind.crossfit.PairScores.correct``). The arithmetic follows the released code
(``RAIVNLab/sugar-crepe@0047054b text_model_eval.py:80`` "return 1 if pos_score > neg_score else 0"):

* Vera (``liujch1998/vera``, a T5 encoder) reads the hidden state of a statement's last token (its EOS) through a
  linear head stored in three rows of the shared embedding (weight row 32099, bias ``[32098, 0]``, temperature
  ``[32097, 0]``: ``RAIVNLab/sugar-crepe@0047054b text_model_eval.py:23-26`` "self.model.shared.weight[32099, :]")
  and returns ``sigmoid(logit / t)`` (``RAIVNLab/sugar-crepe@0047054b text_model_eval.py:35-37``
  "logit_calibrated = logit / self.t"). The weights load in their stored dtype (``"auto"``, bfloat16 for Vera:
  ``RAIVNLab/sugar-crepe@0047054b text_model_eval.py:19`` "torch_dtype='auto'") and the head runs in that dtype, as
  upstream's does: the released scores are bfloat16-rounded, so ties between a positive and its negative are frequent
  and ``PairScores.correct`` counts them wrong, as upstream's ``>`` did.
* The grammar model (``textattack/distilbert-base-uncased-CoLA``) gives P(acceptable) = softmax(logits)[1], the
  value upstream takes from ``pipeline("text-classification")`` (``score`` of ``LABEL_1``, else ``1 - score``:
  ``RAIVNLab/sugar-crepe@0047054b text_model_eval.py:64``
  "score = output['score'] if output['label'] == 'LABEL_1' else 1 - output['score']").

Upstream scores one statement per call; here distinct texts are batched by token length, so a batch holds no
padding and each score is the one-statement computation (the padded path, ``score_batch``, agrees with it too).
``transformers`` is an optional extra, imported only when a scorer is loaded; weights come from the project's
downloader (``common.registry.fetch.fetch``), whose error explains how to get them; nothing falls back to random
weights.
"""
from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar, Protocol, Sequence

import numpy as np
import torch

from common.blind import crossfit
from common.errors import WorkspaceError, unknown_name
from common.registry.fetch import fetch
from common.zoo.interface import digest_weights, import_transformers

SOURCES = {"vera": "hf/liujch1998/vera", "grammar": "hf/textattack/distilbert-base-uncased-CoLA"}
"""Scorer name -> download registry key (common/registry/sources.toml)."""
VERA_WEIGHT_ROW, VERA_BIAS_ROW, VERA_TEMPERATURE_ROW = 32099, 32098, 32097


class ScorerUnavailable(WorkspaceError, RuntimeError):
    """A blind scorer cannot be built here (transformers missing, weights incomplete); the message says why."""


class TextScorer(crossfit.TextScorer, Protocol):
    """A cross-fitting scorer with a fingerprint (not runtime-checkable: ``isinstance`` would read ``fingerprint``,
    which hashes every weight)."""

    @property
    def fingerprint(self) -> str: ...


@dataclass(eq=False)
class _HFTextScorer:
    """A text-only ``transformers`` model behind ``TextScorer``; subclasses define ``score_batch``."""

    name: str
    model: torch.nn.Module
    tokenizer: Any
    device: str = "cpu"
    batch_size: int = 32
    max_tokens: int = 128

    default_name: ClassVar[str]
    model_class: ClassVar[str]
    load_dtype: ClassVar[Any]

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ValueError(f"text scorer {self.name!r}: batch_size must be >= 1, got {self.batch_size}")
        self.model = self.model.eval().to(self.device)
        self.tokenizer.padding_side = "right"  # score_batch reads positions counted from the left

    @classmethod
    def from_pretrained(cls, path: str | Path, name: str | None = None, device: str = "cpu",
                        batch_size: int = 32) -> "_HFTextScorer":
        """Load a ``save_pretrained`` folder (a fetched snapshot, or a tiny model in tests); never downloads."""
        name = name or cls.default_name
        transformers = import_transformers(f"text scorer {name!r}", ScorerUnavailable)
        # deferred: loads packaging only when called
        from packaging.version import Version

        # from_pretrained's dtype keyword: ``dtype`` since transformers 4.56, ``torch_dtype`` before
        dtype = "dtype" if Version(transformers.__version__) >= Version("4.56") else "torch_dtype"
        options = dict(local_files_only=True, trust_remote_code=False, **{dtype: cls.load_dtype})
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(path), local_files_only=True,
                                                               trust_remote_code=False)
        model, info = getattr(transformers, cls.model_class).from_pretrained(str(path), output_loading_info=True,
                                                                             **options)
        if info.get("missing_keys"):  # transformers would have initialised them randomly
            missing = sorted(info["missing_keys"])
            raise ScorerUnavailable(f"text scorer {name!r}: {path} lacks {len(missing)} weights "
                                    f"({', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''})")
        return cls(name, model, tokenizer, device=device, batch_size=batch_size)

    def _encode(self, texts: Sequence[str]):
        return self.tokenizer(list(texts), padding="longest", truncation=True, max_length=self.max_tokens,
                              return_tensors="pt").to(self.device)

    def scores(self, texts: Sequence[str]) -> np.ndarray:
        """One float64 score per text, in order; each distinct text is scored once, in batches of one length."""
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"text scorer {self.name!r}: text {i} is {type(text).__name__}, not str")
        distinct = list(dict.fromkeys(texts))
        lengths = [len(ids) for ids in self.tokenizer(distinct, truncation=True, max_length=self.max_tokens)
                   ["input_ids"]] if distinct else []
        distinct_scores = np.empty(len(distinct), dtype=np.float64)
        by_length = sorted(range(len(distinct)), key=lambda i: (lengths[i], i))
        for _, group in itertools.groupby(by_length, key=lengths.__getitem__):
            group = list(group)
            for start in range(0, len(group), self.batch_size):
                chunk = group[start:start + self.batch_size]
                distinct_scores[chunk] = self.score_batch([distinct[i] for i in chunk])
        position = {text: i for i, text in enumerate(distinct)}
        return distinct_scores[[position[text] for text in texts]]

    @cached_property
    def fingerprint(self) -> str:
        """sha256 over class, dtype, token limit, every weight and the tokenizer (computed once, on first use: Vera
        holds billions of weights)."""
        # deferred: loads PIL only when called
        from common.zoo.hf import describe_tokenizer

        digest = hashlib.sha256()
        dtype = next(self.model.parameters()).dtype
        digest.update(f"blind:{type(self).__name__}:{type(self.model).__name__}:{dtype}:{self.max_tokens}".encode())
        digest_weights(digest, self.model)
        digest.update(f"{type(self.tokenizer).__name__}:{describe_tokenizer(self.tokenizer)}".encode())
        return digest.hexdigest()[:32]


class VeraScorer(_HFTextScorer):
    """Vera's calibrated plausibility, ``Vera.run`` of the released code (``RAIVNLab/sugar-crepe@0047054b
    text_model_eval.py:28-38`` "score_calibrated = logit_calibrated.sigmoid()")."""

    default_name = "vera"
    model_class = "T5EncoderModel"
    load_dtype = "auto"

    def __post_init__(self) -> None:
        super().__post_init__()
        rows = self.model.shared.num_embeddings
        if rows <= VERA_WEIGHT_ROW:
            raise ScorerUnavailable(f"text scorer {self.name!r}: its shared embedding has {rows} rows; Vera's head "
                                    f"lives in rows {VERA_TEMPERATURE_ROW}-{VERA_WEIGHT_ROW}")

    @torch.no_grad()
    def score_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Scores of one (right-padded) batch: the hidden state at each text's last non-padding token."""
        encoded = self._encode(texts)
        mask = encoded["attention_mask"]
        hidden = self.model(input_ids=encoded["input_ids"], attention_mask=mask).last_hidden_state
        last = hidden[torch.arange(len(mask), device=hidden.device), mask.sum(dim=1) - 1]  # (B, D)
        shared = self.model.shared.weight
        logits = torch.nn.functional.linear(last, shared[VERA_WEIGHT_ROW][None], shared[VERA_BIAS_ROW, :1])
        temperature = shared[VERA_TEMPERATURE_ROW, 0].item()
        return (logits.squeeze(-1) / temperature).sigmoid().double().cpu().numpy()


class GrammarScorer(_HFTextScorer):
    """P(grammatical) from the CoLA classifier: softmax over its two logits, class 1 (``LABEL_1``)."""

    default_name = "grammar"
    model_class = "AutoModelForSequenceClassification"
    load_dtype = torch.float32  # the pipeline's default in transformers 4.x, where the released scores came from

    def __post_init__(self) -> None:
        self.max_tokens = self.model.config.max_position_embeddings  # the pipeline does not truncate captions
        super().__post_init__()
        if self.model.config.num_labels != 2:
            raise ScorerUnavailable(f"text scorer {self.name!r}: expected a 2-class head, found "
                                    f"{self.model.config.num_labels} labels")

    @torch.no_grad()
    def score_batch(self, texts: Sequence[str]) -> np.ndarray:
        encoded = self._encode(texts)
        logits = self.model(input_ids=encoded["input_ids"], attention_mask=encoded["attention_mask"]).logits
        return torch.softmax(logits.float(), dim=-1)[:, 1].double().cpu().numpy()


SCORER_CLASSES: dict[str, type[_HFTextScorer]] = {"vera": VeraScorer, "grammar": GrammarScorer}


def load_text_scorer(name: str, device: str = "cpu", cache_dir: str | Path | None = None, *,
                     path: str | Path | None = None, batch_size: int = 32) -> TextScorer:
    """The released scorer ``name`` ("vera" or "grammar") from ``path``, else from its fetched snapshot under
    ``cache_dir`` (default ``VLC_DATA``), whose downloader's error says how to obtain it."""
    if name not in SCORER_CLASSES:
        raise unknown_name("text scorer", name, SCORER_CLASSES)
    import_transformers(f"text scorer {name!r}", ScorerUnavailable)  # before any download
    if path is None:
        path = fetch(SOURCES[name], data_root=cache_dir)
    if not Path(path).is_dir():
        raise ScorerUnavailable(f"text scorer {name!r}: {path} is not a folder written by save_pretrained")
    return SCORER_CLASSES[name].from_pretrained(path, name=name, device=device, batch_size=batch_size)
