"""The docs site `make docs` built: a page per module, filter, callback and role, the guides,
and the index and a module page as headless Chromium renders them (its DOM and a screenshot
each, kept in build/docs/screenshots/)."""
from __future__ import annotations

import html
import re
import shutil
import struct
import subprocess

import pytest

from tests.packaging.conftest import DOCS_HTML, PAGES, plugins

PLUGINS = plugins()
GUIDES = ("deploy_flow", "fleet", "guard", "awx", "configuration", "adoption", "lab", "benchmarks", "development")
SHOTS = DOCS_HTML.parent / "screenshots"
WINDOW = (1280, 1600)


def chromium(*args):
    browser = shutil.which("chromium")
    assert browser, "make deps installs Debian's chromium"
    proc = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--window-size=%d,%d" % WINDOW, *args], capture_output=True, text=True, check=False,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "%s is not a PNG" % path
    return struct.unpack(">II", data[16:24])


@pytest.mark.parametrize("kind, name", PLUGINS, ids=["%s-%s" % p for p in PLUGINS])
def test_every_plugin_and_role_has_its_page(kind, name):
    page = PAGES / ("%s_%s.html" % (name, kind))
    assert page.exists(), page
    text = page.read_text()
    assert "inferops.sglang.%s" % name in text and "did not return correct DOCUMENTATION" not in text


@pytest.mark.parametrize("guide", GUIDES)
def test_the_guides_are_in_the_site(guide):
    page = PAGES / "docsite" / ("%s.html" % guide)
    assert page.exists(), page
    assert 'href="docsite/%s.html"' % guide in (PAGES / "index.html").read_text(), "the collection's index links it"


@pytest.mark.parametrize("page, must_show", [
    (DOCS_HTML / "index.html", ["inferops.sglang", "Collection Index", "Index of all Modules", "Index of all Roles"]),
    (PAGES / "sglang_gateway_module.html", [
        "inferops.sglang.sglang_gateway module", "Parameters", "drain_timeout", "worker_url", "Examples",
        "inferops.sglang.sglang_gateway:", "Return Values", "elapsed"]),
], ids=["index", "module page"])
def test_a_page_renders_in_headless_chromium(page, must_show):
    dom = chromium("--dump-dom", page.as_uri())
    text = html.unescape(re.sub(r"<[^>]+>", "", dom))   # what a reader sees, highlighting spans and all
    missing = [said for said in must_show if said not in text]
    assert not missing, missing
    if "module" in page.name:
        # The option table (a row per option) and the examples as highlighted code.
        assert dom.count('<tr') > 10 and 'class="highlight' in dom, "no option table or examples"
    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = SHOTS / (page.stem + ".png")
    shot.unlink(missing_ok=True)
    chromium("--screenshot=%s" % shot, page.as_uri())
    assert png_size(shot) == WINDOW and shot.stat().st_size > 30_000, "a blank or clipped screenshot"
