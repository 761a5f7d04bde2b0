"""ARO in the rehearsal (``tests.rehearsal``): this paper's stand-ins, models and shrinking.

What the full stages read, and what the rehearsal puts there:

* ``full-set``: VG-Relation / VG-Attribution (manual, unpinned): stand-ins in ARO's record format, with ARO's image
  zip holding their images; BLIP's Karpathy COCO test split over the first images of NegCLIP's released
  ``valid_neg_clip.tsv`` (their real captions) and Flickr30k test split with its images folder; the CIFAR-10/100
  binary tarballs in the released layout (a few classes; the copy's registry states their md5).
* ``finetune-full@{negclip,clip-ft}``: ``valid_neg_clip.tsv`` is pinned, so real (the mirror);
  ``train_neg_clip.tsv`` is not, so a stand-in in its format (``standins.negclip_train_tsv``, shared with
  SugarCrepe); COCO 2014's two image zips hold the images both name. All four are DVC data deps, so fetched
  (extracted) before the pipeline runs.
* ``real-text``: ``valid_neg_clip.tsv``, real.
* Models: the fine-tunes' base and the tables' rows the rehearsal keeps (``KEPT_MODELS``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from common.text.released_text import read_negclip_tsv
from tests.rehearsal import standins
from tests.rehearsal.models import needing_standins
from tests.rehearsal.standins import COCO_LIKE_CAPTIONS as captions

CHECKPOINT_LAYOUTS = {"aro/negclip": "state_dict"}
"""NegCLIP's release, as vinid/neg_clip's trainer saves it (``vinid/neg_clip@e680f8e4 src/training/main.py:263-268``
"checkpoint_dict = {"; the released file's keys carry DDP's ``module.`` prefix): ``{"epoch", "name", "state_dict":
{"module.<key>": ...}, "optimizer"}``, which ARO's code opens with
``mertyg/vision-language-models-are-bows@81fdd20d model_zoo/__init__.py:71``
"open_clip.create_model_and_transforms('ViT-B-32', pretrained=path"."""
KEPT_MODELS = ("openai/ViT-B-32", "aro/negclip", "aro/clip-ft", "aro/negclip-rerun")
"""The tables' rows the rehearsal scores: the base (the comparisons' reference, and the authors' fp16 beside fp32),
the released NegCLIP (a ``data:`` checkpoint in its release layout; the GELU variant comes with it) and the two runs
the pipeline fine-tunes (``build:`` checkpoints, the contract between the fine-tunes and the tables). BLIP and FLAVA
(transformers models) are left out: their hub snapshots are not written by this rehearsal."""
VG_RELATION_ROWS = (  # (image, box, relation, true caption, false caption)
    ("2400101.jpg", (2, 3, 20, 15), "on", "the cup is on the table", "the table is on the cup"),
    ("2400101.jpg", (0, 0, 30, 22), "behind", "the tree is behind the house", "the house is behind the tree"),
    ("2400102.jpg", (1.5, 2, 12, 9), "wearing", "the man is wearing the shirt", "the shirt is wearing the man"),
    ("2400103.jpg", (4, 1, 26, 20), "on", "the dog is on the sofa", "the sofa is on the dog"),
    ("2400104.jpg", (0, 5, 18, 14), "holding", "the girl is holding the umbrella", "the umbrella is holding the girl"),
    ("2400103.jpg", (3, 3, 10, 10), "near", "the bike is near the car", "the car is near the bike"),
)
"""VG-Relation's stand-in rows (ARO's records; a symmetric relation, "near", which the rules drop, among them)."""
VG_ATTRIBUTION_ROWS = (  # (image, box, attributes, true caption, false caption)
    ("2400101.jpg", (2, 3, 20, 15), ("white", "wooden"), "the white cup and the wooden table",
     "the wooden cup and the white table"),
    ("2400105.jpg", (0, 0, 40, 30), ("open", "red"), "the open door and the red car", "the red door and the open car"),
    ("2400102.jpg", (1, 1, 16, 12), ("white", "wooden"), "the white plate and the wooden chair",
     "the wooden plate and the white chair"),
    ("2400104.jpg", (5, 4, 30, 22), ("tall", "green"), "the tall tree and the green bush",
     "the green tree and the tall bush"),
)
"""VG-Attribution's stand-in rows (ARO's records: ``attributes`` is the pair the captions swap)."""
KARPATHY_IMAGES = 4
"""Images in each stand-in Karpathy test split."""
FLICKR30K_IMAGES = ("1000092795.jpg", "10002456.jpg", "1000268201.jpg", "1000344755.jpg")
CIFAR_TEST_LABELS = (0, 1, 2, 3, 1, 0)


def vg_record(kind: str, image: str, box: tuple, group: Any, caption: str, negative: str) -> dict:
    """One of ARO's VG-Relation (``group``: the relation) or VG-Attribution (``group``: the attribute pair)
    records."""
    if kind == "relation":
        words = caption.removeprefix("the ").split(f" is {group} the ")
        return standins.vg_record(image, box, caption, negative, relation_name=group, subj=words[0], obj=words[-1])
    return standins.vg_record(image, box, caption, negative, attributes=list(group))


def vg_records() -> dict[str, list[dict]]:
    """The rows above, the first of each repeated on shifted boxes until its group has ``PAPER_MIN_CASES`` cases, so
    that every rule keeps one group and the macro averages are numbers, not empty."""
    # deferred: loads PIL, torch, tqdm only when called
    from papers.aro.vg_rules import PAPER_MIN_CASES

    out = {}
    for kind, rows in (("relation", VG_RELATION_ROWS), ("attribution", VG_ATTRIBUTION_ROWS)):
        image, (x, y, w, h), group, caption, negative = rows[0]
        more = PAPER_MIN_CASES - sum(row[2] == group for row in rows)
        shifted = [(image, (x + k % 3, y + k // 3 % 3, w - k % 5, h - k % 4), group, caption, negative)
                   for k in range(1, more + 1)]
        out[kind] = [vg_record(kind, *row) for row in [*rows, *shifted]]
    return out


def params(params: dict[str, Any]) -> None:
    """The tables' full rows cut to ``KEPT_MODELS``."""
    models = params["aro"]["models"]
    models["full"] = [name for name in models["full"] if name in KEPT_MODELS]


def models(params: dict[str, Any]) -> list[str]:
    """Its variants (``aro/negclip-gelu``) read a listed model's file: no stand-in of their own."""
    return needing_standins([params["aro"]["full"]["finetune"]["base"], *params["aro"]["models"]["full"]])


def karpathy_records(images: Sequence[str], first: Sequence[str] = ()) -> dict[str, list[str]]:
    """BLIP's Karpathy test records: five captions per image (``first[k]``, then COCO-style ones)."""
    return {image: [*first[k:k + 1], *(captions[(k + 3 * j) % len(captions)] for j in range(5))][:5]
            for k, image in enumerate(images)}


def karpathy_coco(valid_tsv: Path, images: int = KARPATHY_IMAGES) -> dict[str, list[str]]:
    """BLIP's COCO test records for the validation TSV's first ``images`` images, each led by its real caption."""
    first: dict[str, str] = {}
    for row in read_negclip_tsv(valid_tsv):
        if len(first) == images:
            break
        first.setdefault(row.filepath, row.title)
    return karpathy_records([f"val2014/{Path(path).name}" for path in first], list(first.values()))


def prepare(data_root: Path, fetch: Callable[[str], Path]) -> list[str]:
    """``fetch``: the downloader with the mirror, for the pinned ``valid_neg_clip.tsv``."""
    # deferred: loads PIL, torch, tqdm only when called
    from papers.aro import sets_full
    from papers.aro.data import VG_ATTRIBUTION, VG_RELATION

    valid = fetch(standins.NEGCLIP_VALID)
    keys = [standins.NEGCLIP_VALID, *standins.negclip_tsv_images(data_root, valid)]
    keys += standins.negclip_train_tsv(data_root, fetch)  # the one writer SugarCrepe's rehearsal calls too

    records = vg_records()
    standins.vg_files(data_root, {sets_full.VG_FILES[VG_RELATION]: records["relation"],
                                  sets_full.VG_FILES[VG_ATTRIBUTION]: records["attribution"]})

    coco_key, _ = sets_full.KARPATHY["coco"]
    standins.karpathy_split(coco_key, data_root, karpathy_coco(valid))  # its images: valid's, written above
    flickr_key, _ = sets_full.KARPATHY["flickr30k"]
    standins.karpathy_split(flickr_key, data_root,
                            karpathy_records([f"flickr30k-images/{name}" for name in FLICKR30K_IMAGES]))
    standins.flickr30k_images(data_root, FLICKR30K_IMAGES)

    standins.cifar_binary_tarball(sets_full.CIFAR["cifar10"].key, data_root, "cifar-10", CIFAR_TEST_LABELS,
                                  [standins.CIFAR10_CLASSES[:4]])
    standins.cifar_binary_tarball(sets_full.CIFAR["cifar100"].key, data_root, "cifar-100", CIFAR_TEST_LABELS,
                                  [standins.CIFAR100_COARSE, standins.CIFAR100_FINE])
    return list(dict.fromkeys(keys))
