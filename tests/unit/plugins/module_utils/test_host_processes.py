"""Who is who on a shared host: the unit a process runs in, and who listens on a port, as
data tables (module_utils/host_processes.py)."""
from __future__ import annotations

import os
import socket

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils.host_processes import (
    listeners, listening_sockets, unit_of_cgroup,
)

CGROUPS = [
    # (id, /proc/PID/cgroup, unit)
    ("cgroup v2 service", "0::/system.slice/sglang.service\n", "sglang.service"),
    ("a service's own sub-cgroup (Delegate=yes)", "0::/system.slice/sglang.service/payload\n", "sglang.service"),
    ("transient unit (systemd-run)", "0::/system.slice/run-u12.service\n", "run-u12.service"),
    ("login session scope", "0::/user.slice/user-0.slice/session-3.scope\n", "session-3.scope"),
    ("user's own service manager", "0::/user.slice/user-1000.slice/user@1000.service/app.slice/x.service\n",
     "x.service"),
    ("cgroup v1 (hybrid): the name=systemd line",
     "12:memory:/system.slice/other.service\n1:name=systemd:/system.slice/sglang-qwen.service\n",
     "sglang-qwen.service"),
    ("hybrid layout in a container: name=systemd follows the units, the unified line does not",
     "9:name=systemd:/libpod_parent/libpod-f57b/system.slice/t2.service\n8:pids:/libpod_parent/libpod-f57b\n"
     "0::/libpod_parent/libpod-f57b\n", "t2.service"),
    ("root: no unit", "0::/\n", None),
    ("a slice only", "0::/system.slice\n", None),
    ("nothing readable", "", None),
]


@pytest.mark.parametrize("text, unit", [c[1:] for c in CGROUPS], ids=[c[0] for c in CGROUPS])
def test_unit_of_cgroup(text, unit):
    assert unit_of_cgroup(text) == unit


TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:7530 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 81234 1 0000000000000000 100 0 0 10 0
   1: 00000000:7531 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 81235 1 0000000000000000 100 0 0 10 0
   2: 0100007F:7530 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 81236 1 0000000000000000 20 4 30 10 -1
"""
TCP6 = ("  sl  local_address                         remote_address                        st tx_queue rx_queue tr "
        "tm->when retrnsmt   uid  timeout inode\n"
        "   0: 00000000000000000000000001000000:7530 00000000000000000000000000000000:0000 0A 00000000:00000000 "
        "00:00000000 00000000     0        0 90001 1 0000000000000000 100 0 0 10 0\n"
        "   1: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 "
        "00:00000000 00000000     0        0 90002 1 0000000000000000 100 0 0 10 0\n")
SOCKETS = [
    # (id, table, family, port, expected)
    ("loopback listener; an established connection on the same port is not one", TCP, socket.AF_INET, 30000,
     [{"inode": 81234, "address": "127.0.0.1"}]),
    ("any address", TCP, socket.AF_INET, 30001, [{"inode": 81235, "address": "0.0.0.0"}]),
    ("nobody on the port", TCP, socket.AF_INET, 30002, []),
    ("IPv6 loopback", TCP6, socket.AF_INET6, 30000, [{"inode": 90001, "address": "::1"}]),
    ("IPv6 any", TCP6, socket.AF_INET6, 8080, [{"inode": 90002, "address": "::"}]),
    ("an empty table", "", socket.AF_INET, 30000, []),
]


@pytest.mark.parametrize("table, family, port, expected", [c[1:] for c in SOCKETS], ids=[c[0] for c in SOCKETS])
def test_listening_sockets(table, family, port, expected):
    assert listening_sockets(table, port, family) == expected


def test_listeners_finds_this_process_listening():
    """Read from this machine's /proc: a socket this test listens on is found, with its PID."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        port = sock.getsockname()[1]
        found = listeners(port)
    assert [(h["pid"], h["address"]) for h in found] == [(os.getpid(), "127.0.0.1")]
