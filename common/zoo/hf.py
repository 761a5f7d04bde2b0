"""The zoo's Hugging Face backend: BLIP and FLAVA from ``transformers`` (an optional extra, imported only when a model
is built), behind ``EmbeddingModel``: ``encode_images`` / ``encode_tokens`` give the contrastive (ITC) embeddings,
used like a CLIP's, and ``match_scores`` the image-text matching (ITM) head's match probability of each pair
(``common.evaluation.scoring.matching``). Weights come from the hub or a ``save_pretrained`` folder; X-VLM, which ARO
also evaluates, is not in ``transformers`` and raises ``ModelUnavailable`` saying so."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import torch
from PIL import Image

from common.files.image_transforms import to_rgb
from common.zoo.hub import hub_offline, hub_offline_mode, offline_message
from common.zoo.interface import ModelUnavailable, digest_weights, import_transformers
from common.zoo.specs import ModelSpec

XVLM_MESSAGE = (
    "X-VLM is not part of Hugging Face transformers: it needs the authors' repository code (zengyan-97/X-VLM: its "
    "Swin/BERT model classes and tokenizer) and their retrieval checkpoint (Google Drive, as ARO's model zoo "
    "downloads it), which this workspace does not vendor; X-VLM is not supported here")
"""ARO's model zoo fetches X-VLM's checkpoint by its Drive id (``mertyg/vision-language-models-are-bows@81fdd20d
model_zoo/xvlm_models.py:71`` "gdown.download(id=model_url, output=self.model_path, quiet=False)")."""


@dataclass(frozen=True)
class Arch:
    """How one ``arch`` of the backend is built and scored."""

    model_class: str
    processor_class: str
    max_tokens: int
    """Texts are padded / truncated to this many tokens: the length ARO's code used (BLIP's retrieval configs: 35;
    ARO's FLAVA wrapper: 77)."""
    weights: tuple[str, ...]
    """Prefixes of the state-dict keys the scores use: any of them missing from a checkpoint is an error."""


ARCHS = {
    "blip": Arch("BlipForImageTextRetrieval", "BlipProcessor", 35,
                 ("vision_model.", "text_encoder.", "vision_proj.", "text_proj.", "itm_head.")),
    "flava": Arch("FlavaForPreTraining", "FlavaProcessor", 77, ("flava.", "itm_head.")),
}
SCORES = ("itm", "itm_logit+itc")
"""``pair_scores`` kinds: the ITM match probability (``match_scores``), or the ITM head's raw match logit plus the
contrastive cosine (what ARO's BLIP and X-VLM wrappers rank captions by)."""


def describe_tokenizer(tokenizer) -> str:
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:  # the whole pipeline: normalizer (lower-casing, accents), vocabulary, post-processor
        pipeline = json.loads(backend.to_str())
        for state in ("truncation", "padding"):  # the last call's settings (each call sets its own), not the model's
            pipeline.pop(state, None)
        return json.dumps(pipeline, sort_keys=True)
    return json.dumps(sorted(tokenizer.get_vocab().items()))


def fingerprint_hf_model(arch: str, model: torch.nn.Module, processor, max_tokens: int, itm: str | None) -> str:
    """``fingerprint_model``'s recipe for ``transformers`` models: sha256 over architecture, weights, image processor,
    tokenizer (whole pipeline, padding length) and the ITM input settings (``itm``: a result names one fingerprint)."""
    digest = hashlib.sha256()
    digest.update(f"transformers:{arch}:{type(model).__name__}".encode())
    digest_weights(digest, model)
    digest.update(processor.image_processor.to_json_string().encode())
    tokenizer = processor.tokenizer
    digest.update(f"{type(tokenizer).__name__}:{max_tokens}:{itm}".encode())
    digest.update(describe_tokenizer(tokenizer).encode())
    return digest.hexdigest()[:32]


class HFModel:
    """A BLIP or FLAVA model from ``transformers`` behind the ``EmbeddingModel`` interface, with ITM scores.

    ``tokenize`` pads to ``max_tokens`` (one width, so the engine can stack rows tokenised apart); the attention mask is
    ``ids != pad_token_id`` (checked when tokenising). ``itm_start_token`` (e.g. ``"[ENC]"``) replaces the first token
    of ITM inputs: the original BLIP code does so, transformers' ``BlipForImageTextRetrieval`` keeps ``[CLS]`` (None,
    the default). ``itm_attends_padding`` (FLAVA only) pads ITM texts to ``max_tokens`` and lets FLAVA's multimodal
    encoder attend to the padding, as FLAVA's own code (torchmultimodal) and transformers before 4.39
    (huggingface/transformers#29446) did: ARO's FLAVA numbers were computed that way. The default masks padding, as
    transformers does now."""

    def __init__(self, spec: ModelSpec, model: torch.nn.Module, processor, device: str = "cpu",
                 itm_start_token: str | None = None, itm_attends_padding: bool = False):
        if spec.arch not in ARCHS:
            raise ValueError(f"model {spec.name!r}: arch {spec.arch!r} is not one of {sorted(ARCHS)}")
        self.spec = spec
        self.name = spec.name
        self.arch = spec.arch
        self.model = model.eval().to(device)
        self.processor = processor
        self.image_processor = processor.image_processor
        self.tokenizer = processor.tokenizer
        self.device = device
        self.max_tokens = ARCHS[spec.arch].max_tokens
        self.pad_id = self.tokenizer.pad_token_id
        if self.pad_id is None:
            raise ValueError(f"model {spec.name!r}: its tokenizer has no padding token")
        self.itm_start_id = None
        if itm_start_token is not None:
            token_id = self.tokenizer.convert_tokens_to_ids(itm_start_token)
            if token_id is None or token_id == self.tokenizer.unk_token_id:
                raise ValueError(f"model {spec.name!r}: ITM start token {itm_start_token!r} is not in its vocabulary")
            self.itm_start_id = int(token_id)
        if itm_attends_padding and spec.arch != "flava":
            raise ValueError(f"model {spec.name!r}: itm_attends_padding is FLAVA's (its multimodal encoder's) option")
        self.itm_attends_padding = itm_attends_padding
        itm = f"{itm_start_token}:{'attends-padding' if itm_attends_padding else 'masks-padding'}"
        self.fingerprint = fingerprint_hf_model(spec.arch, self.model, processor, self.max_tokens, itm)

    def load_image(self, path: Path) -> torch.Tensor:
        with Image.open(path) as image:
            return self.image_processor(images=to_rgb(image, path), return_tensors="pt")["pixel_values"][0]

    def _tokens(self, texts: Sequence[str], padding: str) -> tuple[torch.Tensor, torch.Tensor]:
        encoded = self.tokenizer(list(texts), padding=padding, truncation=True, max_length=self.max_tokens,
                                 return_tensors="pt")
        return encoded["input_ids"], encoded["attention_mask"]

    def tokenize(self, texts: Sequence[str]) -> torch.Tensor:
        ids, mask = self._tokens(texts, "max_length")
        if not torch.equal(mask.bool(), ids != self.pad_id):
            raise ValueError(f"model {self.name!r}: a text tokenises to the padding id {self.pad_id}; the attention "
                             "mask cannot be recovered from the ids")
        return ids

    # contrastive embeddings: each tower's first token, projected
    @torch.no_grad()
    def encode_images(self, pixels: torch.Tensor) -> torch.Tensor:
        pixels = pixels.to(self.device, non_blocking=True)
        if self.arch == "blip":
            features = self.model.vision_proj(self.model.vision_model(pixel_values=pixels)[0][:, 0])
        else:
            flava = self.model.flava
            features = flava.image_projection(flava.image_model(pixel_values=pixels)[0][:, 0])
        return torch.nn.functional.normalize(features, dim=-1).float().cpu()

    @torch.no_grad()
    def encode_tokens(self, tokens: torch.Tensor) -> torch.Tensor:
        ids = tokens.to(self.device)
        mask = (ids != self.pad_id).long()
        # cut after the batch's longest text when padding is on the right: masked positions change nothing
        if self.tokenizer.padding_side == "right" and ids.shape[1]:
            length = int(mask.sum(dim=1).max())
            ids, mask = ids[:, :max(length, 1)], mask[:, :max(length, 1)]
        if self.arch == "blip":
            features = self.model.text_proj(self.model.text_encoder(input_ids=ids, attention_mask=mask)[0][:, 0])
        else:
            flava = self.model.flava
            features = flava.text_projection(flava.text_model(input_ids=ids, attention_mask=mask)[0][:, 0])
        return torch.nn.functional.normalize(features, dim=-1).float().cpu()

    def encode_texts(self, texts: Sequence[str]) -> torch.Tensor:
        return self.encode_tokens(self.tokenize(texts))

    @torch.no_grad()
    def itm_logits(self, pixels: torch.Tensor, texts: Sequence[str]) -> torch.Tensor:
        """The ITM head's (no match, match) logits of each pair (image i, text i), float CPU [N, 2]; consecutive
        identical images (one image against its K captions) go through the vision tower once."""
        if len(pixels) != len(texts):
            raise ValueError(f"{len(pixels)} images but {len(texts)} texts: ITM scores pairs")
        ids, mask = self._tokens(texts, "max_length" if self.itm_attends_padding else "longest")
        ids, mask = ids.to(self.device), mask.to(self.device)
        if self.itm_start_id is not None:
            ids[:, 0] = self.itm_start_id
        distinct, inverse = torch.unique_consecutive(pixels, dim=0, return_inverse=True)
        pixels, inverse = distinct.to(self.device, non_blocking=True), inverse.to(self.device)
        if self.arch == "blip":
            image = self.model.vision_model(pixel_values=pixels)[0][inverse]
            image_mask = torch.ones(image.shape[:-1], dtype=torch.long, device=image.device)
            joint = self.model.text_encoder(input_ids=ids, attention_mask=mask, encoder_hidden_states=image,
                                            encoder_attention_mask=image_mask)[0]
            return self.model.itm_head(joint[:, 0]).float().cpu()
        # FLAVA: FlavaModel.forward's multimodal path (the ITM head reads the multimodal encoder's first token)
        flava = self.model.flava
        image_states = flava.image_model(pixel_values=pixels, output_hidden_states=True, return_dict=True).hidden_states
        image = flava.image_to_mm_projection(image_states[-1])[inverse]
        text_states = flava.text_model(input_ids=ids, attention_mask=mask, output_hidden_states=True,
                                       return_dict=True).hidden_states
        text = flava.text_to_mm_projection(text_states[-1])
        image_len = image.shape[1] + (1 if flava.multimodal_model.use_cls_token else 0)
        joint_mask = torch.cat([torch.ones(len(ids), image_len, dtype=mask.dtype, device=mask.device), mask], dim=1)
        if self.itm_attends_padding:
            joint_mask = None
        joint = flava.multimodal_model(torch.cat([image, text], dim=1), attention_mask=joint_mask, return_dict=True)
        return self.model.itm_head(joint.last_hidden_state).float().cpu()

    def match_scores(self, pixels: torch.Tensor, texts: Sequence[str]) -> torch.Tensor:
        """The ITM match probability, softmax(logits)[:, 1], of each pair (image i, text i): float CPU tensor [N]."""
        return torch.softmax(self.itm_logits(pixels, texts), dim=-1)[:, 1]

    def pair_scores(self, pixels: torch.Tensor, texts: Sequence[str], kind: str = "itm") -> torch.Tensor:
        """Scores of pairs (image i, text i), of one of the kinds in ``SCORES``."""
        if kind == "itm":
            return self.match_scores(pixels, texts)
        if kind == "itm_logit+itc":
            distinct, inverse = torch.unique_consecutive(pixels, dim=0, return_inverse=True)
            cosine = (self.encode_images(distinct)[inverse] * self.encode_texts(texts)).sum(dim=-1)
            return self.itm_logits(pixels, texts)[:, 1] + cosine
        raise ValueError(f"unknown pair score {kind!r} (one of {', '.join(SCORES)})")


def _weights_source(spec: ModelSpec) -> tuple[str, bool]:
    """(hub repository id or directory, whether it is a local directory)."""
    if spec.checkpoint is not None:
        return str(spec.checkpoint_path()), True
    assert spec.pretrained is not None
    path = Path(spec.pretrained).expanduser()
    looks_local = path.is_absolute() or spec.pretrained.startswith((".", "~"))
    return (str(path), True) if looks_local or path.is_dir() else (spec.pretrained, False)


def how_to_get(spec: ModelSpec) -> str:
    """How to obtain a transformers model's weights (``common.zoo.factory._how_to_get`` for this backend)."""
    if spec.backend == "xvlm" or spec.arch == "xvlm":
        return XVLM_MESSAGE
    source, local = _weights_source(spec)
    if local:
        return f"write the model and its processor to {source} with save_pretrained (or point the entry elsewhere)"
    return (f"transformers downloads {source!r} from the Hugging Face hub (huggingface.co/{source}); run "
            f"`python -m common zoo check {spec.name}` once on a machine with internet (weights are cached under "
            "HF_HOME, default ~/.cache/huggingface), or copy that cache here")


CONFIG_LIMIT = 1 << 20
"""Bytes of a model folder's ``config.json`` read before transformers: a config is a few KB."""


def refuse_custom_code(folder: Path, who: str) -> None:
    """Refuse, in one line naming it, a model folder whose ``config.json`` asks for code of its own (``auto_map``), or
    is not JSON, too large or nested too deeply: before transformers reads anything (it also gets
    ``trust_remote_code=False``)."""
    path = folder / "config.json"
    if not path.is_file():
        return
    try:
        if path.stat().st_size > CONFIG_LIMIT:
            raise ModelUnavailable(f"{who}: {path} is {path.stat().st_size:,} bytes, not a model config")
        config = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ModelUnavailable(f"{who}: {path} is not a JSON model config ({type(exc).__name__})") from None
    except RecursionError:
        raise ModelUnavailable(f"{who}: {path} is nested too deeply to be a model config") from None
    if not isinstance(config, dict):
        raise ModelUnavailable(f"{who}: {path} is not a JSON object")
    code = [k for k in ("auto_map", "custom_pipelines") if k in config]
    scripts = sorted(p.name for p in folder.glob("*.py"))
    if code:
        raise ModelUnavailable(f"{who}: {path} asks for code shipped with the model ({', '.join(code)}"
                               f"{': ' + ', '.join(scripts) if scripts else ''}); this project never runs a model's "
                               f"own code: give a folder saved by transformers' own BLIP or FLAVA classes")


def create_hf_model(spec: ModelSpec, device: str = "cpu", cache_dir: str | None = None,
                    itm_start_token: str | None = None, itm_attends_padding: bool = False) -> HFModel:
    """Build a registered ``transformers`` model with its weights, or raise ``ModelUnavailable``. The ITM options
    are ``HFModel``'s (the original code's ITM inputs, for reproducing a paper's numbers)."""
    if spec.backend == "xvlm" or spec.arch == "xvlm":
        raise ModelUnavailable(f"model {spec.name!r}: {XVLM_MESSAGE}")
    if spec.arch not in ARCHS:
        raise ModelUnavailable(f"model {spec.name!r}: the transformers backend knows arch {sorted(ARCHS)}, "
                               f"not {spec.arch!r}")
    transformers = import_transformers(f"model {spec.name!r}")
    arch = ARCHS[spec.arch]
    model_class = getattr(transformers, arch.model_class)
    processor_class = getattr(transformers, arch.processor_class)
    source, local = _weights_source(spec)
    offline = None if local else hub_offline()
    repo = f"its Hugging Face repository {source!r} is"
    if local and not Path(source).is_dir():
        raise ModelUnavailable(f"model {spec.name!r}: directory {source} not found; {how_to_get(spec)}")
    if offline:  # fail before anything is built or retried
        # deferred: loads huggingface_hub only when called
        from huggingface_hub import try_to_load_from_cache

        if not isinstance(try_to_load_from_cache(source, "config.json", cache_dir=cache_dir), str):
            raise ModelUnavailable(offline_message(spec, offline, cache_dir, None, repo))
    if local:
        refuse_custom_code(Path(source), f"model {spec.name!r}")
    # trust_remote_code=False: a model's folder or hub repository never runs code here, asked or not
    options = {"cache_dir": cache_dir, "local_files_only": bool(local or offline), "trust_remote_code": False}
    try:
        with hub_offline_mode(bool(offline)):
            model, info = model_class.from_pretrained(source, output_loading_info=True, **options)
            processor = processor_class.from_pretrained(source, **options)
    except Exception as exc:  # network, hub or file errors all mean: weights not obtainable here
        if offline:
            raise ModelUnavailable(offline_message(spec, offline, cache_dir, exc, repo)) from exc
        raise ModelUnavailable(
            f"model {spec.name!r}: {source} could not be loaded ({type(exc).__name__}: {exc}); {how_to_get(spec)}"
        ) from exc
    missing = [k for k in info.get("missing_keys", ()) if k.startswith(arch.weights)]
    if missing:  # transformers would initialise them randomly
        raise ModelUnavailable(f"model {spec.name!r}: {source} lacks {len(missing)} weights the scores use "
                               f"({', '.join(sorted(missing)[:5])}{', ...' if len(missing) > 5 else ''})")
    if getattr(model, "image_codebook", None) is not None:
        model.image_codebook = None  # FLAVA's DALL-E tokenizer: pre-training targets only, never scored
    return HFModel(spec, model, processor, device, itm_start_token=itm_start_token,
                   itm_attends_padding=itm_attends_padding)
