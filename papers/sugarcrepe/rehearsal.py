"""SugarCrepe in the rehearsal (``common.rehearsal``): this paper's stand-ins, models and shrinking.

What the full stages read, and what the rehearsal puts there:

* The released JSON (``sugarcrepe/data/*.json``, and the unrefined and GPT-4V files the audit and the blind stages
  read): pinned, so real (the mirror); COCO val2017's image zip gets a stand-in for every image they name
  (``common.rehearsal.standins.coco_val2017``). ``full-set`` then keeps the first ``full_inputs.cap`` examples per
  category (``sets_full``), and everything downstream scores those.
* NegCLIP's training TSV (``aro/negclip/train_neg_clip.tsv``, unpinned): the stand-in ARO's rehearsal writes too
  (``common.rehearsal.standins.negclip_train_tsv``: real validation captions, which the CREPE-style generators edit,
  on train2014 files, and one row on a SugarCrepe test image's twin, which ``negclip-full-set`` must drop), and COCO
  train2014's image zip holding every image it names. Each NegCLIP run stops after ``ceil(cap / batch)`` steps.
* Vera and the CoLA grammar model (``blind-released``, ``negclip-full-refine``): tiny configs of their real classes as
  the downloader's snapshots (``common.rehearsal.models.write_vera``, ``write_grammar_model``).
* Models: Table 6 cut to ``KEPT_MODELS`` (below), the NegCLIP base and ARO's released NegCLIP (``table5-full``), at
  random init where and how each release is read.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from common.benchmarks.caption_negatives import CATEGORIES, read_category, released_file_key
from common.rehearsal import models as standin_models, standins

KEPT_MODELS = ("openai/RN50", "openai/ViT-B-32", "datacomp/small-ViT-B-32")
"""Table 6's rows the rehearsal scores: every loader path its 17 models take that a random stand-in can: an OpenAI
ResNet (``RN50-quickgelu``, open_clip's ModifiedResNet tower) and ViT (``ViT-B-32-quickgelu``, also the NegCLIP base),
both QuickGELU under the ``openai`` tag, and a GELU ViT under another tag and hub repository (DataComp). Three rows
keep Figure 5's correlations defined. Left out: the HF-text-tower models (``laion/roberta-ViT-B-32``, the XLM-R pair:
open_clip reads their text tower's config and tokenizer from the hub's ``roberta-base``/``xlm-roberta-*``, which
the rehearsal does not write) and the large ViTs (the same code as ViT-B-32 at 1-10 GB each). Table 6 has no other
backend (no BLIP, FLAVA or X-VLM)."""


CHECKPOINT_LAYOUTS: dict[str, str] = {}
"""No ``data:`` checkpoint of its own: every model it loads is a hub release or another paper's."""


def params(params: dict[str, Any]) -> None:
    """The rehearsal's changes to this paper's parameters: Table 6 cut to ``KEPT_MODELS``."""
    models = params["sugarcrepe"]["models"]
    models["full"] = [name for name in models["full"] if name in KEPT_MODELS]


def models(params: dict[str, Any]) -> list[str]:
    """The zoo models this paper's full stages load that are not its own fine-tunes."""
    # deferred: loads PIL, torch, tqdm only when called
    from papers.sugarcrepe.negclip_tables import RELEASED_NEGCLIP

    section = params["sugarcrepe"]
    return standin_models.needing_standins([*section["models"]["full"], section["negclip_full"]["base"],
                                            RELEASED_NEGCLIP])


def prepare(data_root: Path, fetch: Callable[[str], Path]) -> list[str]:
    """Write this paper's stand-ins under ``data_root`` (``fetch``: the downloader on it, with the mirror, for the
    pinned released JSON whose images are stood in for); returns the keys DVC's data deps need fetched."""
    records = [record for category in CATEGORIES for record in read_category(fetch(released_file_key(category)))
               .values()]
    val_key = standins.coco_val2017(data_root, sorted({r["filename"] for r in records}))
    tsv = standins.negclip_train_tsv(data_root, fetch)  # the one writer ARO's rehearsal calls too
    image_keys = standins.negclip_tsv_images(data_root, tsv)
    standin_models.write_vera(data_root)
    standin_models.write_grammar_model(data_root)
    return [val_key, standins.NEGCLIP_TRAIN, *image_keys]
