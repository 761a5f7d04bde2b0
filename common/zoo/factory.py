"""The zoo's one entry point: ``create_model(name)`` builds a registered model with its weights, whatever its
backend, or raises ``ModelUnavailable`` naming the model and how to get its weights."""
from __future__ import annotations

from common import plugins
from common.pipeline.params import PROFILES
from common.zoo import specs
from common.zoo.hf import create_hf_model, how_to_get
from common.zoo.hub import fail_if_weights_absent, hub_offline, hub_offline_mode, offline_message, weights_origin
from common.zoo.interface import EmbeddingModel, ModelUnavailable
from common.zoo.openclip import OpenClipModel, load_state_dict, not_a_checkpoint, quiet_random_init_warning
from common.zoo.specs import REGISTRY_FILE, ModelSpec, activation_mismatch, register_local_configs

SHARED_TRAINING_STAGES = "mini/train"
"""The root ``dvc.yaml``'s stages that train the shared checkpoints (``build:`` entries whose name names no paper:
the mini family); a paper's checkpoints are trained by its own pipeline, ``dvc repro papers/<paper>``."""


def _how_to_get(spec: ModelSpec) -> str:
    if spec.backend != "open_clip":
        return how_to_get(spec)
    if spec.pretrained is not None:
        return (
            f"open_clip downloads ({spec.arch!r}, {spec.pretrained!r}) from {weights_origin(spec)}; run on a machine "
            "with internet once (weights are cached under ~/.cache/huggingface or open_clip's cache_dir), "
            "or copy that cache here"
        )
    if spec.checkpoint and spec.checkpoint.startswith("build:"):
        return f"it is trained by this workspace's pipeline: run {_training_command(spec)}"
    return f"download it with `python -m common fetch {spec.source}` (see its instructions) to {spec.checkpoint_path()}"


def _replace_remedy(spec: ModelSpec) -> str:
    """The fix for a checkpoint in place that does not load: the right file where the zoo reads it."""
    if spec.checkpoint and spec.checkpoint.startswith("build:"):
        return f"it is trained by this workspace's pipeline: delete it and run {_training_command(spec)}"
    if spec.source:
        return (f"delete it and put the release's {spec.arch} weights there: `python -m common fetch {spec.source}` "
                "(see its instructions)")
    return f"put the {spec.arch} weights of {spec.name!r} there"


def _training_command(spec: ModelSpec) -> str:
    """The ``dvc repro`` that trains a ``build:`` checkpoint: its owner paper's pipeline, or the root pipeline's
    shared training stages; with the profile, the first folder of the checkpoint's path (``build/<profile>/...``)."""
    paper = plugins.owner(spec.name)
    profile = (spec.checkpoint or "").removeprefix("build:").split("/", 1)[0]
    context = ([] if paper else ["the root dvc.yaml"]) + ([f"{profile} profile"] if profile in PROFILES else [])
    target = f"papers/{paper}" if paper else SHARED_TRAINING_STAGES
    return f"`dvc repro {target}`" + (f" ({', '.join(context)})" if context else "")


def create_model(name: str, device: str = "cpu", cache_dir: str | None = None) -> EmbeddingModel:
    """Build a registered model with its weights, or raise ``ModelUnavailable``."""
    # deferred: loads open_clip only when called
    import open_clip

    spec = specs.get_spec(name)  # through its module, so that a test's stand-in registry is seen here too
    if spec.backend in ("transformers", "xvlm"):
        return create_hf_model(spec, device, cache_dir)
    if spec.backend != "open_clip":
        raise ModelUnavailable(f"model {name!r}: backend {spec.backend!r} is not supported yet")
    register_local_configs()
    mismatch = activation_mismatch(spec)
    if mismatch:
        raise ValueError(f"{REGISTRY_FILE.name}: {mismatch}")
    if spec.pretrained is not None:
        if spec.pretrained not in open_clip.list_pretrained_tags_by_model(spec.arch):
            raise ModelUnavailable(
                f"model {name!r}: open_clip {open_clip.__version__} has no pretrained tag "
                f"{spec.pretrained!r} for {spec.arch!r}"
            )
        offline = hub_offline()
        if offline:
            fail_if_weights_absent(spec, cache_dir, offline)
        try:
            with hub_offline_mode(bool(offline)):  # offline: only the local cache is read, no retries
                model, _, transform = open_clip.create_model_and_transforms(
                    spec.arch, pretrained=spec.pretrained, device=device, cache_dir=cache_dir,
                    force_quick_gelu=spec.force_quick_gelu)
                tokenizer = open_clip.get_tokenizer(spec.arch)  # hf tokenizers are fetched from the hub too
        except Exception as exc:  # network, hub or file errors all mean: weights not obtainable here
            if offline:
                raise ModelUnavailable(offline_message(spec, offline, cache_dir, exc)) from exc
            raise ModelUnavailable(f"model {name!r}: weights could not be loaded ({exc}); {_how_to_get(spec)}") from exc
        return OpenClipModel(spec, model, transform, tokenizer, device)
    path = spec.checkpoint_path()
    assert path is not None
    why = not_a_checkpoint(path)
    if why is not None:
        raise ModelUnavailable(f"model {name!r}: checkpoint {path} {why}; {_how_to_get(spec)}")
    with quiet_random_init_warning():  # the weights are loaded (strictly) right below
        model, _, transform = open_clip.create_model_and_transforms(
            spec.arch, pretrained=None, load_weights=False, device=device, force_quick_gelu=spec.force_quick_gelu)
    load_state_dict(model, path, name, arch=spec.arch, remedy=_replace_remedy(spec))
    tokenizer = open_clip.get_tokenizer(spec.arch)
    return OpenClipModel(spec, model, transform, tokenizer, device)
