"""Fault-matrix rows on a host that already runs a hand-made SGLang unit (the incident's
`sglang-qwen.service`: NEXTN on port 30000, enabled, healthy, with a drop-in and an
environment file of its own). Each row asserts that the host ends healthy, that the
hand-made unit is intact (its files byte for byte, with their modes) wherever it should be,
and that the cause and the play's outcome are right.

The rows run in order on one worker (they share the worker's hosts with nothing else).
"""
from __future__ import annotations

import pytest

from tests.integration.ansible_run import run_playbook
from tests.integration.deploying import UNIT, deploy, healthy, recap, report, reset_service

pytestmark = pytest.mark.xdist_group("adoption")

HANDMADE = "sglang-qwen.service"
FILES = {"unit": "/etc/systemd/system/sglang-qwen.service",
         "dropin": "/etc/systemd/system/sglang-qwen.service.d/override.conf",
         "env": "/etc/default/sglang-qwen"}
# What somebody set up by hand before the collection: the stand-in in place of
# sglang.launch_server, found through the environment file (PYTHONPATH), as the class runs it.
ENVELOPES = {
    "ct129": "--tp-size 2 --mem-fraction-static 0.88 --context-length 131072 --max-running-requests 16 "
             "--chunked-prefill-size 4096 --cuda-graph-max-bs-decode 16 --attention-backend flashinfer",
    "ct200": "--tp-size 8 --mem-fraction-static 0.85 --context-length 131072 --max-running-requests 64 "
             "--chunked-prefill-size 8192 --cuda-graph-max-bs-decode 64 --attention-backend triton",
}
UNIT_TEXT = """# Qwen3.6 with NEXTN, set up by hand in March (ask Dana)
[Unit]
Description=Qwen3.6-27B NEXTN
After=network-online.target

[Service]
EnvironmentFile=/etc/default/sglang-qwen
ExecStart=/usr/bin/python3 -m sglang_sim --model-path /models/Qwen3.6-27B %s --speculative-algorithm NEXTN \\
    --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4 --host 0.0.0.0 --port 30000
Restart=always
RestartSec=5

[Install]
WantedBy=multi-user.target
"""
DROPIN = "[Service]\n# CUDA_DEVICE_ORDER as nvidia-smi numbers the cards\nEnvironment=CUDA_DEVICE_ORDER=PCI_BUS_ID\n"
ENV_TEXT = "PYTHONPATH=/opt/inferops-lab\nHF_HUB_OFFLINE=1\n# HF_TOKEN=hf_not_a_real_token\n"
ADOPT = {"sglang_service_adopt": HANDMADE}


def handmade_fingerprint(host) -> dict:
    """The hand-made unit's files: bytes, mode and owner of each."""
    return dict((name, host.run("stat -c '%%a %%U:%%G' %s && sha256sum < %s" % (path, path)).stdout)
                for name, path in FILES.items())


def unit_state(host, unit) -> tuple:
    shown = host.show(unit, "ActiveState", "UnitFileState")
    return shown["ActiveState"], shown["UnitFileState"]


# The unit of the process listening on port 30000 (0x7530), as the host's /proc says.
LISTENER_UNIT = r"""import os, re
inodes = set(l.split()[9] for l in open("/proc/net/tcp").read().splitlines()[1:]
             if l.split()[1].endswith(":7530") and l.split()[3] == "0A")
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        fds = [os.readlink("/proc/%s/fd/%s" % (pid, fd)) for fd in os.listdir("/proc/%s/fd" % pid)]
    except OSError:
        continue
    if any(fd[8:-1] in inodes for fd in fds if fd.startswith("socket:[")):
        lines = open("/proc/%s/cgroup" % pid).read().splitlines()
        line = [l for l in lines if ":name=systemd:" in l] or lines
        print(re.findall(r"[^/]+[.]service", line[0])[-1])
        break
"""


def serves_from(host, unit) -> bool:
    """Healthy on port 30000, answered by the unit's own process."""
    return healthy(host) and host.run(["python3", "-c", LISTENER_UNIT]).stdout.strip() == unit


@pytest.fixture
def handmade(lab):
    """Each host: no managed service, and the hand-made unit serving NEXTN, enabled, healthy."""
    for name, host in lab.items():
        reset_service(host)
        host.put(FILES["unit"], UNIT_TEXT % ENVELOPES[name])
        host.put(FILES["dropin"], DROPIN)
        host.put(FILES["env"], ENV_TEXT, mode="0600")
        host.run("systemctl daemon-reload && systemctl reset-failed %s 2>/dev/null; systemctl enable --now %s"
                 % (HANDMADE, HANDMADE))
    for host in lab.values():
        host.wait_for(lambda h=host: healthy(h), 60, interval=0.3, what="the hand-made server")
    yield lab
    for host in lab.values():
        host.run("systemctl disable --now %s 2>/dev/null; rm -rf %s %s.d %s; systemctl daemon-reload; "
                 "systemctl reset-failed %s 2>/dev/null; true" % (HANDMADE, FILES["unit"], FILES["unit"],
                                                                  FILES["env"], HANDMADE), check=False)
        reset_service(host)


def test_a_hand_made_unit_on_the_port_not_adopted_is_refused_and_left_alone(handmade):
    host = handmade["ct200"]
    before, running = handmade_fingerprint(host), host.show(HANDMADE, "InvocationID")
    proc = deploy("deploy_nextn", host)
    said = " ".join(proc.stdout.split())
    assert proc.returncode != 0 and "port 30000 is held by PID" in said and "unit %s" % HANDMADE in said, said[-2000:]
    assert "adopt it as the known-good service (sglang_service_adopt: %s" % HANDMADE in said
    assert "Nothing was changed" in said
    assert host.run("test -e %s" % UNIT, check=False).returncode == 1, "no managed unit written"
    assert host.run("test -e /etc/sglang/known-good", check=False).returncode == 1
    assert host.run("test -e /run/inferops-sglang/deploy.lock", check=False).returncode == 1
    assert handmade_fingerprint(host) == before and host.show(HANDMADE, "InvocationID") == running
    assert unit_state(host, HANDMADE) == ("active", "enabled") and serves_from(host, HANDMADE)


def test_adopted_on_a6000_ddtree_fails_and_the_hand_made_unit_comes_back(handmade):
    """DDTree does not fit on the A6000 class (kv_pool_oom): the hand-made unit the deploy
    adopted comes back under its own name, byte for byte, enabled and healthy."""
    host = handmade["ct129"]
    before = handmade_fingerprint(host)
    # The preflight's estimate is a lower bound; skip it so SGLang itself meets the limit.
    proc = deploy("deploy_ddtree", host, sglang_check_fit=False, **ADOPT)
    rep = report(host)
    assert proc.returncode != 0 and rep["outcome"] == "rolled_back" and rep["cause"] == "kv_pool_oom", rep["diagnosis"]
    assert "rolled back to NEXTN (%s, adopted): healthy in" % HANDMADE in rep["diagnosis"]
    assert rep["rollback"]["state"] == "healthy" and rep["rollback"]["unit"] == HANDMADE
    assert handmade_fingerprint(host) == before
    assert unit_state(host, HANDMADE) == ("active", "enabled") and serves_from(host, HANDMADE)
    assert unit_state(host, "sglang.service") == ("inactive", "disabled"), "one server at boot, not two"
    kept = host.run("ls /etc/sglang/known-good").stdout.split()
    assert sorted(kept) == ["meta.json", "override.conf", "sglang-qwen", HANDMADE]
    # A re-run does not crash DDTree again, and leaves the hand-made unit serving.
    again = deploy("deploy_ddtree", host, sglang_check_fit=False, **ADOPT)
    assert report(host)["outcome"] == "not_retried" and again.returncode != 0
    assert unit_state(host, HANDMADE) == ("active", "enabled") and handmade_fingerprint(host) == before


def test_adopted_on_blackwell_ddtree_is_kept_and_rollback_restores_the_hand_made_unit(handmade):
    host = handmade["ct200"]
    before = handmade_fingerprint(host)
    proc = deploy("deploy_ddtree", host, **ADOPT)
    rep = report(host)
    assert proc.returncode == 0 and rep["outcome"] == "deployed", rep["diagnosis"]
    assert rep["perf"]["baseline"]["variant"] == "NEXTN", "measured against the hand-made NEXTN before the switch"
    assert unit_state(host, HANDMADE) == ("inactive", "disabled"), "kept on the host, not deleted, not started at boot"
    assert handmade_fingerprint(host) == before
    assert unit_state(host, "sglang.service") == ("active", "enabled") and serves_from(host, "sglang.service")
    assert "DDTREE" in host.run(["cat", UNIT]).stdout

    # The same deploy again is converged, the hand-made unit adopted already.
    again = deploy("deploy_ddtree", host, **ADOPT)
    assert again.returncode == 0 and recap(again, host)["changed"] == "0", again.stdout[-3000:]

    back = run_playbook("playbooks/rollback.yml", limit=host.name)
    assert back.returncode == 0, back.stdout[-3000:]
    assert "ct200: rolled back to NEXTN (%s, adopted): healthy in" % HANDMADE in back.stdout
    assert handmade_fingerprint(host) == before
    assert unit_state(host, HANDMADE) == ("active", "enabled") and serves_from(host, HANDMADE)
    assert unit_state(host, "sglang.service") == ("inactive", "disabled")
    alone = run_playbook("playbooks/rollback.yml", limit=host.name)
    assert alone.returncode == 0 and recap(alone, host)["changed"] == "0", alone.stdout[-3000:]
    assert "already serves, healthy: left alone" in alone.stdout


@pytest.mark.parametrize("fix, words", [
    ("systemctl stop sglang-qwen.service", "sglang-qwen.service is inactive/dead: only a running, healthy server"),
    ("printf '[Service]\\nExecStart=/usr/bin/python3 -m http.server 30000 --bind 127.0.0.1\\n' > %s && "
     "systemctl daemon-reload && systemctl restart sglang-qwen.service && sleep 1" % FILES["unit"],
     "sglang-qwen.service runs no SGLang server"),
    ("systemctl disable --now sglang-qwen.service && rm %s && systemctl daemon-reload" % FILES["unit"],
     "the host has no such unit (not-found)"),
], ids=["not running", "not an SGLang server", "missing"])
def test_a_unit_that_cannot_be_adopted_is_refused_before_any_change(handmade, fix, words):
    host = handmade["ct129"]
    host.run(fix)
    proc = deploy("deploy_nextn", host, **ADOPT)
    said = " ".join(proc.stdout.split())
    assert proc.returncode != 0 and words in said and "Nothing was changed" in said, said[-2000:]
    assert host.run("test -e %s" % UNIT, check=False).returncode == 1
    assert host.run("test -e /run/inferops-sglang/deploy.lock", check=False).returncode == 1
