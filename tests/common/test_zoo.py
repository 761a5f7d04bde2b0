"""The model zoo (common/zoo): the registry as data, loading weights or refusing (never random weights),
fingerprints, and the padding-free text encoding shortcut.

No network and no pretrained downloads: the mini models are randomly initialized here and saved to a
temporary build root; the pretrained path is exercised offline and must fail fast with ModelUnavailable.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Iterator

import open_clip
import pytest
import torch
import yaml
from PIL import Image
from safetensors.torch import save_file

from common import plugins, zoo
from common.paths import ROOT
from common.registry.errors import RegistryError
from common.zoo import (
    MODEL_CONFIG_DIR, ModelSpec, ModelUnavailable, OpenClipModel, create_model, fingerprint_model, get_spec,
    padding_is_inert, register_local_configs, registry, specs as zoo_specs)

# SugarCrepe Table 6: the 17 (arch, pretrained) pairs of ../shared/SOURCES.md, in the paper's order.
TABLE6 = [
    ("RN50", "openai"),
    ("RN101", "openai"),
    ("ViT-B-32", "openai"),
    ("RN50x4", "openai"),
    ("RN50x16", "openai"),
    ("ViT-L-14", "openai"),
    ("RN50x64", "openai"),
    ("roberta-ViT-B-32", "laion2b_s12b_b32k"),
    ("ViT-H-14", "laion2b_s32b_b79k"),
    ("ViT-g-14", "laion2b_s12b_b42k"),
    ("ViT-bigG-14", "laion2b_s39b_b160k"),
    ("xlm-roberta-base-ViT-B-32", "laion5b_s13b_b90k"),
    ("xlm-roberta-large-ViT-H-14", "frozen_laion5b_s13b_b90k"),
    ("ViT-B-32", "datacomp_s_s13m_b4k"),
    ("ViT-B-32", "datacomp_m_s128m_b4k"),
    ("ViT-B-16", "datacomp_l_s1b_b8k"),
    ("ViT-L-14", "datacomp_xl_s13b_b90k"),
]
CAPTIONS = [
    "A red circle.",
    "A large blue square is to the left of a small orange triangle.",
    "There is a violet heart.",
    "A little white cross is above a big black star, which is to the right of a green diamond.",
]


# --------------------------------------------------------------------------------------------------
# the registry
# --------------------------------------------------------------------------------------------------
def _paper_pair(spec: ModelSpec) -> tuple[str, str | None]:
    """(arch as SOURCES.md names it, tag): the zoo adds "-quickgelu" to OpenAI's archs (see the activation tests)."""
    return spec.arch.removesuffix("-quickgelu"), spec.pretrained


def test_registry_holds_exactly_table6_pretrained_pairs():
    pretrained = [_paper_pair(s) for s in registry().values()
                  if s.pretrained is not None and s.backend == "open_clip" and s.variant_of is None]
    assert len(TABLE6) == 17 and len(set(TABLE6)) == 17
    assert sorted(pretrained) == sorted(TABLE6)
    # and params.yaml's full-profile model list is Table 6, in the paper's row order
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    full = params["sugarcrepe"]["models"]["full"]
    assert [_paper_pair(get_spec(n)) for n in full] == TABLE6


@pytest.mark.parametrize("name", [s.name for s in registry().values()
                                  if s.pretrained is not None and s.backend == "open_clip"])
def test_table6_pairs_known_to_open_clip(name: str):
    spec = get_spec(name)
    assert spec.pretrained in open_clip.list_pretrained_tags_by_model(spec.arch)
    assert spec.arch in open_clip.list_models()


# --------------------------------------------------------------------------------------------------
# activations: every checkpoint loads with the activation it was trained with
# --------------------------------------------------------------------------------------------------
def test_every_zoo_entry_loads_with_its_training_activation():
    for spec in registry().values():
        assert zoo.activation_mismatch(spec) is None, zoo.activation_mismatch(spec)
    openai = [s for s in registry().values() if s.pretrained == "openai"]
    assert len(openai) == 7 and all(s.arch.endswith("-quickgelu") for s in openai)
    assert zoo.trained_with_quick_gelu(get_spec("aro/negclip")) is True  # through finetuned_from


def test_a_gelu_architecture_for_openai_weights_is_refused(tmp_path, monkeypatch):
    """The pitfall of NegCLIP's and SugarCrepe's evaluation code: OpenAI-derived weights loaded as ``ViT-B-32``."""
    import dataclasses

    negclip = dataclasses.replace(get_spec("aro/negclip"), arch="ViT-B-32")
    assert "QuickGELU" in zoo.activation_mismatch(negclip) and "ViT-B-32-quickgelu" in zoo.activation_mismatch(negclip)
    tag = dataclasses.replace(get_spec("openai/ViT-B-32"), arch="ViT-B-32")
    assert zoo.activation_mismatch(tag) is not None
    laion = get_spec("laion/roberta-ViT-B-32")  # the tag states no activation: the config it was trained with rules
    assert zoo.trained_with_quick_gelu(laion) is None and zoo.activation_mismatch(laion) is None
    monkeypatch.setattr(zoo_specs, "get_spec", lambda name: negclip if name == "aro/negclip" else get_spec(name))
    with pytest.raises(ValueError, match="QuickGELU"):
        create_model("aro/negclip")


def test_variants_load_the_same_weights_with_the_authors_activation():
    """Issue 31: ARO's evaluator builds NegCLIP as 'ViT-B-32' (GELU); SugarCrepe's model list pairs DataComp small
    and medium with ViT-B-32-quickgelu. Each is a registry entry (data) naming the model it is a variant of and the
    authors' line; only such entries may differ from their training activation, and a table scores each right after
    the model it varies."""
    import dataclasses

    gelu, negclip = get_spec("aro/negclip-gelu"), get_spec("aro/negclip")
    assert (gelu.variant_of, gelu.checkpoint, gelu.source) == ("aro/negclip", negclip.checkpoint, negclip.source)
    assert not zoo.runs_quick_gelu(gelu) and zoo.runs_quick_gelu(negclip)
    assert "model_zoo/__init__.py:71" in gelu.variant_note
    assert zoo.activation_mismatch(gelu) is None
    assert zoo.activation_mismatch(dataclasses.replace(gelu, variant_of=None, variant_note=None)) is not None
    for size, line in (("small", 19), ("medium", 20)):
        quick, plain = get_spec(f"datacomp/{size}-ViT-B-32-quickgelu"), get_spec(f"datacomp/{size}-ViT-B-32")
        assert (quick.arch, quick.pretrained) == (plain.arch, plain.pretrained) and quick.variant_of == plain.name
        assert zoo.runs_quick_gelu(quick) and not zoo.runs_quick_gelu(plain)
        assert f"main_eval.py:{line}" in quick.variant_note
        assert zoo.arch_identity(quick) != zoo.arch_identity(plain)  # same weights, another model: cached apart
    assert zoo.with_variants(["openai/ViT-B-32", "aro/negclip", "mini/xs-2k"]) == [
        "openai/ViT-B-32", "aro/negclip", "aro/negclip-gelu", "mini/xs-2k"]
    assert zoo.with_variants(["aro/negclip", "aro/negclip-gelu"]) == ["aro/negclip", "aro/negclip-gelu"]
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    for profile in ("mini",):  # the mini lists have no variants: the mini profile scores what it did
        assert zoo.with_variants(params["aro"]["models"][profile]) == params["aro"]["models"][profile]
        assert zoo.with_variants(params["sugarcrepe"]["models"][profile]) == params["sugarcrepe"]["models"][profile]


def test_force_quick_gelu_builds_quickgelu_and_fingerprints_apart(tmp_path, monkeypatch):
    """A tiny GELU config loaded through the zoo with ``force_quick_gelu``: QuickGELU layers, and another fingerprint
    than the same weights under GELU (the engine's cache key)."""
    import dataclasses

    from open_clip.transformer import QuickGELU
    from safetensors.torch import save_file

    register_local_configs()
    assert not zoo.uses_quick_gelu("mini-vit-xs")
    with zoo.quiet_random_init_warning():
        net = open_clip.create_model("mini-vit-xs", pretrained=None)
    save_file({k: v.contiguous() for k, v in net.state_dict().items()}, str(tmp_path / "w.safetensors"))
    base = ModelSpec(name="mini/test-gelu", arch="mini-vit-xs", family="mini", label="t",
                     checkpoint=f"data:{tmp_path / 'w.safetensors'}")
    quick = dataclasses.replace(base, name="mini/test-quick", force_quick_gelu=True, variant_of=base.name,
                                variant_note="test")
    monkeypatch.setattr(zoo_specs, "get_spec", {base.name: base, quick.name: quick}.__getitem__)
    monkeypatch.setattr(zoo_specs.ModelSpec, "checkpoint_path", lambda self: Path(self.checkpoint[5:]))
    plain_model, quick_model = create_model(base.name), create_model(quick.name)
    kinds = lambda m: {type(x) for x in m.model.modules() if isinstance(x, (QuickGELU, torch.nn.GELU))}  # noqa: E731
    assert kinds(plain_model) == {torch.nn.GELU} and kinds(quick_model) == {QuickGELU}
    assert plain_model.fingerprint != quick_model.fingerprint


def test_quickgelu_configs_build_quickgelu_models():
    """What the registry check relies on: open_clip's "-quickgelu" config builds QuickGELU layers, the plain one GELU."""
    from open_clip.transformer import QuickGELU

    def activations(arch: str) -> set[type]:
        with zoo.quiet_random_init_warning():
            model = open_clip.create_model(arch, pretrained=None)
        return {type(m) for m in model.modules() if isinstance(m, (QuickGELU, torch.nn.GELU))}

    assert zoo.uses_quick_gelu("ViT-B-32-quickgelu") and activations("ViT-B-32-quickgelu") == {QuickGELU}
    assert not zoo.uses_quick_gelu("ViT-B-32") and activations("ViT-B-32") == {torch.nn.GELU}


def test_every_registry_entry_is_well_formed():
    specs = registry()
    register_local_configs()
    known = set(open_clip.list_models())
    for name, spec in specs.items():
        assert spec.name == name
        assert spec.backend in ("open_clip", "transformers", "xvlm")  # the last two: common/zoo/hf.py
        assert (spec.pretrained is None) != (spec.checkpoint is None)
        assert spec.arch in known if spec.backend == "open_clip" else spec.arch in ("blip", "flava", "xvlm"), spec
        assert spec.family and spec.label


def test_negclip_entry():
    spec = get_spec("aro/negclip")
    assert spec.arch == "ViT-B-32-quickgelu" and spec.pretrained is None and spec.finetuned_from == "openai/ViT-B-32"
    assert spec.checkpoint is not None and spec.checkpoint.startswith("data:")
    assert spec.source == "aro/negclip/negclip.pth"
    from common.registry.sources import get_source

    assert get_source(spec.source).key == spec.source


def test_mini_family_has_configs_and_matching_recipes():
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    family = [s for s in registry().values() if s.family == "mini"]
    mini = [s for s in family if s.finetuned_from is None]  # trained here from scratch, one recipe each
    assert {s.name for s in mini} == {"mini/xs-2k", "mini/xs-8k", "mini/xs-32k", "mini/s-32k"}
    for spec in family:  # the rest (a paper's fine-tuning runs) start from one of them, with its architecture
        if spec.finetuned_from is not None:
            base = get_spec(spec.finetuned_from)
            assert base in mini and spec.arch == base.arch, spec.name
            assert spec.checkpoint.startswith("build:mini/"), spec.name
    assert set(params["sugarcrepe"]["models"]["mini"]) == {s.name for s in mini}
    for spec in mini:
        short = spec.name.removeprefix("mini/")
        assert (MODEL_CONFIG_DIR / f"{spec.arch}.json").is_file(), spec.arch
        recipe = params["train"][short]
        assert recipe["arch"] == spec.arch, (spec.name, recipe)
        assert spec.checkpoint == f"build:mini/models/{short}.safetensors"
        assert spec.pretrained is None
    assert set(params["train"]) == {s.name.removeprefix("mini/") for s in mini}


def test_get_spec_unknown_name():
    with pytest.raises(KeyError, match="no/such-model"):
        get_spec("no/such-model")


def _toml(tmp_path: Path, body: str, name: str = "models.toml") -> Path:
    path = tmp_path / name
    path.write_text(body)
    return path


ENTRY = '[[model]]\nname = "{name}"\narch = "ViT-B-32"\nfamily = "f"\nlabel = "l"\n{extra}\n'


def test_registry_validation_errors(tmp_path: Path):
    ok = _toml(tmp_path, ENTRY.format(name="a", extra='pretrained = "openai"')
               + ENTRY.format(name="b", extra='checkpoint = "build:x.safetensors"'), "ok.toml")
    specs = registry(ok)
    assert list(specs) == ["a", "b"] and specs["a"].pretrained == "openai"

    dup = _toml(tmp_path, ENTRY.format(name="a", extra='pretrained = "openai"') * 2, "dup.toml")
    with pytest.raises(ValueError, match="duplicate model name 'a'") as exc:
        registry(dup)
    assert str(dup) in str(exc.value)

    both = _toml(tmp_path, ENTRY.format(name="c", extra='pretrained = "openai"\ncheckpoint = "build:x"'), "both.toml")
    with pytest.raises(ValueError, match="exactly one of pretrained / checkpoint") as exc:
        registry(both)
    assert "'c'" in str(exc.value) and str(both) in str(exc.value)

    neither = _toml(tmp_path, ENTRY.format(name="d", extra=""), "neither.toml")
    with pytest.raises(ValueError, match="exactly one of pretrained / checkpoint") as exc:
        registry(neither)
    assert "'d'" in str(exc.value)

    unknown = _toml(tmp_path, ENTRY.format(name="e", extra='pretrained = "openai"\ncolour = "red"'), "unknown.toml")
    with pytest.raises(ValueError, match="'e'"):
        registry(unknown)

    unexplained = _toml(tmp_path, ENTRY.format(name="f", extra='pretrained = "openai"\nvariant_of = "a"'), "var.toml")
    with pytest.raises(ValueError, match="'f': variant_of and variant_note go together") as exc:
        registry(unexplained)
    assert str(unexplained) in str(exc.value)


@pytest.fixture
def two_papers(tmp_path: Path, monkeypatch) -> Iterator[tuple[Path, Path, Path]]:
    """A workspace of two papers, alpha and beta (each with a models.toml), and a shared models.toml."""
    papers = tmp_path / "papers"
    for paper in ("alpha", "beta"):
        (papers / paper).mkdir(parents=True)
        (papers / paper / "__init__.py").write_text("")
    shared = tmp_path / "shared" / "models.toml"
    shared.parent.mkdir()
    monkeypatch.setattr(plugins, "PAPERS_DIR", papers)
    monkeypatch.setattr(zoo_specs, "REGISTRY_FILE", shared)
    plugins.paper_names.cache_clear()
    yield shared, papers / "alpha" / "models.toml", papers / "beta" / "models.toml"
    plugins.paper_names.cache_clear()
    zoo_specs.read_models_file.cache_clear()  # its entries for these files were read under the stand-in layout


def _entries(*names: str, label: str = "l") -> str:
    return "".join(ENTRY.format(name=n, extra='pretrained = "openai"').replace('"l"', f'"{label}"') for n in names)


def test_a_name_is_looked_up_in_the_shared_file_first(two_papers):
    shared, alpha, beta = two_papers
    shared.write_text(_entries("alpha/used-by-beta", "common-model", label="shared"))
    alpha.write_text(_entries("alpha/own"))
    beta.write_text(_entries("beta/own"))
    assert get_spec("alpha/used-by-beta").label == "shared" and get_spec("common-model").label == "shared"
    assert get_spec("alpha/own").name == "alpha/own"
    alpha.write_text("not toml [")  # the owner's file is read only when the shared file lacks the name
    zoo_specs.read_models_file.cache_clear()
    assert get_spec("alpha/used-by-beta").label == "shared"
    with pytest.raises(RegistryError, match=r"alpha/models\.toml: not valid TOML: .*\(at line 1, column 5\)"):
        get_spec("alpha/own")


def test_a_name_in_both_its_owners_file_and_the_shared_one_is_refused(two_papers):
    shared, alpha, beta = two_papers
    shared.write_text(_entries("alpha/twice", label="shared"))
    alpha.write_text(_entries("alpha/twice", label="own"))
    beta.write_text(_entries("beta/own"))
    with pytest.raises(ValueError, match="'alpha/twice' is also in") as exc:
        registry()
    assert str(shared) in str(exc.value) and str(alpha) in str(exc.value)


def test_a_papers_name_in_another_papers_file_is_refused(two_papers):
    shared, alpha, beta = two_papers
    shared.write_text(_entries("common-model"))
    alpha.write_text(_entries("alpha/own"))
    beta.write_text(_entries("beta/own", "alpha/stray"))
    with pytest.raises(ValueError, match="'alpha/stray' belongs in") as exc:
        registry()
    assert all(str(f) in str(exc.value) for f in (beta, alpha, shared))
    with pytest.raises(ValueError, match="belongs in"):  # a lookup that reads that file says so too
        get_spec("beta/own")
    beta.write_text(_entries("beta/own", "common-stray"))  # a name of no paper is the shared file's
    zoo_specs.read_models_file.cache_clear()
    with pytest.raises(ValueError, match="'common-stray' belongs in .*names no paper"):
        get_spec("beta/own")


def test_entries_several_papers_use_are_in_the_shared_file():
    """ARO's NegCLIPs are scored by other papers' stages, so they are in the shared file, under ARO's names."""
    shared = registry(zoo_specs.REGISTRY_FILE)
    assert {"aro/negclip", "aro/mini-negclip"} <= set(shared)
    assert "aro/mini-clip-ft" not in shared and get_spec("aro/mini-clip-ft").name == "aro/mini-clip-ft"
    assert registry()  # every file valid together: no name in two files, none in another paper's file


def test_checkpoint_reference_schemes(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("VLC_BUILD", str(tmp_path / "b"))
    monkeypatch.setenv("VLC_DATA", str(tmp_path / "d"))
    base = dict(name="x", arch="ViT-B-32", family="f", label="l")
    assert ModelSpec(**base, checkpoint="build:m/x.safetensors").checkpoint_path() == tmp_path / "b" / "m" / "x.safetensors"
    assert ModelSpec(**base, checkpoint="data:w/x.pth").checkpoint_path() == tmp_path / "d" / "w" / "x.pth"
    assert ModelSpec(**base, pretrained="openai").checkpoint_path() is None
    for bad in ("http://x/y.pth", "build:", "/abs/x.pth"):
        with pytest.raises(ValueError, match="build:<path> or data:<path>"):
            ModelSpec(**base, checkpoint=bad).checkpoint_path()


# --------------------------------------------------------------------------------------------------
# ModelUnavailable, never random weights
# --------------------------------------------------------------------------------------------------
def random_mini(arch: str = "mini-vit-xs", seed: int = 0):
    register_local_configs()
    torch.manual_seed(seed)
    model, _, transform = open_clip.create_model_and_transforms(arch, pretrained=None)
    return model.eval(), transform


def save_checkpoint(model: torch.nn.Module, build_root: Path, short: str = "xs-2k") -> Path:
    path = build_root / "mini" / "models" / f"{short}.safetensors"
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(path))
    return path


def test_missing_mini_checkpoint(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("VLC_BUILD", str(tmp_path))
    with pytest.raises(ModelUnavailable) as exc:
        create_model("mini/xs-2k")
    msg = str(exc.value)
    assert "mini/xs-2k" in msg and "`dvc repro mini/train` (the root dvc.yaml, mini profile)" in msg
    assert str(tmp_path / "mini" / "models" / "xs-2k.safetensors") in msg


@pytest.mark.parametrize("name, command", [
    ("mini/xs-32k", "`dvc repro mini/train` (the root dvc.yaml, mini profile)"),  # the root pipeline trains the family
    ("aro/mini-negclip", "`dvc repro papers/aro` (mini profile)"),  # a paper's fine-tune, even in the shared file
    ("aro/mini-clip-ft", "`dvc repro papers/aro` (mini profile)"),
    ("aro/clip-ft", "`dvc repro papers/aro` (full profile)"),
    ("bivlc/full-clip-coco", "`dvc repro papers/bivlc` (full profile)"),
    ("conclip/full-conclip", "`dvc repro papers/conclip` (full profile)"),
])
def test_a_missing_trained_checkpoint_names_the_pipeline_that_trains_it(name, command, tmp_path, monkeypatch):
    """Each ``build:`` checkpoint is trained by its owner paper's pipeline, or by the root one for a shared name."""
    monkeypatch.setenv("VLC_BUILD", str(tmp_path))
    assert get_spec(name).checkpoint.startswith("build:")
    with pytest.raises(ModelUnavailable) as exc:
        create_model(name)
    assert f"run {command}" in str(exc.value) and "papers/sugarcrepe" not in str(exc.value)
    assert plugins.owner(name) is None or f"papers/{plugins.owner(name)}" in command


def test_missing_manual_checkpoint_says_how_to_fetch(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("VLC_DATA", str(tmp_path))
    with pytest.raises(ModelUnavailable) as exc:
        create_model("aro/negclip")
    msg = str(exc.value)
    assert "aro/negclip" in msg and "python -m common fetch aro/negclip/negclip.pth" in msg


@pytest.mark.parametrize("content", [b"", b"not a safetensors file at all", b"\x08\x00\x00\x00\x00\x00\x00\x00{garbage"])
def test_corrupt_checkpoint(tmp_path: Path, monkeypatch, content: bytes):
    monkeypatch.setenv("VLC_BUILD", str(tmp_path))
    path = tmp_path / "mini" / "models" / "xs-2k.safetensors"
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    with pytest.raises(ModelUnavailable) as exc:
        create_model("mini/xs-2k")
    assert "mini/xs-2k" in str(exc.value) and str(path) in str(exc.value)


def test_incomplete_or_mismatched_checkpoint(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("VLC_BUILD", str(tmp_path))
    model, _ = random_mini()
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    path = tmp_path / "mini" / "models" / "xs-2k.safetensors"
    path.parent.mkdir(parents=True)
    partial = dict(state)
    partial.pop("text_projection")
    save_file(partial, str(path))
    with pytest.raises(ModelUnavailable, match="mini/xs-2k"):
        create_model("mini/xs-2k")
    # the larger architecture's weights do not fit the xs model
    other, _ = random_mini("mini-vit-s")
    save_checkpoint(other, tmp_path, "xs-2k")
    with pytest.raises(ModelUnavailable, match="mini/xs-2k"):
        create_model("mini/xs-2k")


def test_pretrained_without_network_is_unavailable(tmp_path: Path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # read at import time
    started = time.perf_counter()
    with pytest.raises(ModelUnavailable) as exc:
        create_model("openai/RN50", cache_dir=str(tmp_path / "cache"))
    elapsed = time.perf_counter() - started
    msg = str(exc.value)
    assert "openai/RN50" in msg
    cfg = open_clip.get_pretrained_cfg("RN50", "openai")
    assert (cfg.get("hf_hub") or cfg.get("url")) in msg, msg
    assert elapsed < 20, f"offline failure took {elapsed:.1f}s"


def test_unknown_pretrained_tag_is_unavailable(tmp_path: Path, monkeypatch):
    spec = ModelSpec(name="t/bad", arch="RN50", family="f", label="l", pretrained="no_such_tag")
    monkeypatch.setattr(zoo_specs, "get_spec", lambda name: spec)
    with pytest.raises(ModelUnavailable, match="no pretrained tag 'no_such_tag'"):
        create_model("t/bad")


# --------------------------------------------------------------------------------------------------
# loading a saved state dict; fingerprints
# --------------------------------------------------------------------------------------------------
def test_saved_state_dict_loads_exactly_and_fingerprints(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("VLC_BUILD", str(tmp_path))
    model, transform = random_mini(seed=1)
    path = save_checkpoint(model, tmp_path)

    loaded = create_model("mini/xs-2k")
    assert isinstance(loaded, OpenClipModel) and loaded.name == "mini/xs-2k"
    saved, got = model.state_dict(), loaded.model.state_dict()
    assert set(saved) == set(got)
    for key in saved:
        assert torch.equal(saved[key], got[key]), key

    # not random: a second fresh init would differ
    fresh, _ = random_mini(seed=2)
    assert not torch.equal(fresh.state_dict()["text_projection"], got["text_projection"])

    again = create_model("mini/xs-2k")
    assert again.fingerprint == loaded.fingerprint
    assert len(loaded.fingerprint) == 32

    # one weight changed -> different fingerprint
    state = {k: v.clone().contiguous() for k, v in saved.items()}
    state["text_projection"][0, 0] += 1e-3
    save_file(state, str(path))
    changed = create_model("mini/xs-2k")
    assert changed.fingerprint != loaded.fingerprint

    # same weights, different transform (or tokenizer context) -> different fingerprint
    tok = open_clip.get_tokenizer("mini-vit-xs")
    base = fingerprint_model("mini-vit-xs", loaded.model, loaded.transform, tok)
    assert base == loaded.fingerprint
    other_transform = open_clip.image_transform(64, is_train=False)
    assert fingerprint_model("mini-vit-xs", loaded.model, other_transform, tok) != base
    assert fingerprint_model("mini-vit-s", loaded.model, loaded.transform, tok) != base

    # the loaded model embeds: normalized image features
    pixels = torch.stack([loaded.transform(Image.new("RGB", (48, 48), (200, 30, 30)))])
    feats = loaded.encode_images(pixels)
    assert feats.shape == (1, 64)
    assert torch.allclose(feats.norm(dim=-1), torch.ones(1), atol=1e-5)


@pytest.mark.parametrize("layout", ["plain", "open_clip", "openai_clip_finetune", "torch_recipe"])
def test_torch_checkpoint_layouts_load_the_same_weights(tmp_path: Path, layout: str):
    """A .pt file is read as a bare state dict, open_clip's {"state_dict"} (with DDP's "module." prefixes) or the
    OpenAI-clip fine-tuning dict {"model", "optimizer", "epoch"} that CoN-CLIP releases or PyTorch's recipe
    {"epoch", "model_state_dict", "optimizer_state_dict", "loss"} that BiVLC releases; each loads exactly."""
    model, _ = random_mini(seed=6)
    state = {k: v.clone().contiguous() for k, v in model.state_dict().items()}
    saved = {"plain": state,
             "open_clip": {"epoch": 3, "name": "run", "state_dict": {f"module.{k}": v for k, v in state.items()}},
             "openai_clip_finetune": {"epoch": 4, "model": state,
                                      "optimizer": {"state": {}, "param_groups": [{"lr": 1e-6, "params": [0]}]}},
             "torch_recipe": {"epoch": 9, "model_state_dict": state, "loss": torch.tensor(0.25),
                              "optimizer_state_dict": {"state": {0: {"step": torch.tensor(3.0)}},
                                                       "param_groups": [{"lr": 1e-6, "params": [0]}]}}}
    path = tmp_path / f"{layout}.pt"
    torch.save(saved[layout], path)
    target, _ = random_mini(seed=7)
    zoo.load_state_dict(target, path, "t/layout")
    for key, value in target.state_dict().items():
        assert torch.equal(value, state[key]), key


def test_torch_checkpoint_without_weights_is_unavailable(tmp_path: Path):
    path = tmp_path / "optimizer_only.pt"
    torch.save({"epoch": 1, "optimizer": {"state": {}, "param_groups": []}}, path)
    model, _ = random_mini(seed=8)
    with pytest.raises(ModelUnavailable, match=r"optimizer_only.pt could not be loaded: .*none of \['state_dict', 'model', 'model_state_dict'\]"):
        zoo.load_state_dict(model, path, "t/bad")


@pytest.mark.parametrize("other", ["mini-vit-s", "RN50-shaped"])
def test_a_checkpoint_of_another_architecture_is_one_line_naming_the_file_and_the_fix(tmp_path, monkeypatch, other):
    """Weights saved from another architecture (mini-vit-s: more layers, wider; or a file holding an RN50's visual
    keys) where a data: entry's arch is mini-vit-xs: the zoo says so on one line, with the file, what differs (one
    example each) and the fix, not torch's report of every key (thousands of names, over several lines)."""
    import dataclasses

    if other == "mini-vit-s":
        net, _ = random_mini("mini-vit-s", seed=1)
        state = net.state_dict()
    else:  # the mini tower's keys, its visual transformer swapped for ResNet layers (RN50's names)
        net, _ = random_mini(seed=1)
        state = {k: v for k, v in net.state_dict().items() if not k.startswith("visual.")}
        state.update({f"visual.layer{i}.0.conv1.weight": torch.zeros(64, 64, 1, 1) for i in range(1, 5)})
    path = tmp_path / "weights" / "other.pt"
    path.parent.mkdir()
    torch.save({"epoch": 1, "state_dict": {f"module.{k}": v.contiguous() for k, v in state.items()}}, path)
    spec = dataclasses.replace(get_spec("mini/xs-2k"), name="t/released", checkpoint=f"data:{path}",
                               source="t/released.pt")
    monkeypatch.setattr(zoo_specs, "get_spec", {spec.name: spec}.__getitem__)
    monkeypatch.setattr(zoo_specs.ModelSpec, "checkpoint_path", lambda self: Path(self.checkpoint[5:]))
    with pytest.raises(ModelUnavailable) as info:
        create_model(spec.name)
    message = str(info.value)
    assert "\n" not in message and len(message) < 800, message
    assert f"checkpoint {path} holds no mini-vit-xs weights, it was saved from another architecture" in message
    assert "python -m common fetch t/released.pt" in message and "delete it" in message
    if other == "mini-vit-s":
        assert "of another shape, e.g." in message and "unknown to the model, e.g. 'visual.transformer" in message
    else:
        assert "tensors missing, e.g. 'visual." in message and "'visual.layer1.0.conv1.weight'" in message


def test_zoo_check_reports_an_unloadable_model_and_refuses_the_manifest_on_one_error_line(tmp_path, monkeypatch,
                                                                                          capsys):
    """``python -m common zoo check NAME --manifest FILE`` (SugarCrepe's full-zoo stage): the model's one line, then
    one ``error:`` line naming the manifest not written and the models to blame; no manifest."""
    import dataclasses

    from common.cli import main

    path = tmp_path / "missing.pt"
    spec = dataclasses.replace(get_spec("mini/xs-2k"), name="t/absent", checkpoint=f"data:{path}", source="t/a.pt")
    monkeypatch.setattr(zoo_specs, "get_spec", {spec.name: spec}.__getitem__)
    monkeypatch.setattr(zoo_specs.ModelSpec, "checkpoint_path", lambda self: Path(self.checkpoint[5:]))
    manifest = tmp_path / "manifest.json"
    assert main(["zoo", "check", spec.name, "--manifest", str(manifest)]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"t/absent: UNAVAILABLE: model 't/absent': checkpoint {path} "
                                                   "not found"), lines
    assert lines[1] == f"error: not writing {manifest}: 1 of 1 models are unavailable (t/absent; why and how to " \
                       "get each above)"
    assert not manifest.exists()


# --------------------------------------------------------------------------------------------------
# text encoding shortcut
# --------------------------------------------------------------------------------------------------
def test_encode_tokens_shortcut_matches_full_encode_text():
    model, transform = random_mini(seed=3)
    tokenizer = open_clip.get_tokenizer("mini-vit-xs")
    wrapped = OpenClipModel(get_spec("mini/xs-2k"), model, transform, tokenizer, "cpu")
    assert wrapped.truncates_padding is True
    tokens = wrapped.tokenize(CAPTIONS)
    lengths = (tokens != 0).sum(dim=1)
    assert len(set(lengths.tolist())) == len(CAPTIONS), "captions should have different lengths"
    assert int(lengths.max()) < tokens.shape[1], "there must be padding to drop"
    with torch.no_grad():
        full = model.encode_text(tokens, normalize=True)
    short = wrapped.encode_tokens(tokens)
    assert short.shape == full.shape == (len(CAPTIONS), 64)
    assert torch.allclose(short, full, atol=1e-5), (short - full).abs().max()
    # each caption alone (so its own padding is dropped) gives the same embedding as in the batch
    for k, caption in enumerate(CAPTIONS):
        alone = wrapped.encode_texts([caption])
        assert torch.allclose(alone[0], full[k], atol=1e-5)
    # the comparison is sensitive: a differently initialized model gives different embeddings
    other, _ = random_mini(seed=4)
    with torch.no_grad():
        assert not torch.allclose(other.encode_text(tokens, normalize=True), full, atol=1e-3)


def testpadding_is_inert_only_for_causal_eos_pooled_towers():
    model, transform = random_mini(seed=5)
    assert padding_is_inert(model)

    no_mask, _ = random_mini(seed=5)
    no_mask.attn_mask = None
    assert not padding_is_inert(no_mask)

    last, _ = random_mini(seed=5)
    last.text_pool_type = "last"
    assert not padding_is_inert(last)

    full_mask, _ = random_mini(seed=5)
    full_mask.attn_mask = torch.zeros_like(full_mask.attn_mask)  # bidirectional attention
    assert not padding_is_inert(full_mask)

    # the wrapper falls back to the full encoder for such a model, and still matches encode_text
    tokenizer = open_clip.get_tokenizer("mini-vit-xs")
    wrapped = OpenClipModel(get_spec("mini/xs-2k"), last, transform, tokenizer, "cpu")
    assert wrapped.truncates_padding is False
    tokens = wrapped.tokenize(CAPTIONS)
    with torch.no_grad():
        expected = last.encode_text(tokens, normalize=True)
    assert torch.allclose(wrapped.encode_tokens(tokens), expected, atol=1e-6)

    # a module without a text tower is never treated as inert
    assert not padding_is_inert(torch.nn.Linear(2, 2))


def test_each_model_loads_rows_one_at_a_time_and_says_why_one_is_missing(tmp_path, monkeypatch):
    """A table's rows load in order, lazily; a missing checkpoint raises naming the table's row and the download
    entry's note, or with skip_unavailable is recorded and passed over."""
    from common.zoo.available import each_model

    monkeypatch.setenv("VLC_DATA", str(tmp_path / "data"))  # aro/negclip's manual checkpoint is not there
    loaded = []

    def create(name, device="cpu"):
        if name == "aro/negclip":
            return create_model(name, device=device)  # the zoo's own failure
        loaded.append(name)
        return f"model:{name}"

    rows = {"clip": "mini/xs-2k", "negclip": "aro/negclip", "small": "mini/xs-8k"}
    with pytest.raises(ModelUnavailable, match=r"Table 9 row 'negclip': model 'aro/negclip': checkpoint .* not "
                                               r"found.*\(open_clip checkpoint: ") as exc:
        list(each_model(rows, {}, create=create, what="Table 9 row"))
    assert loaded == ["mini/xs-2k"] and "negclip.pth" in str(exc.value)
    skipped: dict[str, str] = {}
    walk = each_model(rows, skipped, create=create, skip_unavailable=True)
    assert next(walk) == ("clip", "mini/xs-2k", "model:mini/xs-2k") and loaded == ["mini/xs-2k"] * 2  # lazy
    assert list(walk) == [("small", "mini/xs-8k", "model:mini/xs-8k")]
    assert list(skipped) == ["negclip"] and "not found" in skipped["negclip"]
