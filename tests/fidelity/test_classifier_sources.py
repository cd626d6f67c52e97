"""Every classifier rule (plugins/module_utils/sglang_failures.py) is written for lines whose
text is in the pinned SGLang 0.5.23's source (or in Python's own library, or, named, from
torch, CUDA, transformers, uvicorn or the kernel), and its pattern matches those lines. A
wording change in SGLang makes this fail. torch's distributed texts and NCCL's are checked in
the binaries of the torch and NCCL that SGLang 0.5.23 pins. Needs the reference venv and those
wheels (`make fidelity` sets SGLANG_REFERENCE_PYTHON and INFEROPS_BINARY_WHEELS); without them
these tests fail, they never skip."""
from __future__ import annotations

import json
import os
import re
import subprocess
import zipfile
from pathlib import Path

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import sglang_failures
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


# The binary each origin's texts are compiled into, in the wheels of torch (the release SGLang
# 0.5.23 pins) and of NCCL (the release that torch pins).
BINARIES = {
    sglang_failures.GLOO: "torch/lib/libtorch_cpu.so",
    sglang_failures.TCPSTORE: "torch/lib/libtorch_cpu.so",
    sglang_failures.TORCH_NCCL: "torch/lib/libtorch_cuda.so",
    sglang_failures.NCCL_LIB: "nvidia/nccl/lib/libnccl.so.2",
    sglang_failures.NCCL_SOCKET: "nvidia/nccl/lib/libnccl.so.2",
}
IN_BINARIES = [(rule.cause, said) for rule in RULES for said in rule.said if said.where in BINARIES]


def required(metadata, name):
    """The version a wheel's METADATA pins `name` to (`Requires-Dist: name==X`)."""
    found = re.search(r"^Requires-Dist: %s==([\w.]+)" % re.escape(name), metadata, re.M)
    assert found, "no pin of %s in the metadata" % name
    return found.group(1)


def wheel_metadata(wheel):
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        return archive.read(name).decode("utf-8")


@pytest.fixture(scope="module")
def binary_texts(roots):
    """{binary: the classifier's pieces found in it}: each binary streamed out of its wheel
    through grep's fixed-string search (a few seconds for the ~1.4 GB they hold)."""
    where = Path(os.environ.get("INFEROPS_BINARY_WHEELS", ""))
    wheels = sorted(where.glob("*.whl")) if where.name else []
    assert len(wheels) == 2, "INFEROPS_BINARY_WHEELS holds no torch and NCCL wheels: run `make fidelity`"
    torch_wheel = next(w for w in wheels if w.name.startswith("torch-"))
    nccl_wheel = next(w for w in wheels if w.name.startswith("nvidia_nccl"))
    sglang = (roots["sglang"].parent / ("sglang-%s.dist-info" % "0.5.23") / "METADATA").read_text()
    assert torch_wheel.name.startswith("torch-%s-" % required(sglang, "torch")), "not the torch SGLang pins"
    assert nccl_wheel.name.startswith("nvidia_nccl_cu13-%s-" % required(wheel_metadata(torch_wheel), "nvidia-nccl-cu13"))
    found = {}
    for binary in sorted(set(BINARIES.values())):
        pieces = sorted({piece for _cause, said in IN_BINARIES if BINARIES[said.where] == binary
                         for piece in said.pieces})
        wheel = nccl_wheel if binary.startswith("nvidia/") else torch_wheel
        unzip = subprocess.Popen(["unzip", "-p", str(wheel), binary], stdout=subprocess.PIPE)
        grep = subprocess.run(["grep", "-a", "-o", "-F", "-e", "\n".join(pieces)], stdin=unzip.stdout,
                              capture_output=True, env=dict(os.environ, LC_ALL="C"), check=False)
        unzip.stdout.close()
        assert unzip.wait() == 0, "%s is not in %s" % (binary, wheel.name)
        found[binary] = set(grep.stdout.decode("utf-8", "replace").splitlines())
    return found


@pytest.mark.parametrize("cause, said", IN_BINARIES, ids=["%s: %s" % (s[0], s[1].line[:40]) for s in IN_BINARIES])
def test_torch_and_nccl_texts_are_in_their_binaries(binary_texts, cause, said):
    binary = BINARIES[said.where]
    for piece in said.pieces:
        assert piece in binary_texts[binary], "%s: %r is not in %s (torch / NCCL as SGLang 0.5.23 pins them)" % (
            cause, piece, binary)
