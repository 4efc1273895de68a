"""The docs site: it builds with `mkdocs build --strict` (offline), its generated configuration reference matches
`LitePPOConfig`, docstring cross-references become links, and a real browser (headless Chromium) renders the pages.

Without mkdocs (the docs requirements: mkdocs, mkdocs-material, mkdocstrings[python]) or Chromium the build and
browser tests skip, unless `TRL_LITE_REQUIRE_DOCS=1` (CI), where they fail instead."""

from __future__ import annotations

import dataclasses
import html
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


config_reference = _load(REPO / "docs" / "hooks" / "config_reference.py", "trl_lite_docs_config_reference")
screenshots = _load(REPO / "docs" / "take_screenshots.py", "trl_lite_docs_take_screenshots")


def _missing(what: str):
    if os.environ.get("TRL_LITE_REQUIRE_DOCS") == "1":
        pytest.fail(f"{what} (TRL_LITE_REQUIRE_DOCS=1)")
    pytest.skip(what)


def _text(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


# ---------------------------------------------------------------- the generated configuration reference (no build)


def test_config_reference_lists_real_fields_and_every_new_field():
    from trl import GRPOConfig

    from trl_lite import LitePPOConfig

    fields = {f.name for f in dataclasses.fields(LitePPOConfig)}
    documented = config_reference.documented_fields()
    assert "advantage_std" in documented and documented["advantage_std"]["default"] == '`"batch"`'
    assert set(documented) <= fields, f"documented but not fields: {set(documented) - fields}"

    trl_fields = {f.name for f in dataclasses.fields(GRPOConfig)}
    new = [name for name in (f.name for f in dataclasses.fields(LitePPOConfig)) if name not in trl_fields]
    assert new == config_reference.new_fields() and "advantage_std" in new
    assert [name for name in new if name not in documented] == []

    # every entry of the generated page is a real field, and every documented field has an entry
    reference = config_reference.render_reference()
    entries = re.findall(r"^### `(\w+)`", reference, flags=re.M)
    assert entries == list(documented)
    assert set(entries) <= fields


def test_config_reference_parser_reads_trl_style_entries():
    doc = '''
    Summary.

    Parameters:
        alpha (`str`, *optional*, defaults to `"group"`):
            First line,
            second line.
        beta (`int`, *optional*):
            Beta.

    Example: none
    '''
    parsed = config_reference.parse_parameters(doc)
    assert list(parsed) == ["alpha", "beta"]
    assert parsed["alpha"]["default"] == '`"group"`'
    assert parsed["alpha"]["description"] == "First line, second line."
    assert parsed["beta"]["default"] == ""


def test_hf_refs_become_autorefs_or_code():
    convert = config_reference.hf_refs_to_autorefs
    assert convert("[`~trl_lite.advantages.normalize_advantages`]") == (
        "[`normalize_advantages`][trl_lite.advantages.normalize_advantages]"
    )
    assert convert("[`LitePPOTrainer`]") == "[`LitePPOTrainer`][trl_lite.trainer.LitePPOTrainer]"
    assert convert("[`LitePPOConfig.from_recipe`]") == (
        "[`LitePPOConfig.from_recipe`][trl_lite.config.LitePPOConfig.from_recipe]"
    )
    assert convert("[`~trl.GRPOConfig`]") == "`GRPOConfig`"


# ---------------------------------------------------------------- the built site


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings_handlers") is None:
        _missing("mkdocs / mkdocstrings[python] not installed (pip install mkdocs-material 'mkdocstrings[python]')")
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout[-4000:]}\n{result.stderr[-8000:]}"
    return out


def test_api_page_links_docstring_cross_references(site):
    page = (site / "api" / "index.html").read_text()
    # LitePPOTrainer's docstring says [`~trl_lite.advantages.normalize_advantages`]: an autorefs link on the page
    links = re.findall(r'<a class="autorefs autorefs-internal"[^>]*href="([^"]*)"', page)
    assert "#trl_lite.advantages.normalize_advantages" in links
    trainer = page[page.index('id="trl_lite.trainer.LitePPOTrainer"'):page.index('id="trl_lite.advantages"')]
    assert 'href="#trl_lite.advantages.normalize_advantages"' in trainer
    # no HF-style reference is left unconverted in the rendered docstrings, and TRL's objects are plain code
    assert "[`" not in _text(page[page.index('class="doc doc-object'):])
    assert "<code>GRPOTrainer</code>" in trainer


def test_browser_renders_home_and_configuration(site):
    if screenshots.chromium() is None:
        _missing("chromium not found")
    with screenshots.serve(site) as url:
        home = screenshots.browser(url, "--dump-dom")
        config = screenshots.browser(url + "configuration/", "--dump-dom")
    assert home.returncode == 0, home.stderr[-2000:]
    assert config.returncode == 0, config.stderr[-2000:]

    assert re.search(r"<h1[^>]*>\s*trl-lite", home.stdout)
    assert "Why trl-lite rather than TRL" in _text(home.stdout)
    assert "The paper reports" in _text(home.stdout)

    dom = config.stdout
    assert re.search(r"<h1[^>]*>\s*Configuration reference", dom)
    start = dom.index('id="field-advantage-std"')
    entry = _text(dom[start:dom.index("<h3", start + 1)])
    assert "advantage_std" in entry
    assert re.search(r"default\s*:\s*\"batch\"", entry), entry
    # the theme's JavaScript ran in the browser: its focus-visible code marks the <html> element, which the file lacks
    assert "data-js-focus-visible" not in (site / "index.html").read_text()
    assert "data-js-focus-visible" in home.stdout and "data-js-focus-visible" in dom


def test_browser_renders_the_notebook_with_its_figures(site, tmp_path):
    # the notebook page (mkdocs-jupyter, from examples/notebooks/lite_ppo.ipynb's committed outputs) as a reader's
    # browser shows it: its title, both figures as the notebook holds them, the curves' tables, a download link
    import base64
    import io

    import nbformat
    from PIL import Image

    import numpy as np

    if screenshots.chromium() is None:
        _missing("chromium not found")
    shot, control = tmp_path / "notebook.png", tmp_path / "configuration.png"
    with screenshots.serve(site) as url:
        page = screenshots.browser(url + "notebooks/lite_ppo/", "--dump-dom")
        # the whole page, as tall as the notebook, and a page without figures as a control
        taken = screenshots.browser(url + "notebooks/lite_ppo/", f"--screenshot={shot}", "--window-size=1280,12000")
        screenshots.browser(url + "configuration/", f"--screenshot={control}", "--window-size=1280,12000")
    assert page.returncode == 0 and taken.returncode == 0, page.stderr[-2000:]
    dom = page.stdout
    assert re.search(r"<h1[^>]*>\s*Lite PPO in a notebook", dom)
    shown = [base64.b64decode(b) for b in re.findall(r'<img[^>]+src="data:image/png;base64,([^"]+)"', dom)]
    notebook = nbformat.read(REPO / "examples" / "notebooks" / "lite_ppo.ipynb", as_version=4)
    committed = [base64.b64decode(o.data["image/png"]) for cell in notebook.cells for o in cell.get("outputs", [])
                 if "image/png" in o.get("data", {})]
    assert shown == committed and len(shown) == 2
    tables = re.findall(r"<table.*?</table>", dom, re.S)
    assert any("reward concentration" in _text(t) and "held-out accuracy" in _text(t) for t in tables)
    assert 'href="lite_ppo.ipynb"' in dom and (site / "notebooks" / "lite_ppo" / "lite_ppo.ipynb").exists()
    assert "Notebook" in _text(dom[dom.index('class="md-tabs'):dom.index("</nav>", dom.index('class="md-tabs'))])
    # the browser drew the figures: their lines' colors (matplotlib's C0 blue and C1 orange) cover thousands of the
    # screenshot's pixels, and none of the control page's
    def colored(path, rgb):
        with Image.open(path) as image:
            pixels = np.asarray(image.convert("RGB")).astype(int)
        return int((np.abs(pixels - np.array(rgb)).max(axis=2) <= 12).sum())

    for rgb in ((31, 119, 180), (255, 127, 14)):
        assert colored(shot, rgb) > 1000 and colored(control, rgb) == 0, rgb


def test_repository_paths_named_in_the_docs_exist():
    """Files outside docs/ are named as `path` text (mkdocs cannot check them as links): each must exist."""
    roots = ("tests/", "bench/", "trl_lite/", "scripts/", "examples/", "model_cards/", "docs/", ".ci/")
    missing = []
    for page in [*sorted((REPO / "docs").glob("*.md")), REPO / "README.md"]:
        for path in re.findall(r"`([\w./-]+(?:::\w+)?)`", page.read_text()):
            if not path.startswith(roots):
                continue
            file, _, test = path.partition("::")
            if not (REPO / file).exists():
                missing.append(f"{page.name}: {path}")
            elif test and not re.search(rf"^def {test}\(", (REPO / file).read_text(), re.M):
                missing.append(f"{page.name}: {path} (no such test)")
    assert missing == []
