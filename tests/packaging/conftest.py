"""The built collection as a user gets it: the tarball `make package` built, installed into a
collections folder of its own (nothing of this checkout on the path), and the docs site."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PACKAGE_DIR = REPO / "build" / "package"
DOCS_HTML = REPO / "build" / "docs" / "html"
PAGES = DOCS_HTML / "collections" / "inferops" / "sglang"


def plugins():
    """Every plugin and role the collection ships, as (type, name), from its tree."""
    found = [("module", p.stem) for p in sorted((REPO / "plugins" / "modules").glob("*.py"))]
    found += [("filter", p.stem) for p in sorted((REPO / "plugins" / "filter").glob("*.yml"))]
    found += [("callback", p.stem) for p in sorted((REPO / "plugins" / "callback").glob("*.py"))]
    found += [("role", p.name) for p in sorted((REPO / "roles").iterdir()) if (p / "meta" / "argument_specs.yml").exists()]
    return found


def version():
    return yaml.safe_load((REPO / "galaxy.yml").read_text())["version"]


def isolated_env(collections: Path) -> dict:
    """Ansible seeing only `collections` (and its own ansible.builtin), not this checkout, with
    no configuration but its defaults."""
    config = collections / "ansible.cfg"
    config.touch()
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_CONFIG=str(config), ANSIBLE_NOCOLOR="1")
    env.pop("ANSIBLE_COLLECTIONS_PATHS", None)
    return env


@pytest.fixture(scope="session")
def tarball():
    path = PACKAGE_DIR / ("inferops-sglang-%s.tar.gz" % version())
    assert path.exists(), "make package builds %s" % path
    return path


@pytest.fixture(scope="session")
def installed(tarball, tmp_path_factory):
    """The tarball installed with ansible-galaxy into a fresh collections folder."""
    folder = tmp_path_factory.mktemp("collections")
    proc = subprocess.run([str(BIN / "ansible-galaxy"), "collection", "install", "--offline", "--force", "-p",
                           str(folder), str(tarball)], env=isolated_env(folder), capture_output=True, text=True,
                          check=False, cwd=folder)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return folder
