"""sglang_canary's action plugin, run as a task runs it: its arguments checked against its
module's DOCUMENTATION and its rules (a host of the rest, or a rung of a ladder, never both), then
the decision (tests/unit/plugins/module_utils/test_canary.py's tables) for the task's host."""
from __future__ import annotations

from unittest.mock import MagicMock

import pytest

from ansible.errors import AnsibleError

from ansible_collections.inferops.sglang.plugins.action.sglang_canary import ActionModule

KEPT = {"outcome": "deployed", "cause": None, "variant": "dflash", "deploy": "deploy-2", "ok": True}


def run(**args):
    task = MagicMock(args=args, async_val=0, check_mode=False, diff=False)
    action = ActionModule(task, MagicMock(), MagicMock(check_mode=False), loader=None, templar=None,
                          shared_loader_obj=None)
    return action.run(task_vars={"inventory_hostname": "ct130"})


def test_a_host_of_the_rest_deploys_what_its_canary_kept():
    got = run(deploy_id="deploy-2", class_canary="ct129", report=KEPT, variant="ddtree")
    assert (got["go"], got["variant"], got["changed"]) == (True, "dflash", False), got
    assert got["msg"] == "ct130: class canary ct129 deployed" and "elapsed" in got


def test_a_rung_after_a_kept_one_does_not_deploy():
    got = run(deploy_id="deploy-2", rung=1, report=KEPT)
    assert (got["go"], got["preceded_by"]) == (False, ""), got


@pytest.mark.parametrize("args, error", [
    ({"deploy_id": "d", "class_canary": "ct129", "rung": 1, "variant": "x"}, "mutually exclusive: class_canary|rung"),
    ({"deploy_id": "d"}, "one of the following is required: class_canary, rung"),
    ({"deploy_id": "d", "class_canary": "ct129"}, "missing parameter(s) required by 'class_canary': variant"),
    ({"class_canary": "ct129", "variant": "x"}, "missing required arguments: deploy_id"),
    ({"deploy_id": "d", "rung": -1}, "rung must be 0 or more"),
], ids=["a host of the rest and a rung at once", "neither", "a host of the rest without its variant",
        "no deploy id", "a rung below 0"])
def test_bad_arguments_say_what_to_change(args, error):
    # (The task fails with the error: ansible-core's task executor turns it into a failed result.)
    with pytest.raises(AnsibleError) as failed:
        run(**args)
    assert error in str(failed.value), failed.value
