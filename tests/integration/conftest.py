"""Fixtures for tests against the lab: real podman containers running real systemd."""
from __future__ import annotations

import json
import re

import pytest

from tests.integration.deploying import reset_service
from tests.integration.labhost import PREFIX, LabHost, labctl, podman

DEFAULT_HOSTS = {"ct129": "a6000", "ct200": "blackwell"}
# The work units handed out first, longest first (make integration passes
# --no-loadscope-reorder, so pytest-xdist keeps this order instead of putting the units with the
# most tests first). Seconds of worker time in make test (the run of 2026-12-07, 2552 s): guard
# 2551 (its two groups), fault_matrix 1503, gateway (the tune on its fleet) 1258, server_group 935,
# runner 320, adoption 282, watch 276, real_checker 244, package_index 124; the rest - single
# tests, two minutes at most - fill in behind them. (xdist gives a worker its next unit once two
# or fewer of its tests are left: a long unit handed out last runs alone at the end, as the
# watch's did in that run, its four rows 4 minutes with a core and a half idle.)
LONGEST_FIRST = ("test_guard.py", "test_fault_matrix.py", "test_gateway.py", "test_server_group.py",
                 "test_runner.py", "test_adoption.py", "test_watch.py", "test_real_checker.py",
                 "test_package_index.py")


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(LONGEST_FIRST)))


@pytest.fixture(scope="session")
def lab():
    """The default lab hosts, started if they are not up (make integration resets them first)."""
    labctl("up", *("%s:%s" % item for item in DEFAULT_HOSTS.items()))
    return {name: LabHost(name) for name in DEFAULT_HOSTS}


@pytest.fixture
def ct129(lab):
    return lab["ct129"]


@pytest.fixture
def ct200(lab):
    return lab["ct200"]


@pytest.fixture
def restore_gpus(lab):
    """Tests that change what a host "has" get the class's GPUs back afterwards."""
    yield
    for name, cls in DEFAULT_HOSTS.items():
        lab[name].put("/etc/inferops-lab/gpus.json", labctl("gpus", cls).stdout)


def container_ids(label_only: bool = True) -> dict:
    """This worker's lab containers by name (label_only=False: every container)."""
    args = ["ps", "-a", "--format", "json"]
    if label_only:
        args += ["--filter", "label=io.inferops.lab=1", "--filter", "label=io.inferops.lab.set=" + PREFIX]
    return {c["Names"][0]: c["Id"] for c in json.loads(podman(*args).stdout or "[]")}


@pytest.fixture
def tenants(lab):
    """Occupy a host's GPUs (`labctl occupy`); every tenant is released afterwards."""
    def occupy(host, gpus, mib, unit=True):
        out = labctl("occupy", host.name, "--gpus", gpus, "--mib", str(mib), *([] if unit else ["--no-unit"])).stdout
        return int(re.search(r"PID (\d+) holds", out).group(1))
    yield occupy
    for host in lab.values():
        labctl("release", host.name)


@pytest.fixture
def fresh(lab):
    """The default hosts with no SGLang service (releases are kept: building one is slow)."""
    for host in lab.values():
        reset_service(host)
    yield lab
    for host in lab.values():   # leave no service behind for tests that start their own
        reset_service(host)
