"""SugarCrepe in the rehearsal (``tests.rehearsal``): this paper's stand-ins, models and shrinking.

What the full stages read, and what the rehearsal puts there:

* The released JSON: pinned, so real (the mirror); COCO val2017's image zip gets a stand-in for every image they
  name. ``full-set`` then keeps the first ``full_inputs.cap`` examples per category.
* NegCLIP's training TSV (unpinned): the stand-in ARO's rehearsal writes too (``standins.negclip_train_tsv``: real
  validation captions, which the CREPE-style generators edit), and COCO train2014's image zip.
* Vera and the CoLA grammar model (``blind-released``, ``negclip-full-refine``): tiny configs of their real classes as
  the downloader's snapshots.
* Models: Table 6 cut to ``KEPT_MODELS``, the NegCLIP base and ARO's released NegCLIP (``table5-full``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from common.benchmarks.caption_negatives import CATEGORIES, read_category, released_file_key
from tests.rehearsal import models as standin_models, standins

KEPT_MODELS = ("openai/RN50", "openai/ViT-B-32", "datacomp/small-ViT-B-32")
"""Table 6's rows the rehearsal scores: every loader path its 17 models take that a random stand-in can (an OpenAI
ResNet and ViT, QuickGELU under the ``openai`` tag; a GELU ViT under another tag and hub repository); three rows keep
Figure 5's correlations defined. Left out: the HF-text-tower models (open_clip reads their text tower's config and
tokenizer from the hub, which the rehearsal does not write) and the large ViTs (the same code at 1-10 GB each)."""
CHECKPOINT_LAYOUTS: dict[str, str] = {}
"""No ``data:`` checkpoint of its own: every model it loads is a hub release or another paper's."""


def params(params: dict[str, Any]) -> None:
    """Table 6 cut to ``KEPT_MODELS``."""
    models = params["sugarcrepe"]["models"]
    models["full"] = [name for name in models["full"] if name in KEPT_MODELS]


def models(params: dict[str, Any]) -> list[str]:
    # deferred: loads PIL, torch, tqdm only when called
    from papers.sugarcrepe.negclip_tables import RELEASED_NEGCLIP

    section = params["sugarcrepe"]
    return standin_models.needing_standins([*section["models"]["full"], section["negclip_full"]["base"],
                                            RELEASED_NEGCLIP])


def prepare(data_root: Path, fetch: Callable[[str], Path]) -> list[str]:
    """``fetch``: the downloader with the mirror, for the pinned released JSON whose images are stood in for."""
    records = [record for category in CATEGORIES for record in read_category(fetch(released_file_key(category)))
               .values()]
    val_key = standins.coco_val2017(data_root, sorted({r["filename"] for r in records}))
    train_keys = standins.negclip_train_tsv(data_root, fetch)  # the one writer ARO's rehearsal calls too
    standin_models.write_vera(data_root)
    standin_models.write_grammar_model(data_root)
    return [val_key, *train_keys]
