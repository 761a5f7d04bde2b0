"""The released blind scorers (common/blind/pretrained.py) on tiny random models; nothing is downloaded.

A one-layer T5 encoder with Vera's vocabulary size (its head lives in embedding rows 32097-32099) and a one-layer
DistilBERT classifier are saved with ``save_pretrained`` beside locally built tokenizers; each score is checked
against a hand computation from the raw model outputs and, for the grammar model, against transformers' pipeline.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from common.blind import pretrained  # noqa: E402
from common.blind.pretrained import GrammarScorer, ScorerUnavailable, VeraScorer, load_text_scorer  # noqa: E402
from common.errors import UnknownName  # noqa: E402

WORDS = "a the red blue green cat dog sits on is left of right mat big small and".split()
TEXTS = ["a red cat", "the big blue dog sits on a small green mat", "a dog", "the cat is left of the dog"]


def _t5_tokenizer() -> transformers.PreTrainedTokenizerFast:
    vocab = {token: i for i, token in enumerate(["<pad>", "</s>", "<unk>", *WORDS])}
    backend = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    backend.post_processor = tokenizers.processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    return transformers.PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="<pad>", eos_token="</s>",
                                                unk_token="<unk>")


@pytest.fixture(scope="module")
def vera_dir(tmp_path_factory) -> Path:
    config = transformers.T5Config(vocab_size=32128, d_model=16, d_kv=4, d_ff=32, num_layers=1, num_heads=2)
    torch.manual_seed(0)
    model = transformers.T5EncoderModel(config).eval()
    with torch.no_grad():  # an unsaturated head: scores spread inside (0, 1)
        model.shared.weight[pretrained.VERA_WEIGHT_ROW] *= 0.2
        model.shared.weight[pretrained.VERA_TEMPERATURE_ROW, 0] = 1.7
    out = tmp_path_factory.mktemp("vera") / "vera"
    model.save_pretrained(out)
    _t5_tokenizer().save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def grammar_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("grammar")
    (root / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    config = transformers.DistilBertConfig(vocab_size=5 + len(WORDS), dim=16, hidden_dim=32, n_layers=1, n_heads=2,
                                           initializer_range=0.5, num_labels=2, id2label={0: "LABEL_0", 1: "LABEL_1"},
                                           label2id={"LABEL_0": 0, "LABEL_1": 1})
    torch.manual_seed(1)
    model = transformers.DistilBertForSequenceClassification(config).eval()
    out = root / "cola"
    model.save_pretrained(out)
    transformers.DistilBertTokenizer(str(root / "vocab.txt")).save_pretrained(out)
    return out


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + np.exp(-x))


def test_vera_matches_hand_computation_and_padding_changes_nothing(vera_dir):
    scorer = load_text_scorer("vera", path=vera_dir, batch_size=2)
    assert isinstance(scorer, VeraScorer) and scorer.name == "vera"
    raw = transformers.T5EncoderModel.from_pretrained(vera_dir).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(vera_dir)
    shared = raw.shared.weight.detach().double().numpy()
    expected = []
    for text in TEXTS:
        ids = tokenizer([text], return_tensors="pt")["input_ids"]
        assert ids[0, -1].item() == tokenizer.eos_token_id
        with torch.no_grad():
            last = raw(input_ids=ids).last_hidden_state[0, -1].double().numpy()
        logit = last @ shared[32099] + shared[32098, 0]
        expected.append(_sigmoid(logit / shared[32097, 0]))
    lengths = {len(tokenizer(text)["input_ids"]) for text in TEXTS}
    assert len(lengths) == len(TEXTS)  # so the padded batch below pads every text but the longest
    padded = scorer.score_batch(TEXTS)
    alone = np.concatenate([scorer.score_batch([text]) for text in TEXTS])
    np.testing.assert_allclose(padded, expected, atol=1e-6, rtol=0)
    np.testing.assert_allclose(alone, expected, atol=1e-6, rtol=0)
    scores = scorer.scores(TEXTS)
    assert scores.dtype == np.float64 and scores.shape == (len(TEXTS),)
    np.testing.assert_allclose(scores, expected, atol=1e-6, rtol=0)
    assert np.ptp(scores) > 1e-2  # the tiny model's scores differ, so the comparisons above can fail


def test_vera_keeps_the_stored_dtype(tmp_path, vera_dir):
    """Released Vera is bfloat16 and upstream loads it with torch_dtype='auto': the scores are bfloat16-rounded."""
    model = transformers.T5EncoderModel.from_pretrained(vera_dir).to(torch.bfloat16)
    model.save_pretrained(tmp_path / "bf16")
    _t5_tokenizer().save_pretrained(tmp_path / "bf16")
    scorer = load_text_scorer("vera", path=tmp_path / "bf16")
    assert next(scorer.model.parameters()).dtype == torch.bfloat16
    scores = scorer.scores(TEXTS)
    rounded = torch.tensor(scores).to(torch.bfloat16).double().numpy()
    np.testing.assert_array_equal(scores, rounded)


def test_scores_are_cached_per_distinct_text_and_keep_order(vera_dir, monkeypatch):
    scorer = load_text_scorer("vera", path=vera_dir, batch_size=3)
    seen: list[str] = []
    original = VeraScorer.score_batch

    def counting(self, texts):
        seen.extend(texts)
        return original(self, texts)

    monkeypatch.setattr(VeraScorer, "score_batch", counting)
    texts = [TEXTS[2], TEXTS[0], TEXTS[2], TEXTS[1], TEXTS[0], TEXTS[3], TEXTS[2]]
    scores = scorer.scores(texts)
    assert sorted(seen) == sorted(TEXTS)  # each distinct text once
    reference = dict(zip(TEXTS, scorer.scores(TEXTS)))
    np.testing.assert_array_equal(scores, [reference[text] for text in texts])
    assert scorer.scores([]).shape == (0,)


def test_grammar_is_softmax_class_one_and_matches_the_pipeline(grammar_dir):
    scorer = load_text_scorer("grammar", path=grammar_dir, batch_size=3)
    assert isinstance(scorer, GrammarScorer)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(grammar_dir).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(grammar_dir)
    by_hand = []
    for text in TEXTS:
        encoded = tokenizer(text, return_tensors="pt")
        with torch.no_grad():
            logits = model(input_ids=encoded["input_ids"], attention_mask=encoded["attention_mask"]).logits[0]
        by_hand.append(torch.softmax(logits.double(), dim=-1)[1].item())
    classify = transformers.pipeline("text-classification", model=model, tokenizer=tokenizer, device="cpu")
    from_pipeline = [out["score"] if out["label"] == "LABEL_1" else 1 - out["score"] for out in classify(TEXTS)]
    scores = scorer.scores(TEXTS)
    np.testing.assert_allclose(scores, by_hand, atol=1e-6, rtol=0)
    np.testing.assert_allclose(scores, from_pipeline, atol=1e-6, rtol=0)
    np.testing.assert_allclose(scorer.score_batch(TEXTS), by_hand, atol=1e-6, rtol=0)  # padded batch
    assert np.ptp(scores) > 1e-2


def test_fingerprint_follows_the_weights(vera_dir, grammar_dir, tmp_path):
    vera = load_text_scorer("vera", path=vera_dir)
    assert vera.fingerprint == load_text_scorer("vera", path=vera_dir).fingerprint
    assert vera.fingerprint != load_text_scorer("grammar", path=grammar_dir).fingerprint
    model = transformers.T5EncoderModel.from_pretrained(vera_dir)
    with torch.no_grad():
        model.shared.weight[pretrained.VERA_BIAS_ROW, 0] += 1.0
    model.save_pretrained(tmp_path / "other")
    _t5_tokenizer().save_pretrained(tmp_path / "other")
    assert load_text_scorer("vera", path=tmp_path / "other").fingerprint != vera.fingerprint


def test_missing_transformers_names_the_install_hint(monkeypatch, vera_dir):
    def no_fetch(*args, **kwargs):
        raise AssertionError("nothing is fetched when transformers is missing")

    monkeypatch.setattr("common.blind.pretrained.fetch", no_fetch)
    monkeypatch.setitem(sys.modules, "transformers", None)  # `import transformers` now raises ImportError
    for name, path in (("vera", vera_dir), ("grammar", None)):
        with pytest.raises(ScorerUnavailable, match=r"pip install -e '\.\[hf\]'"):
            load_text_scorer(name, path=path)


def test_weights_come_from_the_downloader(monkeypatch, grammar_dir, tmp_path):
    from common.registry.errors import DownloadError

    calls = []

    def fake_fetch(key, data_root=None):
        calls.append((key, data_root))
        return grammar_dir

    monkeypatch.setattr("common.blind.pretrained.fetch", fake_fetch)
    scorer = load_text_scorer("grammar", cache_dir=tmp_path)
    assert calls == [("hf/textattack/distilbert-base-uncased-CoLA", tmp_path)]
    assert scorer.scores(["a dog"]).shape == (1,)

    def failing_fetch(key, data_root=None):
        raise DownloadError(f"{key}: offline")

    monkeypatch.setattr("common.blind.pretrained.fetch", failing_fetch)
    with pytest.raises(DownloadError, match="hf/liujch1998/vera: offline"):
        load_text_scorer("vera")
    with pytest.raises(UnknownName, match="unknown text scorer 'verra'; did you mean 'vera'"):
        load_text_scorer("verra")


def test_incomplete_weights_are_refused(tmp_path, grammar_dir):
    """Weights transformers would initialise randomly (a classifier head, Vera's head rows) are an error."""
    headless = transformers.DistilBertModel.from_pretrained(grammar_dir)
    headless.save_pretrained(tmp_path / "headless")
    transformers.AutoTokenizer.from_pretrained(grammar_dir).save_pretrained(tmp_path / "headless")
    with pytest.raises(ScorerUnavailable, match="lacks .* weights .*classifier"):
        load_text_scorer("grammar", path=tmp_path / "headless")
    config = transformers.T5Config(vocab_size=64, d_model=16, d_kv=4, d_ff=32, num_layers=1, num_heads=2)
    transformers.T5EncoderModel(config).save_pretrained(tmp_path / "short")
    _t5_tokenizer().save_pretrained(tmp_path / "short")
    with pytest.raises(ScorerUnavailable, match="64 rows"):
        load_text_scorer("vera", path=tmp_path / "short")
