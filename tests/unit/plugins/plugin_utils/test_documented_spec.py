"""Each action plugin's arguments are its module's documented options, checked once: no action
keeps a second, hand-written spec beside its module's DOCUMENTATION (as ansible.utils' actions
validate theirs), and what a user reads in ansible-doc is what the action accepts."""
from __future__ import annotations

import importlib
import pathlib

import pytest
import yaml

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible_collections.inferops.sglang.plugins.plugin_utils import documented_spec
from ansible_collections.inferops.sglang.plugins.plugin_utils.decision import DecisionAction

ACTIONS = sorted(p.stem for p in (pathlib.Path(documented_spec.__file__).parents[1] / "action").glob("*.py")
                 if p.stem != "__init__")
PACKAGE = "ansible_collections.inferops.sglang.plugins.action."


@pytest.mark.parametrize("name", ACTIONS)
def test_no_action_keeps_a_spec_of_its_own(name):
    action = importlib.import_module(PACKAGE + name).ActionModule
    assert not hasattr(action, "ARGUMENT_SPEC"), "%s: its options are its module's DOCUMENTATION" % name


DECISIONS = [n for n in ACTIONS if issubclass(importlib.import_module(PACKAGE + n).ActionModule, DecisionAction)]


@pytest.mark.parametrize("name", DECISIONS)
def test_a_decision_actions_spec_is_its_modules_documented_options(name):
    action_file = importlib.import_module(PACKAGE + name).__file__
    spec = documented_spec.documented_spec(action_file)
    options = documented_spec.documentation(documented_spec.module_path(action_file))["options"]
    assert sorted(spec) == sorted(options)
    for option, doc in options.items():
        assert spec[option].get("required", False) == doc.get("required", False), option
        assert spec[option].get("default") == doc.get("default"), option
    # A documented default is one the spec accepts: validating nothing but the required options passes.
    required = dict((o, {"dict": {}, "list": [], "int": 1, "float": 1.0, "bool": True}.get(spec[o].get("type"), "x"))
                    for o in spec if spec[o].get("required"))
    assert ArgumentSpecValidator(spec).validate(required).error_messages == []


def test_nested_options_and_secrets_become_the_spec_ansible_core_checks():
    options = yaml.safe_load("""
    gateway:
      description: x
      type: dict
      suboptions:
        url: {description: x, type: str, required: true}
        api_key: {description: x, type: str, default: ""}
    mode: {description: x, type: str, choices: [a, b], default: a}
    """)
    spec = documented_spec.spec_from_options(options)
    assert spec == {"gateway": {"type": "dict", "options": {"url": {"type": "str", "required": True},
                                                            "api_key": {"type": "str", "default": "", "no_log": True}}},
                    "mode": {"type": "str", "choices": ["a", "b"], "default": "a"}}
    result = ArgumentSpecValidator(spec).validate({"gateway": {"url": "http://g", "api_key": "s3cret"}, "mode": "c"})
    assert [type(e).__name__ for e in result.errors] == ["ArgumentValueError"] and "s3cret" in result._no_log_values
