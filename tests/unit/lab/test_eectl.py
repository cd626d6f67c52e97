"""The lab's EE definition and its offline inputs agree with the development set: the EE runs
the ansible-core and ansible-runner the gates test, and every pip install of the build finds
its wheel (the build reaches no index)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "lab"))
import eectl  # noqa: E402  pylint: disable=wrong-import-position
DEFINITION = yaml.safe_load((REPO / "lab" / "execution-environment" / "execution-environment.yml").read_text())


@pytest.mark.parametrize("dependency, package", [("ansible_core", "ansible-core"), ("ansible_runner", "ansible-runner")])
def test_the_ee_pins_what_the_development_set_pins(dependency, package):
    assert DEFINITION["dependencies"][dependency]["package_pip"] in eectl.pins(), eectl.pins()
    assert any(pin.startswith(package + "==") for pin in eectl.pins())


def test_every_pin_is_exact():
    # (An unpinned name would make the wheels' cache key say nothing of what was downloaded.)
    assert all("==" in pin for pin in eectl.pins()), eectl.pins()


def test_the_build_reaches_no_index():
    steps = "\n".join(DEFINITION["additional_build_steps"]["prepend_base"])
    assert "PIP_NO_INDEX=1" in steps and "PIP_FIND_LINKS=/wheels" in steps
    assert DEFINITION["options"]["package_manager_path"] == "/usr/local/sbin/offline-pkg"
