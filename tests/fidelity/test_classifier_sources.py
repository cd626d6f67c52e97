"""Every classifier rule (plugins/module_utils/sglang_failures.py) is written for lines whose
text is in the pinned SGLang 0.5.23's source (or in Python's own library, or, named, from
torch, CUDA, transformers, uvicorn or the kernel), and its pattern matches those lines. A
wording change in SGLang makes this fail. Needs the reference venv (`make fidelity` sets
SGLANG_REFERENCE_PYTHON); without it these tests fail, they never skip."""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils.sglang_failures import (
    PHASE_SAID, PHASES, RULES, _group_end, split_alternatives,
)

# Origins outside SGLang and Python's library, which the rules' texts may name instead.
OTHER_ORIGINS = ("torch: ", "CUDA: ", "NCCL: ", "transformers: ", "uvicorn: ", "the kernel: ", "Python: ", "systemd: ")
CHECKED = re.compile(r"^(sglang|python):(\S+)$")
FORMAT_FIELD = re.compile(r"%\(\w+\)[sdr]|%[sdr]|\{[^{}]*\}")


@pytest.fixture(scope="module")
def roots():
    """Where the pinned SGLang package and the reference Python's library are."""
    python = os.environ.get("SGLANG_REFERENCE_PYTHON", "")
    assert python and Path(python).exists(), "SGLANG_REFERENCE_PYTHON is not set: run `make fidelity`"
    out = subprocess.run([python, "-c", "import importlib.util, json, os, sysconfig; print(json.dumps({"
                          "'sglang': os.path.dirname(importlib.util.find_spec('sglang').origin), "
                          "'python': sysconfig.get_paths()['stdlib']}))"],
                         capture_output=True, text=True, check=True).stdout
    return dict((k, Path(v)) for k, v in json.loads(out).items())


def alternatives(pattern):
    """The pattern's alternatives, one group deep (`(?:a|b)` is two)."""
    found = []
    for alternative in split_alternatives(pattern):
        if alternative.startswith("(?:") and _group_end(alternative) == len(alternative) - 1:
            found += alternatives(alternative[3:-1])
        else:
            found.append(alternative)
    return found


SAID = [(rule.cause, rule.regex, said) for rule in RULES for said in rule.said]
SAID += [(name, regex, PHASE_SAID[name]) for name, regex in PHASES]


@pytest.mark.parametrize("name, regex, said", SAID, ids=["%s: %s" % (s[0], s[2].line[:40]) for s in SAID])
def test_each_text_is_where_it_says_and_the_pattern_matches_it(roots, name, regex, said):
    assert regex.search(said.line), "%s's pattern %r does not match %r" % (name, regex.pattern, said.line)
    for piece in said.pieces:
        for fragment in FORMAT_FIELD.split(piece):
            assert fragment in said.line, "%s: %r (of %r) is not in the line it makes" % (name, fragment, piece)
    checked = CHECKED.match(said.where)
    if not checked:
        assert said.where.startswith(OTHER_ORIGINS), (
            "%s: %r names no origin: give sglang:<file>, python:<file>, or one of %s"
            % (name, said.where, ", ".join(o.strip() for o in OTHER_ORIGINS)))
        return
    source = roots[checked.group(1)] / checked.group(2)
    assert source.is_file(), "%s: %s is not in the pinned %s" % (name, checked.group(2), checked.group(1))
    text = source.read_text()
    for piece in said.pieces:
        assert piece in text, "%s: %r is not in %s (pinned %s): did SGLang change its words?" % (
            name, piece, checked.group(2), checked.group(1))


@pytest.mark.parametrize("rule", RULES, ids=[r.cause for r in RULES])
def test_every_alternative_of_a_rule_has_a_text(rule):
    for alternative in alternatives(rule.regex.pattern):
        assert any(re.search(alternative, said.line) for said in rule.said), (
            "%s: nothing says where %r comes from: add a Said for it, or drop it" % (rule.cause, alternative))
