"""The user documentation: every relative link resolves, the README stays short, and neither it
nor the docs pages retell measurement history (that lives in ``benchmarks/``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "lab" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
ORDINAL_RUN = re.compile(
    r"\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|"
    r"\w+teenth|twentieth|twenty[- ]?\w+|thirtieth) (validation )?run\b", re.IGNORECASE)


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings, plus explicit ``<a id=...>`` anchors."""
    text = page.read_text()
    found = set(re.findall(r'<a id="([^"]+)">', text))
    for heading in re.findall(r"^#+ (.+)$", text, re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    for link in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
        if re.match(r"[a-z]+:", link):
            continue
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        assert target.exists(), f"{page.name}: broken link {link}"
        if anchor and target.suffix == ".md":
            assert anchor in _anchors(target), f"{page.name}: no anchor #{anchor} in {path}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_numbered_runs(page):
    hits = ORDINAL_RUN.findall(page.read_text())
    assert not hits, f"{page.name} cites numbered runs: {hits}"


def test_readme_starts_with_install_run_and_test_commands():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 200
    block = lines[lines.index("```bash") + 1:lines.index("```")]
    assert block[0].startswith('pip install -e ".[test]" && autogp fit examples/data/airline.csv')
    assert block[1] == "python -m pytest"
    # CI runs the same two steps (.ci/run)
    ci = (ROOT / ".ci" / "run").read_text()
    assert 'pip install -e ".[test]"' in ci and "python -m pytest" in ci


def test_gallery_images_are_committed_and_small():
    page = (ROOT / "docs" / "gallery.md").read_text()
    images = re.findall(r"!\[[^]]*\]\(([^)]+)\)", page)
    assert len(images) >= 3
    for image in images + ["images/how-it-works.png"]:
        size = (ROOT / "docs" / image).stat().st_size
        assert 1_000 < size < 200_000, (image, size)


def test_readme_config_example_is_a_valid_config():
    import tomllib

    from autogp import load_config

    text = (ROOT / "README.md").read_text()
    example = re.search(r"```toml\n(.*?)```", text, re.DOTALL).group(1)
    config = load_config(tomllib.loads(example))
    assert config.smc.num_particles == 16 and list(config.forecast.levels) == [80, 95]
    assert (ROOT / config.data.path).exists()  # the example sits at the repository's root
