"""sglang_state's record of what runs (deployed.json) against the host's watch: a watch that
restored the known-good over this very configuration keeps the known-good's record."""
from __future__ import annotations

import json
from unittest.mock import MagicMock

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import guard
from ansible_collections.inferops.sglang.plugins.modules import sglang_state

DEPLOYED = {"variant": "ddtree", "config_id": "c0ffee"}


@pytest.mark.parametrize("watch, kept", [
    (None, False),
    ({"config_id": "c0ffee", "outcome": None}, False),
    ({"config_id": "c0ffee", "outcome": "restored", "ended_why": "cuda_error on TP0"}, True),
    ({"config_id": "d00d", "outcome": "restored"}, False),
], ids=["no watch", "watching it", "the watch restored it already", "another configuration's watch restored"])
def test_the_record_of_what_runs_yields_to_a_restore_the_watch_made(tmp_path, watch, kept):
    (tmp_path / "deployed.json").write_text(json.dumps({"variant": "nextn"}))
    if watch:
        guard.write_json(str(tmp_path / guard.WATCH), watch)
    module = MagicMock(check_mode=False, _diff=False)
    got = sglang_state.record_deployed(module, {"state_dir": str(tmp_path), "deployed": DEPLOYED})
    written = json.loads((tmp_path / "deployed.json").read_text())
    assert written["variant"] == ("nextn" if kept else "ddtree") and got["changed"] is not kept
    assert ("its record stays" in got.get("msg", "")) is kept
