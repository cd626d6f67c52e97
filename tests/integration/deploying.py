"""Deploy helpers for the lab tests: run a playbook on one host, read its report, ask the host."""
from __future__ import annotations

import json
import subprocess

from lab.labctl import RESET_SERVICE
from tests.integration.ansible_run import run_playbook
from tests.integration.labhost import REPORTS

UNIT = "/etc/systemd/system/sglang.service"


def reset_service(host):
    """A host with no SGLang service: unit, state and reports gone (releases are kept)."""
    host.run(RESET_SERVICE)
    subprocess.run(["rm", "-rf", str(REPORTS / host.name)], check=True)


def report(host) -> dict:
    return json.loads((REPORTS / host.name / "latest.json").read_text())


def invocation(host) -> str:
    return host.show("sglang.service", "InvocationID")["InvocationID"]


def deploy(playbook, host, **extra_vars):
    return run_playbook("playbooks/%s.yml" % playbook, limit=host.name, extra_vars=extra_vars or None)


def recap(proc, host) -> dict:
    line = next(l for l in proc.stdout.splitlines() if l.startswith(host.name + " ") and "ok=" in l)
    return dict(part.split("=") for part in line.split(":", 1)[1].split())


def healthy(host) -> bool:
    return host.run("python3 -c \"import urllib.request as u; print(u.urlopen('http://127.0.0.1:30000/health', "
                    "timeout=10).status)\"", check=False).stdout.strip() == "200"
