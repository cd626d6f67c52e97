"""Each role's meta/argument_specs.yml documents exactly its defaults/main.yml: every default
is a documented option, every option of the entry point has a default, and every default is
the one the spec states, dicts, lists and templates included (prometheus-community/ansible
checks the same). Internal variables (vars/main.yml, registered and set facts) start with __."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROLES = sorted(p for p in (Path(__file__).resolve().parents[3] / "roles").iterdir() if (p / "defaults").exists())


def load(role, rel):
    return yaml.safe_load((role / rel).read_text()) or {}


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_every_default_is_documented_and_every_option_has_a_default(role):
    defaults = load(role, "defaults/main.yml")
    options = load(role, "meta/argument_specs.yml")["argument_specs"]["main"]["options"]
    assert sorted(set(defaults) - set(options)) == [], "defaults without a spec entry"
    assert sorted(set(options) - set(defaults)) == [], "spec options without a default"


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_every_default_is_the_one_the_spec_states(role):
    """Dicts and lists compared whole, templated defaults by their text, in every entry point. A
    dict or bool option whose default is a template states it in its description instead (the
    docs site's schema takes only a value of the option's type), naming every variable of it."""
    defaults = load(role, "defaults/main.yml")
    wrong = {}
    for entry, spec in load(role, "meta/argument_specs.yml")["argument_specs"].items():
        for name, option in (spec.get("options") or {}).items():
            if name not in defaults:
                continue
            if "default" not in option and _described(option, defaults[name]):
                continue
            if option.get("default", "<no default>") != defaults[name]:
                wrong["%s/%s" % (entry, name)] = (option.get("default", "<no default>"), defaults[name])
    assert wrong == {}, "spec default vs defaults/main.yml"


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_variables_carry_the_role_name(role):
    defaults = load(role, "defaults/main.yml")
    assert [n for n in defaults if not n.startswith(role.name + "_")] == []


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_internal_variables_are_prefixed(role):
    """What a role derives or records for itself is `__<role>_...`, so no play or other role
    mistakes it for an input."""
    names = list(load(role, "vars/main.yml")) if (role / "vars" / "main.yml").exists() else []
    for task_file in sorted((role / "tasks").glob("*.yml")):
        text = task_file.read_text()
        names += [line.split(":", 1)[1].strip() for line in text.splitlines() if line.strip().startswith("register:")]
        for task in _tasks(yaml.safe_load(text) or []):
            names += list((task.get("ansible.builtin.set_fact") or {}).keys())
    public = {"sglang_build_release_dir"}  # the release's name: sglang_service's input
    assert [n for n in names if not n.startswith("__" + role.name + "_") and n not in public] == []


def _described(option, default):
    """A templated default of a typed option, told in its description: every inventory
    variable of the template in C(...)."""
    if option.get("type", "str") == "str" or not (isinstance(default, str) and "{{" in default):
        return False
    text = " ".join(option["description"]) if isinstance(option["description"], list) else option["description"]
    names = re.findall(r"\b(sglang_\w+)\b", default)
    return "Defaults to" in text and bool(names) and all("C(%s)" % n in text for n in names)


def _tasks(tasks):
    for task in tasks:
        yield task
        for key in ("block", "rescue", "always"):
            yield from _tasks(task.get(key) or [])
