"""The static site (``python -m common site``): it builds from the committed results; every page exists; every link
and image resolves to a file inside the site; nothing is loaded from the network; CSV text is escaped; a failed build
leaves the previous site. In headless Chromium (when installed): every page loads without a SEVERE console message,
every image decodes, the audit's verdict filter narrows the rows, and a cross-paper row fits on the screen.
Screenshots of every page at 1400 px are left in the site's ``screenshots/`` folder."""
from __future__ import annotations

import shutil
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from markupsafe import escape

from common.cli import main
from common.errors import WorkspaceError
from common.paths import RESULTS
from common.plugins import paper_names
from common.reporting import scorecard
from common.reporting.report import read_table
from common.reporting.scorecard import ScorecardError
from common.site import build
from common.site.about import About, about
from common.site.build import NO_CARDS, build_site
from common.site.text import clean_quote, tone

PAGES = ("index.html", *(f"{p}.html" for p in paper_names()), "cross_paper.html", "correlations.html", "cards.html")
HOSTILE = "<script>alert('card')</script>"
"""Text in a card's Markdown that must reach the page as text."""


@pytest.fixture(scope="module")
def cards_dir(tmp_path_factory) -> Path:
    """One card (its Markdown table and a figure), as ``python -m common card`` lays them out."""
    folder = tmp_path_factory.mktemp("cards") / "mini"
    folder.mkdir()
    (folder / "toy.md").write_text(f"# Report card: toy\n\n| benchmark | % |\n|---|---|\n| {HOSTILE} | 51.5 |\n")
    shutil.copyfile(RESULTS / "audit" / "cross_paper.png", folder / "toy.png")
    return folder.parent


@pytest.fixture(scope="module")
def site(tmp_path_factory, cards_dir) -> Path:
    out = tmp_path_factory.mktemp("built") / "site"
    assert build_site(out, cards_dir=cards_dir) == out / "index.html"
    return out


class _Refs(HTMLParser):
    """Every ``href``/``src`` of a page (tag, attribute, value, rel) and its element ids."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str, str, str]] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.add(values["id"] or "")
        for name in ("href", "src"):
            if values.get(name) is not None:
                self.refs.append((tag, name, values[name] or "", values.get("rel") or ""))


def _parse(page: Path) -> _Refs:
    parser = _Refs()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def test_every_page_is_built_and_every_reference_resolves_inside_the_site(site):
    assert sorted(p.name for p in site.glob("*.html")) == sorted(PAGES)
    problems = []
    for name in PAGES:
        parsed = _parse(site / name)
        for tag, attr, value, rel in parsed.refs:
            url = urlsplit(value)
            if url.scheme in ("http", "https") or url.netloc:
                if not (tag == "a" and attr == "href"):  # a link to an outside page is fine; loading one is not
                    problems.append(f"{name}: <{tag} {attr}={value!r}> loads from the network")
            elif url.scheme == "data":
                continue  # inline: nothing fetched
            elif url.scheme:
                problems.append(f"{name}: <{tag} {attr}={value!r}>: scheme {url.scheme!r}")
            elif not url.path:
                if url.fragment not in parsed.ids:
                    problems.append(f"{name}: <{tag} {attr}={value!r}>: no element with that id")
            else:
                target = (site / unquote(url.path)).resolve()
                if not target.is_relative_to(site.resolve()) or not target.is_file():
                    problems.append(f"{name}: <{tag} {attr}={value!r}>: no such file in the site")
    for name in build.STATIC:
        text = (site / name).read_text(encoding="utf-8")
        if "http://" in text or "https://" in text or "@import" in text:
            problems.append(f"{name} names a network resource")
    assert not problems, "\n".join(problems)


def test_the_pages_show_every_results_file_and_the_audit(site):
    for paper in paper_names():
        page = (site / f"{paper}.html").read_text(encoding="utf-8")
        for path in sorted((RESULTS / paper).rglob("*")):
            if path.suffix in (".csv", ".png") and not build._dvc_cached(path, RESULTS):
                assert path.relative_to(RESULTS.parent).as_posix() in page, (paper, path)
        claims = scorecard.scorecard(paper)
        assert page.count(f"papers/{paper}/scorecard.toml: ") == len(claims) > 0  # one row per claim
        for findings in claims:
            assert page.count(f"<td>{escape(findings[0].claim.claim)}") == 1
            assert all(f'class="verdict {tone(f.verdict)}">{escape(f.verdict)}</span>' in page for f in findings)
        audit = RESULTS / "audit" / f"{paper}.csv"
        if audit.is_file():
            rows = read_table(audit)
            assert page.count(f"<dd>python -m common audit {paper}</dd>") == len(rows)
            assert all(escape(clean_quote(r["quote"])) in page for r in rows)
        assert "%percent" not in page and "plus-or-minus" not in page and "2393723" not in page
    correlations = (site / "correlations.html").read_text(encoding="utf-8")
    assert "finding3.csv" in correlations and "recognition/scatter.png" in correlations
    assert 'id="cross-paper"' in (site / "cross_paper.html").read_text(encoding="utf-8")


def test_a_folder_dvc_caches_is_left_out_and_the_index_counts_the_claims(site, tmp_path):
    """Per-example predictions that ``make repro`` fetched or rebuilt (DVC caches them; git ignores them) are not on
    the site, so it is the same before and after."""
    results = tmp_path / "results"
    shutil.copytree(RESULTS, results)
    cached = results / "aro" / "mini" / "predictions"
    cached.mkdir(exist_ok=True)
    (cached / "scores.csv").write_text("item,score\n1,0.5\n")
    (results / "aro" / "mini" / ".gitignore").write_text("/predictions\n")
    build_site(tmp_path / "with", results)
    aro = (tmp_path / "with" / "aro.html").read_text(encoding="utf-8")
    assert "predictions/scores.csv" not in aro and "results/aro/mini/table6.csv" in aro
    index = (site / "index.html").read_text(encoding="utf-8")
    for paper in paper_names():
        rows = scorecard.scorecard(paper)
        counted = scorecard.reproduced_counts(rows)
        assert counted["mini"] and f"<strong>{counted['mini']}</strong>" in index
        a = about(paper)
        assert a.title and a.venue and a.arxiv and a.code.startswith("https://github.com/")
        name = f'<a class="name" href="{paper}.html">{escape(a.short)}</a> <span class="venue">{escape(a.venue)}</span>'
        assert name in index and escape(a.title) in index and f'href="https://arxiv.org/abs/{a.arxiv}"' in index
        assert f'href="{a.code}"' in index
        shown = [build.headline(findings) for findings in rows]
        assert all(f'class="verdict {tone(f.verdict)}">{escape(f.verdict)}</span> {escape(f.claim.claim)} '
                   f'<small>({scorecard.EVIDENCE_TITLES[f.kind]})</small>' in index for f in shown)
    assert index.count('class="banner"') == 1 and all(
        'class="banner"' in (site / name).read_text(encoding="utf-8") for name in PAGES)


def test_a_papers_metadata_is_read_from_its_scorecard_and_checked(tmp_path):
    """The ``[paper]`` table of ``papers/<paper>/scorecard.toml``: optional (the package name stands in), text only,
    a misspelt key named."""
    folder = tmp_path / "papers" / "toy"
    folder.mkdir(parents=True)
    assert about("toy", tmp_path) == About("toy", "toy")
    (folder / "scorecard.toml").write_text('[paper]\nshort = "Toy"\narxiv = "2401.00001"\n')
    a = about("toy", tmp_path)
    assert (a.short, a.title, a.arxiv_url) == ("Toy", "", "https://arxiv.org/abs/2401.00001")
    for wrong in ('year = 2024', 'titel = "Toy"', 'code = ["https://github.com/a/b"]'):
        (folder / "scorecard.toml").write_text(f"[paper]\n{wrong}\n")
        with pytest.raises(ScorecardError, match=wrong.split(" ")[0]):
            about("toy", tmp_path)


def test_cards_are_rendered_and_escaped(site, tmp_path):
    page = (site / "cards.html").read_text(encoding="utf-8")
    assert "<table>" in page and "img/cards/mini/toy.png" in page
    assert HOSTILE not in page and "&lt;script&gt;" in page
    build_site(tmp_path / "empty", cards_dir=tmp_path / "no-cards")
    assert NO_CARDS in (tmp_path / "empty" / "cards.html").read_text(encoding="utf-8")


def test_a_failed_build_leaves_the_previous_site_and_a_foreign_folder_is_refused(tmp_path, monkeypatch, capsys):
    out = tmp_path / "site"
    assert main(["site", "--out", str(out)]) == 0
    assert "site: " in capsys.readouterr().out
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}

    def broken(*args, **kwargs):
        raise WorkspaceError("a damaged card")

    monkeypatch.setattr(build, "cards", broken)
    with pytest.raises(WorkspaceError):
        build_site(out)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]  # no staging folder left
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("not a site")
    with pytest.raises(build.SiteError, match="did not write"):
        build_site(tmp_path / "mine")


# ---- in a browser --------------------------------------------------------------------------------------------------
def _chromium():
    """A headless Chromium driven by chromedriver, or a skip naming what is missing."""
    missing = [name for name in ("chromium", "chromedriver") if shutil.which(name) is None]
    try:
        from selenium import webdriver
    except ImportError:
        missing.append("the selenium package")
    if missing:
        pytest.skip(f"no {', '.join(missing)}: apt-get install -y chromium chromium-driver; pip install selenium")
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000",
                "--host-resolver-rules=MAP * ~NOTFOUND"):  # a page that fetches from the network logs an error
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=webdriver.ChromeService(shutil.which("chromedriver")))


VISIBLE_ROWS = "return Array.from(document.querySelectorAll('#' + arguments[0] + ' tbody tr')).filter(r => !r.hidden)" \
               ".map(r => r.getAttribute('data-verdict'))"


def test_in_chromium_every_page_loads_cleanly_and_the_verdict_filter_narrows_the_rows(site):
    driver = _chromium()
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    shots = site / "screenshots"
    shots.mkdir(exist_ok=True)
    try:
        driver.set_page_load_timeout(120)
        # the filter first, on the page's first load: every row shown, then one verdict's rows only
        paper = next(p for p in paper_names() if (RESULTS / "audit" / f"{p}.csv").is_file())
        driver.get((site / f"{paper}.html").as_uri())
        table = f"audit-{paper}"
        bar = f'[data-target="{table}"]'
        WebDriverWait(driver, 30).until(lambda d: d.find_element(By.CSS_SELECTOR, f"{bar} .count").text)
        before = driver.execute_script(VISIBLE_ROWS, table)
        total = driver.execute_script(f"return document.querySelectorAll('#{table} tbody tr').length")
        assert len(before) == total > 0, (len(before), total)
        select = Select(driver.find_element(By.CSS_SELECTOR, f'{bar} select[data-key="verdict"]'))
        verdict = next(o.get_attribute("value") for o in select.options if o.get_attribute("value"))
        select.select_by_value(verdict)
        after = driver.execute_script(VISIBLE_ROWS, table)
        assert 0 < len(after) < len(before) and set(after) == {verdict}, (verdict, len(before), len(after))
        assert after == [v for v in before if v == verdict]
        driver.save_screenshot(str(shots / f"{paper}-filtered.png"))

        problems = []
        for name in PAGES:
            driver.get((site / name).as_uri())
            severe = [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
            broken = driver.execute_script("return Array.from(document.images)"
                                           ".filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)")
            problems += [f"{name}: console: {m}" for m in severe] + [f"{name}: image not shown: {s}" for s in broken]
            driver.save_screenshot(str(shots / f"{Path(name).stem}.png"))
        assert not problems, "\n".join(problems)

        # at 1400 px a cross-paper row is a few lines tall, its difference and cause in view without scrolling
        driver.get((site / "cross_paper.html").as_uri())
        heights, right = driver.execute_script(
            "const t = document.getElementById('cross-paper'); const heads = Array.from(t.tHead.rows[0].cells);"
            "const cause = heads.find(h => h.textContent === 'cause');"
            "return [Array.from(t.tBodies[0].rows).map(r => r.getBoundingClientRect().height),"
            " cause.getBoundingClientRect().left];")
        assert heights and max(heights) < 120 and right < 1400 - 100, (max(heights), right)
    finally:
        driver.quit()


def test_the_index_and_each_paper_page_show_the_oracle_record(site):
    """Per paper, "the authors' code agrees on N of M benchmarks" and the commits it ran (``results/oracle/``)."""
    from common.oracle.core import read_record

    index = (site / "index.html").read_text(encoding="utf-8")
    recorded = 0
    for paper in paper_names():
        record = read_record(paper, RESULTS)
        if record is None:
            continue
        recorded += 1
        assert f'<a href="{paper}.html#oracle">{record["agreeing"]} of {record["of"]} benchmarks</a>' in index
        page = (site / f"{paper}.html").read_text(encoding="utf-8")
        assert 'id="oracle"' in page and all(f"<code>{c}</code>" in page for c in record["code"])
        assert all(f"<tr><th>{escape(name)}</th>" in page for name in record["benchmarks"])
        assert all(escape(n["why"]) in page for n in record["not_covered"])
    assert recorded == 5


def test_the_index_says_how_much_of_the_published_numbers_is_compared(site):
    """The front page's promise is the audit's coverage, from results/audit (issue 48: the audit was oversold)."""
    from common.site.build import coverage, verdict_counts

    c = coverage(verdict_counts(RESULTS, paper_names()))
    total = sum(c.values())
    index = " ".join((site / "index.html").read_text(encoding="utf-8").split())
    assert f"Of the {total:,} numbers they publish, {c['reproduced'] + c['differs']:,}" in index
    assert f"({c['reproduced']} reproduced, {c['differs']} differ)" in index
    assert "papers, reproduced" not in index
