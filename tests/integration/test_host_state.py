"""sglang_state and sglang_facts on a real lab host: the known-good snapshot taken before the
unit is replaced (one call), found again after a snapshot that stopped between its two
renames, restored in check mode without a write; and deploy_lock's release time, which tells
a deploy whether another run finished on the host after it read it."""
from __future__ import annotations

import json
import time

import pytest

from tests.integration.ansible_run import run_module, run_playbook

STATE = "/opt/state-test/etc"
UNIT_DIR = "/opt/state-test/systemd"
UNIT = UNIT_DIR + "/sglang.service"
OLD_UNIT = "[Service]\nExecStart=/opt/sglang/releases/old/bin/python -m sglang.launch_server\n"
NEW_UNIT = "[Service]\nExecStart=/opt/sglang/releases/new/bin/python -m sglang.launch_server\n"


@pytest.fixture
def host(ct129):
    ct129.run("rm -rf /opt/state-test && mkdir -p %s %s && getent group sglang >/dev/null || groupadd -r sglang"
              % (STATE, UNIT_DIR))
    ct129.put(UNIT, OLD_UNIT)
    ct129.put(STATE + "/sglang.env", "PYTHONUNBUFFERED=1\n")
    ct129.put(STATE + "/secrets.yaml", '{"api-key": "old-key"}')
    yield ct129
    ct129.run("rm -rf /opt/state-test")


def state(args, check=False):
    return run_module("ct129", "inferops.sglang.sglang_state",
                      dict(args, state_dir=STATE, unit_dir=UNIT_DIR), check=check)


def facts():
    return run_module("ct129", "inferops.sglang.sglang_facts",
                      {"state_dir": STATE, "probe": False, "files": [UNIT]})["ansible_facts"]["sglang"]


def switch(**config):
    return state({"known_good": "snapshot", "files": [UNIT, STATE + "/sglang.env", STATE + "/secrets.yaml"],
                  "record": {"variant": "nextn", "has_secrets": True}, "config": config})


def test_the_running_service_is_kept_before_its_unit_is_replaced(host):
    res = switch(unit=NEW_UNIT, secrets='{"api-key": "new-key"}')
    assert res["changed"] and not res.get("failed"), res
    assert host.run(["cat", STATE + "/known-good/sglang.service"]).stdout == OLD_UNIT
    assert host.run(["cat", STATE + "/known-good/secrets.yaml"]).stdout == '{"api-key": "old-key"}'
    assert host.run(["cat", UNIT]).stdout == NEW_UNIT
    assert "new-key" not in json.dumps(res), "the secret never shows in the result"
    mode = host.run(["stat", "-c", "%a %U %G", STATE + "/secrets.yaml"]).stdout.split()
    assert mode == ["640", "root", "sglang"]
    known = facts()
    assert known["known_good"] is True and sorted(known["known_good_files"]) == ["secrets.yaml", "sglang.env",
                                                                                 "sglang.service"]
    record = dict(known["known_good_record"])
    assert record.pop("files") == known["known_good_files"], "meta.json names each file it keeps with its hash"
    assert record == {"variant": "nextn", "has_secrets": True}


def test_a_snapshot_that_cannot_be_taken_writes_nothing(host):
    host.run(["rm", STATE + "/sglang.env"])
    res = switch(unit=NEW_UNIT)
    assert res.get("failed") and "sglang.env missing" in res["msg"] and "nothing was written" in res["msg"]
    assert host.run(["cat", UNIT]).stdout == OLD_UNIT


def test_an_interrupted_snapshot_is_found_and_restored(host):
    switch(unit=NEW_UNIT)
    # The host stopped between `known-good -> known-good.prev` and `known-good.new -> known-good`.
    host.run("mv %s/known-good %s/known-good.prev && mkdir %s/known-good.new && echo half > %s/known-good.new/x"
             % ((STATE,) * 4))
    assert facts()["known_good_record"]["variant"] == "nextn"
    checked = state({"known_good": "restore"}, check=True)
    assert checked["changed"] and checked["present"] and UNIT in checked["changed_files"]
    assert host.run(["cat", UNIT]).stdout == NEW_UNIT, "check mode wrote nothing"
    res = state({"known_good": "restore"})
    assert res["changed"] and res["record"]["variant"] == "nextn"
    assert host.run(["cat", UNIT]).stdout == OLD_UNIT
    assert sorted(host.run(["ls", STATE]).stdout.split()) == ["deployed.json", "known-good", "secrets.yaml",
                                                              "sglang.env"]
    assert state({"known_good": "restore"})["changed"] is False


def test_conflicting_operations_are_refused_before_anything_is_written(host):
    res = state({"known_good": "restore", "config": {"unit": NEW_UNIT}})
    assert res.get("failed") and "give one of them" in res["msg"]
    res = state({"rolled_back": {"variant": "ddtree"}})
    assert res.get("failed") and "config_id" in res["msg"]
    assert host.run(["cat", UNIT]).stdout == OLD_UNIT


def test_deploy_lock_tells_when_a_run_last_released_it(ct129, tmp_path):
    ct129.run("rm -rf /run/state-test")
    playbook = tmp_path / "lock.yml"
    playbook.write_text(
        "- hosts: ct129\n  gather_facts: false\n  module_defaults:\n"
        "    inferops.sglang.deploy_lock: {path: /run/state-test/deploy.lock}\n  tasks:\n"
        "    - {inferops.sglang.deploy_lock: {}, register: first}\n"
        "    - inferops.sglang.deploy_lock: {state: absent}\n"
        "    - {inferops.sglang.deploy_lock: {}, register: again}\n"
        "    - inferops.sglang.deploy_lock: {state: absent}\n"
        "    - ansible.builtin.debug: {msg: \"{{ [first.last_released, again.last_released] }}\"}\n")
    before = time.time()
    proc = run_playbook(str(playbook), json_output=True)
    assert proc.returncode == 0, proc.stdout[-3000:]
    first, again = json.loads(proc.stdout)["plays"][0]["tasks"][-1]["hosts"]["ct129"]["msg"]
    assert first is None, "no run released it since the host started"
    assert before - 5 < again <= time.time() + 5
    ct129.run("rm -rf /run/state-test")
