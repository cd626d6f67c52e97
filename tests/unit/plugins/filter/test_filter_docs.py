"""Each filter has a doc of its own (plugins/filter/<name>.yml, what `ansible-doc -t filter`
shows), and the doc's options are the filter's arguments, in order."""
from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import yaml

from ansible_collections.inferops.sglang.plugins.filter.sglang import FilterModule

FILTER_DIR = Path(__file__).resolve().parents[4] / "plugins" / "filter"
FILTERS = FilterModule().filters()


def doc(name: str) -> dict:
    return yaml.safe_load((FILTER_DIR / (name + ".yml")).read_text())


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_every_filter_has_its_own_doc_naming_it(name):
    data = doc(name)
    assert data["DOCUMENTATION"]["name"] == name
    assert data["EXAMPLES"].count("inferops.sglang." + name) >= 1, "the example uses the filter by its FQCN"
    assert "_value" in data["RETURN"]


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_doc_options_are_the_filters_arguments(name):
    params = list(inspect.signature(FILTERS[name]).parameters.values())
    options = doc(name)["DOCUMENTATION"]["options"]
    assert list(options) == ["_input"] + [p.name for p in params[1:]]
    for param in params[1:]:
        required = param.default is inspect.Parameter.empty
        assert options[param.name].get("required", False) == required, param.name


def test_no_doc_without_a_filter():
    assert {p.stem for p in FILTER_DIR.glob("*.yml")} == set(FILTERS)
