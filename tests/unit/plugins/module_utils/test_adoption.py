"""Reading a hand-made unit to adopt (module_utils/adoption.py) as data tables."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import adoption

SHOW = """Id=sglang-qwen.service
LoadState=loaded
FragmentPath=/etc/systemd/system/sglang-qwen.service
DropInPaths=/etc/systemd/system/sglang-qwen.service.d/10-gpu.conf /etc/systemd/system/sglang-qwen.service.d/20-x.conf
EnvironmentFiles=/etc/default/qwen (ignore_errors=no)
EnvironmentFiles=/etc/default/qwen-extra (ignore_errors=yes)
UnitFileState=enabled
"""


def test_unit_files_are_the_fragment_the_drop_ins_and_the_environment_files():
    assert adoption.unit_files(adoption.parse_show_all(SHOW)) == [
        ("/etc/systemd/system/sglang-qwen.service", "unit", False),
        ("/etc/systemd/system/sglang-qwen.service.d/10-gpu.conf", "dropin", False),
        ("/etc/systemd/system/sglang-qwen.service.d/20-x.conf", "dropin", False),
        ("/etc/default/qwen", "environment_file", False),
        ("/etc/default/qwen-extra", "environment_file", True),
    ]


@pytest.mark.parametrize("show, files", [
    ("LoadState=not-found\nFragmentPath=\nDropInPaths=\n", []),
    ("FragmentPath=/run/systemd/transient/t.service\nDropInPaths=\n", [("/run/systemd/transient/t.service", "unit",
                                                                       False)]),
], ids=["no such unit", "a transient unit"])
def test_unit_files_of_units_without_files(show, files):
    assert adoption.unit_files(adoption.parse_show_all(show)) == files


PY = ["/opt/sglang/bin/python", "-m"]


@pytest.mark.parametrize("argv, address", [
    (PY + ["sglang.launch_server", "--model-path", "/m"], ("127.0.0.1", 30000)),
    (PY + ["sglang.launch_server", "--host", "0.0.0.0", "--port", "30010"], ("127.0.0.1", 30010)),
    (PY + ["sglang.launch_server", "--host=192.0.2.3", "--port=8000"], ("192.0.2.3", 8000)),
    (PY + ["sglang.launch_server", "--port", "${PORT}"], ("127.0.0.1", None)),
], ids=["SGLang's defaults", "all addresses: asked on loopback", "--opt=value", "a variable: unknown"])
def test_server_address(argv, address):
    assert adoption.server_address(argv) == address


LAUNCHERS = ("sglang.launch_server", "sglang_sim")


@pytest.mark.parametrize("argv, found", [
    (PY + ["sglang.launch_server", "--model-path", "/m"], "sglang.launch_server"),
    (["/usr/bin/python3", "/opt/sglang/lib/python3.11/site-packages/sglang/launch_server.py"], None),
    (["/usr/bin/python3", "-m", "sglang_sim", "--port", "30000"], "sglang_sim"),
    (["/usr/bin/python3", "-m", "http.server", "30000"], None),
    (["/opt/start-qwen.sh"], None),
    ([], None),
], ids=["-m sglang.launch_server", "a script path is not the module", "the deploy's own launcher", "not SGLang",
        "a wrapper script", "no ExecStart"])
def test_launcher(argv, found):
    assert adoption.launcher(argv, LAUNCHERS) == found


@pytest.mark.parametrize("argv, variant", [
    (PY + ["sglang.launch_server", "--speculative-algorithm", "NEXTN"], "nextn"),
    (PY + ["sglang.launch_server", "--speculative-algorithm=EAGLE"], "eagle"),
    (PY + ["sglang.launch_server"], "none"),
])
def test_variant(argv, variant):
    assert adoption.variant(argv) == variant


@pytest.mark.parametrize("known, name", [
    ({"variant": "nextn"}, "NEXTN"),
    ({"variant": "nextn", "adopted": {"unit": "sglang-qwen.service"}}, "NEXTN (sglang-qwen.service, adopted)"),
    ({}, "KNOWN-GOOD"),
])
def test_display_name(known, name):
    assert adoption.display_name(known) == name


def test_a_unit_adopted_before_and_stopped_since_is_no_problem_but_a_stopped_stranger_is():
    seen = {"unit": "q.service", "load_state": "loaded", "active_state": "inactive", "sub_state": "dead"}
    wants = {"adopt": "q.service", "unit": "sglang.service", "host": "h"}
    assert adoption.problem(wants, {"adopted": seen, "deployed": {"adopted_from": "q.service"}}) is None
    assert adoption.problem(wants, {"adopted": seen, "known_good_record": {"adopted": {"unit": "q.service"}}}) is None
    assert "q.service is inactive/dead" in adoption.problem(wants, {"adopted": seen, "deployed": None})
    assert adoption.adopting(wants, {"adopted": seen}) is None
