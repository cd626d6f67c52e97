"""Shared by the scenarios' testinfra tests: the lab hosts (podman backend), their reports,
their health, and the unit's journal printed under any failed assertion."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import testinfra
import yaml

UNIT = "sglang.service"
UNIT_PATH = "/etc/systemd/system/sglang.service"
API_KEY = "lab-api-key-not-secret"   # inventory/lab/group_vars/sglang_hosts.yml


def inventory() -> dict:
    with open(os.environ["MOLECULE_INVENTORY_FILE"]) as fh:
        return yaml.safe_load(fh)


def hosts_in(group: str) -> list[str]:
    """The hosts of a group, wherever molecule's inventory puts it (top level or children)."""
    found = set()

    def walk(name, node):
        node = node or {}
        if name == group:
            found.update(node.get("hosts") or {})
            for child in (node.get("children") or {}).values():
                found.update((child or {}).get("hosts") or {})
        for child_name, child in (node.get("children") or {}).items():
            walk(child_name, child)

    for name, node in inventory().items():
        walk(name, node)
    return sorted(found)


def lab_host(group: str):
    names = hosts_in(group)
    assert len(names) == 1, "expected one %s host in the molecule inventory, found %s" % (group, names)
    host = testinfra.get_host("podman://" + names[0])
    host.lab_name = names[0]
    return host


def reports(name: str) -> list[dict]:
    """Every report a deploy wrote for the host, oldest first (latest.json excluded)."""
    folder = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "reports" / name
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json")) if p.name != "latest.json"]


def latest_report(name: str) -> dict:
    path = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "reports" / name / "latest.json"
    return json.loads(path.read_text())


def health_status(host) -> int | None:
    out = host.run("python3 -c \"import urllib.request as u; print(u.urlopen('http://127.0.0.1:30000/health', "
                   "timeout=10).status)\"")
    return int(out.stdout.strip()) if out.rc == 0 else None


def unit_failed_at(host, invocation_id: str) -> float:
    """When systemd logged that the invocation failed ("Failed with result"), epoch seconds."""
    out = host.check_output("journalctl -u %s -o json --no-pager" % UNIT)
    for line in out.splitlines():
        entry = json.loads(line)
        if entry.get("INVOCATION_ID") == invocation_id and "Failed with result" in str(entry.get("MESSAGE")):
            return int(entry["__REALTIME_TIMESTAMP"]) / 1e6
    raise AssertionError("no 'Failed with result' entry for invocation %s" % invocation_id)


@pytest.fixture(scope="session")
def a6000():
    return lab_host("a6000")


@pytest.fixture(scope="session")
def blackwell():
    return lab_host("blackwell")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):  # noqa: ARG001 (pytest's hook signature)
    """A failed assertion about a service comes with that service's journal."""
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    for name in sorted(set(hosts_in("sglang_hosts"))):
        journal = testinfra.get_host("podman://" + name).run(
            "journalctl -u %s -n 80 --no-pager -o short-precise" % UNIT)
        report.sections.append(("journal of %s on %s" % (UNIT, name), journal.stdout or journal.stderr))
