"""The tarball installs, ansible-doc renders every plugin and role from it, and an execution
environment built with ansible-builder gets the collection's needs."""
from __future__ import annotations

import json
import os
import subprocess
import tarfile

import pytest

from tests.packaging.conftest import BIN, REPO, isolated_env, plugins, version

PLUGINS = plugins()


@pytest.fixture(scope="module")
def docs(installed):
    """ansible-doc --json for every plugin of each type, from the installed tarball only."""
    found = {}
    for kind in sorted({kind for kind, _name in PLUGINS}):
        names = ["inferops.sglang." + name for k, name in PLUGINS if k == kind]
        proc = subprocess.run([str(BIN / "ansible-doc"), "--json", "-t", kind, *names], env=isolated_env(installed),
                              capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stderr[-2000:]
        found[kind] = json.loads(proc.stdout)
    return found


def test_the_tarball_ships_the_collection_not_the_checkout(tarball):
    with tarfile.open(tarball) as tar:
        names = set(tar.getnames())
    shipped = {"MANIFEST.json", "README.md", "requirements.txt", "bindep.txt", "meta/execution-environment.yml",
               "meta/runtime.yml", "docs/docsite/extra-docs.yml", "playbooks/deploy_ddtree.yml",
               "plugins/callback/fleet_summary.py", "roles/sglang_service/meta/argument_specs.yml"}
    assert shipped <= names, sorted(shipped - names)
    # The lab (its API key), the pinned development set, the docs site's build, build output.
    for prefix in ("lab/", "inventory/lab/", "build/", "tests/", ".venv/", "docs/docsite/site/"):
        assert not [n for n in names if n.startswith(prefix)], prefix
    assert "test-requirements.txt" not in names and "ansible.cfg" not in names


@pytest.mark.parametrize("kind, name", PLUGINS, ids=["%s-%s" % p for p in PLUGINS])
def test_every_plugin_renders_from_the_installed_tarball(docs, kind, name):
    doc = docs[kind]["inferops.sglang." + name]
    body = doc["doc"] if kind != "role" else doc
    assert body, (kind, name)
    if kind == "role":
        assert body["entry_points"]["main"]["short_description"]
    else:
        assert body["short_description"] and body.get("description"), (kind, name)
        assert doc.get("examples"), "%s %s has no examples" % (kind, name)


def test_the_installed_collection_is_this_version(installed):
    manifest = json.loads((installed / "ansible_collections" / "inferops" / "sglang" / "MANIFEST.json").read_text())
    assert manifest["collection_info"]["version"] == version()


def test_ansible_builder_introspect_finds_the_collections_requirements(installed):
    proc = subprocess.run([str(BIN / "ansible-builder"), "introspect", "--sanitize", str(installed)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "openssh-client [platform:dpkg]  # from collection inferops.sglang" in proc.stdout, proc.stdout
    assert "openssh-clients [platform:rpm]  # from collection inferops.sglang" in proc.stdout, proc.stdout
    # (No Python package beyond ansible-core: requirements.txt lists none, and introspect says so.)
    assert "python: []" in proc.stdout, proc.stdout
    assert (REPO / "meta" / "execution-environment.yml").exists()


def test_galaxy_importer_reports_no_error_on_the_tarball(tarball, tmp_path):
    """galaxy-importer (its own venv, tests/packaging/galaxy-importer.cfg: no container, so no
    ansible-test, which make sanity runs locally) loads every plugin, runs ansible-doc and
    ansible-lint on the tarball, and says nothing is wrong."""
    python = os.environ.get("GALAXY_IMPORTER_PYTHON")
    assert python and os.path.exists(python), "make package installs galaxy-importer (make importer-venv)"
    env = dict(os.environ, GALAXY_IMPORTER_CONFIG=str(REPO / "tests" / "packaging" / "galaxy-importer.cfg"),
               PATH="%s:%s" % (os.path.dirname(python), os.environ["PATH"]))
    proc = subprocess.run([python, "-m", "galaxy_importer.main", str(tarball)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=False)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Importer processing completed successfully" in log, log[-3000:]
    complaints = [line for line in log.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert not complaints, complaints
    assert "Loading callback fleet_summary" in log and "Linting collection via ansible-lint" in log
