"""Stand-ins for the zoo's models: the real architectures at random init, saved where and how each release is read.

* A model with an open_clip ``pretrained`` tag loads its weights from the Hugging Face hub, offline only from the
  hub cache: ``write_pretrained`` writes random weights into that cache's layout, under the repository and file name
  open_clip's pretrained table gives the tag, so the zoo loads it exactly as it would load the real weights. OpenAI
  released its CLIPs in half precision, so the ``openai`` tag's stand-ins hold half-precision values: OpenAI's own
  loader, which the oracle runs, rounds every weight to fp16 (``openai/CLIP@d05afc43 clip/model.py:434``
  "convert_weights(model)") before ``.float()`` on a CPU, a no-op on the real weights and on these.
* A model whose ``checkpoint`` is ``data:<path>`` (a released fine-tune) is a file under the data root;
  ``write_checkpoint`` saves random weights there in the release's layout, which the zoo reads strictly. A model
  whose registry source pins a sha256 gets none.

``build:`` checkpoints are the pipeline's own outputs (its fine-tunes): nothing to write.
"""
from __future__ import annotations

import errno
import hashlib
import os
from pathlib import Path
from typing import Iterable, Literal, get_args

from common.files.io import atomic_path
from common.registry.errors import RegistryError
from common.registry.sources import get_source
from common.zoo import get_spec
from common.zoo.specs import register_local_configs
from tests.rehearsal.space import NoRoomError, free_bytes, gb
from tests.rehearsal.standins import StandInError, mark_snapshot, snapshot_folder

Layout = Literal["state_dict", "model", "model_state_dict", "plain"]
CHECKPOINT_LAYOUTS: tuple[str, ...] = get_args(Layout)
REVISION = hashlib.sha1(b"vlc-rehearsal stand-in").hexdigest()
"""The commit a stand-in hub snapshot claims (any 40 hex digits: offline, ``refs/main`` is all the hub reads)."""


def needing_standins(names: Iterable[str]) -> list[str]:
    """``names`` once each, less the pipeline's own fine-tunes (``build:`` checkpoints: nothing to write)."""
    return [n for n in dict.fromkeys(names) if not (get_spec(n).checkpoint or "").startswith("build:")]


def random_openclip(arch: str, seed: int = 0):
    """The open_clip architecture ``arch`` (the zoo's local configs included) with open_clip's own random init."""
    # deferred: loads open_clip, torch only when called
    import open_clip
    import torch

    # deferred: loads PIL, torch only when called
    from common.zoo.openclip import quiet_random_init_warning

    register_local_configs()
    torch.manual_seed(seed)
    with quiet_random_init_warning():
        return open_clip.create_model(arch, pretrained=None)


def hub_location(arch: str, tag: str) -> tuple[str, str]:
    """(hub repository, file name) open_clip reads the weights of (``arch``, ``tag``) from, offline: the safetensors
    alternative of its file first, as ``open_clip.pretrained.download_pretrained_from_hf`` tries it."""
    # deferred: loads open_clip only when called
    import open_clip
    from open_clip.constants import HF_WEIGHTS_NAME
    from open_clip.pretrained import _get_safe_alternatives

    cfg = open_clip.get_pretrained_cfg(arch, tag) or {}
    if not cfg.get("hf_hub"):
        raise StandInError(f"open_clip has no hub location for ({arch!r}, {tag!r}) (URL-only weights go to "
                           "~/.cache/clip: not written by the rehearsal)")
    repo, filename = os.path.split(cfg["hf_hub"])  # as download_pretrained splits it: "org/name/" -> no file name
    filename = filename or HF_WEIGHTS_NAME
    safe = list(_get_safe_alternatives(filename))
    return repo, (safe[0] if safe else filename)


def write_pretrained(hf_home: Path, name: str, seed: int = 0) -> Path:
    """Random weights of zoo model ``name`` (an open_clip ``pretrained`` tag) in the hub cache under ``hf_home``;
    returns the file."""
    # deferred: loads huggingface_hub only when called
    from huggingface_hub.file_download import repo_folder_name

    spec = get_spec(name)
    if spec.pretrained is None or spec.backend != "open_clip":
        raise StandInError(f"{name}: not an open_clip model with a pretrained tag")
    repo, filename = hub_location(spec.arch, spec.pretrained)
    folder = Path(hf_home) / "hub" / repo_folder_name(repo_id=repo, repo_type="model")
    target = folder / "snapshots" / REVISION / filename
    _save(pretrained_state(name, seed), target, "plain")
    (folder / "refs").mkdir(parents=True, exist_ok=True)
    (folder / "refs" / "main").write_text(REVISION)
    return target


def pretrained_state(name: str, seed: int = 0) -> dict:
    """The stand-in weights ``write_pretrained`` writes for zoo model ``name`` (an open_clip ``pretrained`` tag), for
    a stand-in that must hold the same tower (BiVLC's released heads)."""
    spec = get_spec(name)
    state = {k: v.detach().contiguous() for k, v in random_openclip(spec.arch, seed).state_dict().items()}
    return openai_release_values(state) if spec.pretrained == "openai" else state


def openai_release_values(state: dict) -> dict:
    """Every floating weight rounded to the nearest half-precision value (kept in its dtype): what OpenAI's released
    CLIP weights are."""
    return {k: v.half().to(v.dtype) if v.is_floating_point() else v for k, v in state.items()}


def write_checkpoint(data_root: Path, name: str, layout: Layout = "state_dict", seed: int = 0) -> Path:
    """Random weights of zoo model ``name`` (a ``data:`` checkpoint) at its path under ``data_root``, in the
    release's ``layout``; returns the file."""
    spec = get_spec(name)
    if not (spec.checkpoint or "").startswith("data:"):
        raise StandInError(f"{name}: its checkpoint {spec.checkpoint!r} is not a data: file (build: checkpoints are "
                           "the pipeline's own)")
    if spec.source:
        try:
            pinned = get_source(spec.source).sha256
        except RegistryError:
            pinned = None
        if pinned:
            raise StandInError(f"{name}: its source {spec.source} pins sha256 {pinned}: no stand-in can satisfy it")
    target = Path(data_root) / spec.checkpoint.removeprefix("data:")
    _save(random_openclip(spec.arch, seed).state_dict(), target, layout)
    return target


def _save(state: dict, target: Path, layout: str) -> None:
    if layout not in CHECKPOINT_LAYOUTS:
        raise ValueError(f"layout must be one of {CHECKPOINT_LAYOUTS}, got {layout!r}")
    state = {k: v.detach().contiguous() for k, v in state.items()}
    try:
        _write(state, target, layout)
    except (RuntimeError, OSError) as exc:  # torch's writer reports a full disk as "basic_ios::clear: iostream error"
        # for want of disk: a full disk's OSError, or less than the state free (the partial file is already removed)
        size, free = sum(v.numel() * v.element_size() for v in state.values()), free_bytes(target.parent)
        if getattr(exc, "errno", None) in (errno.ENOSPC, errno.EDQUOT) or free < size:
            raise NoRoomError(f"{target}: cannot write this stand-in checkpoint ({gb(size)}): {gb(free)} free on its "
                              "disk. Free some space or give --dir on a disk with room") from exc
        raise


def _write(state: dict, target: Path, layout: str) -> None:
    # deferred: loads torch only when called
    import torch

    with atomic_path(target) as tmp:
        if target.suffix == ".safetensors":
            # deferred: loads safetensors only when called
            from safetensors.torch import save_file

            if layout != "plain":
                raise ValueError(f"{target}: a safetensors file holds a plain state dict, not layout {layout!r}")
            save_file(state, str(tmp))
        elif layout == "plain":
            torch.save(state, tmp)
        elif layout == "state_dict":  # open_clip's trainer under DistributedDataParallel
            torch.save({"epoch": 1, "name": "rehearsal", "state_dict": {f"module.{k}": v for k, v in state.items()}},
                       tmp)
        else:
            torch.save({"epoch": 1, layout: state}, tmp)


# ------------------------------------------------------------------------------------------------------------------
# The released blind scorers' Hugging Face snapshots (Vera, the CoLA grammar model): tiny configs of their real classes
# ------------------------------------------------------------------------------------------------------------------
VERA_KEY = "hf/liujch1998/vera"
GRAMMAR_KEY = "hf/textattack/distilbert-base-uncased-CoLA"
TOKEN_CHARACTERS = "abcdefghijklmnopqrstuvwxyz0123456789.,'-!?"
"""A stand-in tokenizer's vocabulary: one token per character (case folded), so distinct captions get distinct ids
and a random model gives them distinct scores."""
VERA_ROWS = 32128
"""T5's embedding rows (Vera's head lives in rows 32097-32099 of the shared embedding)."""


def _character_tokenizer(specials: dict[str, str], template: str, template_tokens: tuple[str, ...]):
    """A fast tokenizer over ``TOKEN_CHARACTERS`` (lower-cased, one token per character, whitespace dropped),
    ``specials`` (role -> token) first in its vocabulary, ``template`` its single-sequence post-processing."""
    # deferred: loads tokenizers, transformers only when called
    import tokenizers
    import transformers

    vocab = {token: i for i, token in enumerate(dict.fromkeys([*specials.values(), *TOKEN_CHARACTERS]))}
    backend = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token=specials["unk_token"]))
    backend.normalizer = tokenizers.normalizers.Lowercase()
    backend.pre_tokenizer = tokenizers.pre_tokenizers.Sequence([
        tokenizers.pre_tokenizers.WhitespaceSplit(),
        tokenizers.pre_tokenizers.Split(tokenizers.Regex("."), behavior="isolated")])
    backend.post_processor = tokenizers.processors.TemplateProcessing(
        single=template, special_tokens=[(t, vocab[t]) for t in template_tokens])
    return transformers.PreTrainedTokenizerFast(tokenizer_object=backend, **specials), len(vocab)


def write_vera(data_root: Path, seed: int = 0) -> Path:
    """Vera's snapshot: a tiny ``T5EncoderModel`` (T5's 32,128 embedding rows, Vera's head rows unsaturated), stored
    in bfloat16 as the release is, with a T5-style tokenizer (``</s>`` closes every statement); returns the folder."""
    # deferred: loads torch, transformers only when called
    import torch
    import transformers

    # deferred: loads torch only when called
    from common.blind.pretrained import VERA_TEMPERATURE_ROW, VERA_WEIGHT_ROW

    tokenizer, _ = _character_tokenizer({"pad_token": "<pad>", "eos_token": "</s>", "unk_token": "<unk>"},
                                        "$A </s>", ("</s>",))
    config = transformers.T5Config(vocab_size=VERA_ROWS, d_model=16, d_kv=4, d_ff=32, num_layers=1, num_heads=2,
                                   pad_token_id=0, eos_token_id=1)
    torch.manual_seed(seed)
    model = transformers.T5EncoderModel(config).eval()
    with torch.no_grad():
        model.shared.weight[VERA_WEIGHT_ROW] *= 0.2
        model.shared.weight[VERA_TEMPERATURE_ROW, 0] = 1.7
    return _snapshot(data_root, VERA_KEY, model.to(torch.bfloat16), tokenizer)


def write_grammar_model(data_root: Path, seed: int = 0) -> Path:
    """The CoLA grammar model's snapshot: a tiny ``DistilBertForSequenceClassification`` (two labels, LABEL_0 and
    LABEL_1, as textattack's) with a BERT-style tokenizer (``[CLS] ... [SEP]``); returns the folder."""
    # deferred: loads torch, transformers only when called
    import torch
    import transformers

    specials = {"unk_token": "[UNK]", "pad_token": "[PAD]", "cls_token": "[CLS]", "sep_token": "[SEP]",
                "mask_token": "[MASK]"}
    tokenizer, rows = _character_tokenizer(specials, "[CLS] $A [SEP]", ("[CLS]", "[SEP]"))
    config = transformers.DistilBertConfig(vocab_size=rows, dim=16, hidden_dim=32, n_layers=1, n_heads=2,
                                           initializer_range=0.5, num_labels=2, pad_token_id=1,
                                           id2label={0: "LABEL_0", 1: "LABEL_1"}, label2id={"LABEL_0": 0, "LABEL_1": 1})
    torch.manual_seed(seed)
    return _snapshot(data_root, GRAMMAR_KEY, transformers.DistilBertForSequenceClassification(config).eval(), tokenizer)


def _snapshot(data_root: Path, key: str, model, tokenizer) -> Path:
    folder = snapshot_folder(data_root, key)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    mark_snapshot(data_root, key)
    return folder
