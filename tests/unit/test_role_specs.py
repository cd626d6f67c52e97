"""Each role's meta/argument_specs.yml documents exactly its defaults/main.yml: every default
is a documented option, every option of the entry point has a default, and a literal default
is the one the spec states (prometheus-community/ansible checks the same)."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROLES = sorted(p for p in (Path(__file__).resolve().parents[2] / "roles").iterdir() if (p / "defaults").exists())


def load(role, rel):
    return yaml.safe_load((role / rel).read_text()) or {}


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_every_default_is_documented_and_every_option_has_a_default(role):
    defaults = load(role, "defaults/main.yml")
    options = load(role, "meta/argument_specs.yml")["argument_specs"]["main"]["options"]
    assert sorted(set(defaults) - set(options)) == [], "defaults without a spec entry"
    assert sorted(set(options) - set(defaults)) == [], "spec options without a default"


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_literal_defaults_match_the_spec(role):
    defaults = load(role, "defaults/main.yml")
    options = load(role, "meta/argument_specs.yml")["argument_specs"]["main"]["options"]
    wrong = {}
    for name, value in defaults.items():
        spec = options[name]
        templated = isinstance(value, str) and "{{" in value
        if templated or isinstance(value, (dict, list)) or "default" not in spec:
            continue
        if spec["default"] != value:
            wrong[name] = (spec["default"], value)
    assert wrong == {}, "spec default vs defaults/main.yml"


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_variables_carry_the_role_name(role):
    defaults = load(role, "defaults/main.yml")
    assert [n for n in defaults if not n.startswith(role.name + "_")] == []
