"""Model construction for the authors' code: the weights this workspace scored, in the form their loader reads
(``clip.load``, which ARO's and hard positives' ``model_zoo`` call, gets a TorchScript archive of them:
``as_clip_archive``, ``clip_load_from``; docs/audit.md, "What may be replaced").
"""
from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import ContextManager
from unittest import mock

from common.files.io import atomic_path
from common.oracle.authors import AuthorsCode, importable
from common.zoo import get_spec


def weights_file(name: str) -> Path:
    """The file of weights this workspace scored for zoo model ``name`` (a pretrained tag: open_clip's hub cache)."""
    # deferred: loads open_clip only when called
    import open_clip
    from open_clip.pretrained import download_pretrained

    spec = get_spec(name)
    if spec.pretrained is not None:
        return Path(download_pretrained(open_clip.get_pretrained_cfg(spec.arch, spec.pretrained)))
    path = spec.checkpoint_path()
    if path is None:
        raise ValueError(f"{name}: no weights file (backend {spec.backend})")
    return path


def state_dict(name: str) -> dict:
    """Zoo model ``name``'s weights as open_clip names them (a training dict unwrapped, DDP's ``module.`` dropped)."""
    # deferred: loads torch only when called
    import torch

    # deferred: loads PIL, torch only when called
    from common.zoo.openclip import unwrap_training_dict

    source = weights_file(name)
    if source.suffix == ".safetensors":
        # deferred: loads safetensors only when called
        from safetensors.torch import load_file

        return load_file(str(source))
    state = unwrap_training_dict(torch.load(source, map_location="cpu", weights_only=True))
    return {k.removeprefix("module."): v for k, v in state.items()}


@functools.cache
def as_clip_archive(name: str, folder: Path, clip_code: AuthorsCode) -> Path:
    """Zoo model ``name``'s weights as a TorchScript archive, the format OpenAI releases and ``clip.load(path)`` reads:
    OpenAI's ``build_model`` (the fetched ``openai/CLIP``, ``clip_code``) on the state dict, traced; once per model.
    (``clip.load``'s state-dict branch cannot run: the ``torch.jit.load`` it tries first has read the file to its end,
    ``openai/CLIP@d05afc43 clip/clip.py:129`` "model = torch.jit.load(opened_file, map_location=device if jit else",
    so the ``torch.load(opened_file, ...)`` after it meets EOF.)"""
    # deferred: loads torch only when called
    import torch

    with importable(clip_code.root):
        # deferred: loads clip only when called
        from clip.model import build_model

        model = build_model(dict(state_dict(name))).float().eval()
        size = model.visual.input_resolution
        example = (torch.zeros(1, 3, size, size), torch.zeros(1, model.context_length, dtype=torch.long))
        with torch.no_grad():
            traced = torch.jit.trace(model, example, check_trace=False)
        target = Path(folder) / f"{name.replace('/', '__')}.pt"
        target.parent.mkdir(parents=True, exist_ok=True)
        traced.save(str(target))
    return target


def clip_load_from(ctx, path: Path | None, where: str) -> ContextManager[None]:
    """``clip.load(<OpenAI name>, ...)`` -> ``clip.load(path, ...)`` for the block (None: left alone); ``where``: the
    authors' call it replaces, for the report."""
    # deferred: loads clip only when called
    import clip

    original = clip.load

    def load(name, device="cpu", jit=False, download_root=None):
        return original(str(path), device=device, jit=jit, download_root=download_root)

    return ctx.replacing(clip, "load", None if path is None else load, where,
                         "clip.load(<the row's weights as a TorchScript archive>, ...)",
                         "the row's own weights in OpenAI's release format, through the authors' loader (it rebuilds "
                         "the model with clip.model.build_model from the archive's state dict)")


def link(target: Path, at: Path) -> None:
    """A symbolic link at ``at`` to ``target`` (replacing one): inputs placed where released constants look."""
    at.parent.mkdir(parents=True, exist_ok=True)
    at.unlink(missing_ok=True)
    os.symlink(Path(target).resolve(), at)


def save(obj, target: Path) -> Path:
    """``torch.save(obj, target)`` through ``atomic_path``: weights written in the layout a released loader reads,
    whole or not at all (an interrupted write leaves no part-file for their loader; a full disk is ``DiskFull``)."""
    # deferred: loads torch only when called
    import torch

    with atomic_path(target) as tmp, open(tmp, "wb") as fh:
        torch.save(obj, fh)
    return target


def open_clip_quick_gelu(ctx, where: str, why: str, enabled: bool = True) -> ContextManager[None]:
    """``open_clip.create_model_and_transforms(...)`` with ``force_quick_gelu=True`` for the block (``enabled``): a
    row whose weights were trained with QuickGELU, loaded by a released line that builds the GELU architecture
    (its GELU reading is a row of its own, e.g. ``aro/negclip-gelu``)."""
    # deferred: loads open_clip only when called
    import open_clip

    original = open_clip.create_model_and_transforms

    def create(*args, **kwargs):
        return original(*args, **{**kwargs, "force_quick_gelu": True})

    return ctx.replacing(open_clip, "create_model_and_transforms", create if enabled else None, where,
                         "the same call with force_quick_gelu=True", why)


def open_clip_as_of_their_time(ctx, where: str, why: str) -> ContextManager:
    """``open_clip.create_model_and_transforms(model, pretrained, ...)`` building, for the block, what it built under
    open_clip <= 2.28, the releases the authors ran (``where``: their function that makes the call, for the report):
    the ``openai`` tag with QuickGELU, as OpenAI's weights were trained (today's build GELU; ``why``: the caller's
    reason, ``{version}`` in it today's open_clip), and a ``-quickgelu`` architecture with a tag today's open_clip
    lists only under the GELU name (DataComp's) as that name with ``force_quick_gelu=True``. Each case taken is
    listed through ``ctx.replaced``."""
    # deferred: loads open_clip only when called
    import open_clip

    original = open_clip.create_model_and_transforms
    why = why.format(version=open_clip.__version__)

    def create(model_name, pretrained=None, *args, **kwargs):
        if isinstance(pretrained, str) and pretrained.lower() == "openai":
            ctx.replaced(f"{where}: open_clip.create_model_and_transforms(model, 'openai', ...)",
                         "the same call with force_quick_gelu=True", why)
            kwargs["force_quick_gelu"] = True
        elif (model_name.endswith("-quickgelu") and pretrained
              and pretrained not in open_clip.list_pretrained_tags_by_model(model_name)
              and pretrained in open_clip.list_pretrained_tags_by_model(model_name.removesuffix("-quickgelu"))):
            gelu_name = model_name.removesuffix("-quickgelu")
            ctx.replaced(f"{where}: open_clip.create_model_and_transforms({model_name!r}, {pretrained!r}, ...)",
                         f"open_clip.create_model_and_transforms({gelu_name!r}, {pretrained!r}, ..., "
                         "force_quick_gelu=True)",
                         f"open_clip {open_clip.__version__} lists the tag under the GELU name only; the same "
                         "architecture and weights with QuickGELU")
            model_name, kwargs["force_quick_gelu"] = gelu_name, True
        return original(model_name, pretrained, *args, **kwargs)

    return mock.patch.object(open_clip, "create_model_and_transforms", create)
