"""Tiny randomly initialised BLIP and FLAVA models in the upstream save format (``save_pretrained``), for tests of
the zoo's transformers backend and of the papers that score with it. Nothing is downloaded."""
from __future__ import annotations

from pathlib import Path

import torch
import transformers

WORDS = ("a an the red blue green white black circle square triangle star is left right of above below and "
         "dog cat small big").split()
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[ENC]", *WORDS]
TEXTS = ["a red circle", "the blue square is left of a green star", "a small black cat", "a big white dog"]
TOWER = dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=37)
VISION = dict(TOWER, image_size=32, patch_size=16)


def tokenizer(root: Path):
    (root / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    return transformers.BertTokenizer(str(root / "vocab.txt"))


def save_blip(root: Path, seed: int = 0) -> Path:
    config = transformers.BlipConfig(
        text_config=dict(TOWER, vocab_size=len(VOCAB), max_position_embeddings=80, encoder_hidden_size=32,
                         pad_token_id=0, bos_token_id=2, eos_token_id=3, sep_token_id=3),
        vision_config=VISION, image_text_hidden_size=16, projection_dim=16)
    torch.manual_seed(seed)
    model = transformers.BlipForImageTextRetrieval(config).eval()
    processor = transformers.BlipProcessor(
        image_processor=transformers.BlipImageProcessor(size={"height": 32, "width": 32}), tokenizer=tokenizer(root))
    out = root / f"blip-{seed}"
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


def save_flava(root: Path) -> Path:
    config = transformers.FlavaConfig(
        text_config=dict(TOWER, vocab_size=len(VOCAB), max_position_embeddings=80, pad_token_id=0),
        image_config=dict(VISION, vocab_size=64), multimodal_config=TOWER, projection_dim=16, hidden_size=32,
        init_codebook=False)
    torch.manual_seed(1)
    model = transformers.FlavaForPreTraining(config).eval()
    image_processor = transformers.FlavaImageProcessor(size={"height": 32, "width": 32},
                                                       crop_size={"height": 32, "width": 32})
    processor = transformers.FlavaProcessor(image_processor=image_processor, tokenizer=tokenizer(root))
    out = root / "flava"
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out
