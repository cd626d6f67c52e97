"""deploy_lock's word on a lock whose holder went away after it handed its switch's restore to
the host: the guard's result names that run's lock and nothing is pending any more."""
from __future__ import annotations

import json

import pytest

from ansible_collections.inferops.sglang.plugins.modules import deploy_lock

HOLDER = {"run_id": "ctl:4242:99", "pid": 4242}
ENDED = {"pending": {"config_id": "c0ffee", "lock": {"run_id": "ctl:4242:99"}}, "reason": "rollback",
         "healthy": True, "time": 1796300040.0}


@pytest.mark.parametrize("files, ended", [
    ({"guard.json": ENDED}, True),
    ({"guard.json": ENDED, "pending.json": {"config_id": "c0ffee"}}, False),
    ({"guard.json": dict(ENDED, pending={"config_id": "c0ffee", "lock": {"run_id": "ctl:1:1"}})}, False),
    ({}, False),
], ids=["the guard ended the holder's switch", "its switch still pending", "the guard ended another run's switch",
        "the guard never acted"])
def test_ended_by_guard(tmp_path, files, ended):
    for name, data in files.items():
        (tmp_path / name).write_text(json.dumps(data))
    got = deploy_lock.ended_by_guard(str(tmp_path), HOLDER)
    assert (got == ENDED) is ended and (got is None) is (not ended)
    assert deploy_lock.ended_by_guard(None, HOLDER) is None
    assert deploy_lock.ended_by_guard(str(tmp_path), {"run_id": None}) is None
