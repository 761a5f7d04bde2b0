"""The card on real benchmarks (issue 48): ``card --profile full --benchmark sugarcrepe`` end to end through the
command on a stand-in of the prepared SugarCrepe set and a stand-in of a real architecture (open_clip's ViT-B-32,
shrunk as the rehearsal shrinks it, random weights); the published rows beside the card; the environment it records;
the mini-world guard; a named benchmark that is not here; ``card collect`` on several cards and on damaged ones."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from common.cli import main

REAL = "ViT-B-32-quickgelu"
"""The architecture of OpenAI's ViT-B/32 (Table 6's first row), shrunk: a real model's name, not a mini one."""
MINI = "mini-vit-xs"


@pytest.fixture(scope="module")
def standins(tmp_path_factory):
    """A build root holding the full and mini profiles' prepared SugarCrepe (both written by the mini builder, in the
    format the full preparer writes), the shrunk architectures, and two random checkpoints: a real architecture's
    and a mini one's."""
    from common.card.blind import MINI_LM_IMAGES
    from common.training.checkpoint import portable_state, save_weights
    from common.zoo import random_model
    from papers.sugarcrepe.sets_mini import MiniSetConfig, build_mini_set
    from tests.rehearsal.archs import arch_overrides, write_shrunk
    from tests.rehearsal.models import _save, random_openclip

    root = tmp_path_factory.mktemp("card_benchmarks")
    for profile in ("full", "mini"):
        build_mini_set(MiniSetConfig(examples_per_category=3, seed=0), root / "build" / profile / "sugarcrepe",
                       progress=False)
    train = root / "build" / "mini" / "world" / "train"  # the mini blind scorer's corpus
    train.mkdir(parents=True)
    (train / "captions.json").write_text(json.dumps([["a red circle above a blue square", "a small red circle"]]
                                                    * MINI_LM_IMAGES))
    archs = root / "archs"
    write_shrunk(archs)
    real = root / "real-standin.pt"
    with arch_overrides(archs):
        _save(random_openclip(REAL, seed=3).state_dict(), real, "state_dict")
    mini = root / "mini-model.safetensors"
    save_weights(mini, portable_state(random_model(MINI, seed=3).model))
    return {"build": root / "build", "archs": archs, "real": f"{REAL}:{real}", "mini": f"{MINI}:{mini}"}


def _card(standins, argv, out: Path):
    """``python -m common card ARGV --out OUT`` in-process, the shrunk architectures active; (exit code, card)."""
    from common.card.models import resolve
    from tests.rehearsal.archs import arch_overrides

    with pytest.MonkeyPatch.context() as mp, arch_overrides(standins["archs"]):
        mp.setenv("VLC_BUILD", str(standins["build"]))
        mp.setenv("VLC_CPU_PROFILE", "off")
        code = main(["card", *argv, "--out", str(out)])
        spec = argv[argv.index("--model") + 1]
        path = out / f"{resolve(spec).file_stem}.json"
    return code, (json.loads(path.read_text()) if path.is_file() else None), path


@pytest.fixture(scope="module")
def full_card(standins, tmp_path_factory):
    out = tmp_path_factory.mktemp("full_cards")
    code, card, path = _card(standins, ["--profile", "full", "--benchmark", "sugarcrepe", "--model",
                                        standins["real"], "--device", "cpu"], out)
    assert code == 0
    return card, path


def test_profile_full_cards_sugarcrepe_with_the_published_rows_and_the_environment(full_card):
    card, path = full_card
    assert card["profile"] == "full" and card["warnings"] == []  # params.yaml says mini: --profile overrides it
    assert {n["key"] for n in card["numbers"]} == {f"sugarcrepe/{c}" for c in (
        "replace_obj", "replace_att", "replace_rel", "swap_obj", "swap_att", "add_obj", "add_att", "average")}
    published = card["published"]
    assert published["comparability"].startswith("like-for-like")
    rows = {r["row"]: r for r in published["rows"]}
    clip = rows["OpenAI | ViT-B-32"]
    assert clip["source"] == "SugarCrepe Table 6" and len(clip["values"]) == 8
    assert "OpenAI | ViT-B-32-negclip" in rows and all(r["table"] == "Table 6" for r in rows.values())
    provenance = card["provenance"]
    assert provenance["evaluation_seconds"] > 0 and provenance["commit"]
    versions = provenance["environment"]["versions"]
    assert set(versions) == {"python", "torch", "open_clip_torch", "transformers", "numpy"}
    assert provenance["environment"]["hardware"]["cpu"] and provenance["environment"]["hardware"]["device"] == "cpu"
    md = path.with_suffix(".md").read_text()
    assert "## Beside the published numbers\n\nLike-for-like: " in md and "| OpenAI \\| ViT-B-32 (published) |" in md
    assert "Computed: evaluated in" in md and "torch " in md and "Warning" not in md


def test_a_real_model_on_the_mini_world_is_warned_about_and_a_mini_one_is_not(standins, tmp_path, capsys):
    code, card, path = _card(standins, ["--profile", "mini", "--benchmark", "sugarcrepe", "--model",
                                        standins["real"]], tmp_path / "real")
    assert code == 0
    err = capsys.readouterr().err
    assert "warning: " in err and "not comparable with any published number; use --profile full" in err
    assert card["warnings"] and "rendered scenes" in card["warnings"][0]
    assert card["published"]["comparability"].startswith("not comparable")
    md = path.with_suffix(".md").read_text()
    assert "Mini profile: a real model on the rendered mini world, never the papers' numbers." in md
    assert md.splitlines()[2].startswith("**Warning: ") and "## Beside the published numbers\n\nNot comparable: " in md
    code, card, _ = _card(standins, ["--profile", "mini", "--benchmark", "sugarcrepe", "--model", standins["mini"]],
                          tmp_path / "mini")
    assert code == 0 and card["warnings"] == [] and "warning: " not in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--profile", "full", "--benchmark", "bivlc"], "bivlc is not here (missing: "),
    (["--profile", "full", "--benchmark", "hard_positives"], "dvc repro papers/hard_positives/dvc.yaml:full-data"),
    (["--profile", "full", "--benchmark", "sugarcrep"], "unknown benchmark 'sugarcrep'; did you mean 'sugarcrepe'?"),
])
def test_a_named_benchmark_that_is_not_here_is_one_line_with_its_command(standins, tmp_path, capsys, argv, message):
    code, card, _ = _card(standins, [*argv, "--model", standins["mini"]], tmp_path / "out")
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and card is None
    assert err[-1].startswith("error: ") and message in err[-1]
    if "is not here" in message:
        assert "docs/benchmarks.md" in err[-1]


def test_collect_builds_one_leaderboard_from_several_folders(standins, full_card, tmp_path, capsys):
    import shutil

    _, full_path = full_card
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    shutil.copy(full_path, first)
    (first / "comparison.json").write_text("[]")  # the card command's, not a card: skipped
    assert _card(standins, ["--profile", "mini", "--benchmark", "sugarcrepe", "--model", standins["mini"]],
                 second)[0] == 0
    stem = tmp_path / "board" / "leaderboard"
    stem.parent.mkdir()
    capsys.readouterr()
    assert main(["card", "collect", str(first), str(second), "--out", str(stem)]) == 0
    rows = list(csv.DictReader(open(stem.with_suffix(".csv"))))
    assert [(r["model"], r["profile"]) for r in rows] == [(standins["real"], "full"), (standins["mini"], "mini")]
    card = json.loads(full_path.read_text())
    assert float(rows[0]["sugarcrepe/average"]) == pytest.approx(
        next(n["value"] for n in card["numbers"] if n["key"] == "sugarcrepe/average"))
    assert rows[0]["evaluation_seconds"] and rows[0]["hardware"]
    md = stem.with_suffix(".md").read_text()
    assert "## full profile" in md and "## mini profile" in md and md.index("## full") < md.index("## mini")
    assert "| model | SugarCrepe: replace_obj |" in md and md == capsys.readouterr().out.rstrip("\n") + "\n"


@pytest.mark.parametrize("content, message", [
    ("{", "not a readable card (JSONDecodeError"),
    ('["not", "a", "card"]', "not a card (a card's JSON has model, profile and numbers)"),
    ('{"model": "m", "profile": "mini", "numbers": [{"key": "x"}]}', "damaged card: every number needs"),
])
def test_collect_names_a_damaged_card_in_one_line(full_card, tmp_path, capsys, content, message):
    import shutil

    folder = tmp_path / "cards"
    folder.mkdir()
    shutil.copy(full_card[1], folder)
    (folder / "broken.json").write_text(content)
    assert main(["card", "collect", str(folder), "--out", str(tmp_path / "board")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {folder / 'broken.json'}: ") and message in err[0]
    assert not (tmp_path / "board.csv").exists()


def test_collect_refuses_the_same_model_twice_and_an_empty_folder(full_card, tmp_path, capsys):
    import shutil

    a, b = tmp_path / "a", tmp_path / "b"
    for folder in (a, b):
        folder.mkdir()
        shutil.copy(full_card[1], folder)
    assert main(["card", "collect", str(a), str(b), "--out", str(tmp_path / "board")]) == 1
    assert "are both the full card of" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["card", "collect", str(tmp_path / "empty"), "--out", str(tmp_path / "board")]) == 1
    assert "no card (<model>.json) in" in capsys.readouterr().err


# ---- docs/benchmarks.md: the registry's files and sizes, the card's names and commands -------------------------
def _expand(text: str) -> list[str]:
    """``a/{b,c}.json`` -> ``a/b.json``, ``a/c.json`` (every brace group, in turn)."""
    import re

    match = re.search(r"\{([^{}]*)\}", text)
    if not match:
        return [text]
    return [x for part in match.group(1).split(",")
            for x in _expand(text[:match.start()] + part + text[match.end():])]


def test_the_benchmarks_page_names_registry_files_with_their_recorded_sizes_and_the_cards_commands():
    import re

    from common.card.run import discover
    from common.registry.sources import default_registry

    page = (Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md").read_text()
    registry = default_registry()
    groups = {e.group for e in registry.values()}
    for line in page.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")] if line.startswith("| `") else []
        if len(cells) != 3:
            continue
        keys = [k for quoted in re.findall(r"`([^`]+)`", cells[0]) for k in _expand(quoted.split(" ")[0])]
        assert keys and all(k in registry for k in keys), line
        assert all(registry[k].group == cells[1].split("`")[1] for k in keys), line
        sizes = [registry[k].size for k in keys]
        if "bytes in all" in cells[2]:
            assert f"{sum(sizes):,} bytes in all ({len(keys)} files)" in cells[2], line
        else:  # an approximate size is the registry's note; none recorded is said so
            assert None in sizes and ("size not recorded" in cells[2] or all(
                registry[k].note and "about" in registry[k].note.lower() for k in keys)), line
    for command in re.findall(r"python -m common fetch ([a-z0-9_/. -]+)", page):
        assert all(t in groups or t in registry for t in command.split()), command
    for bench in discover("full")[0]:
        assert f"| `{bench.key}` |" in page
        assert not bench.how_to_get.startswith("dvc repro") or bench.how_to_get.split(" (")[0] in page
