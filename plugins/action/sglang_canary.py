# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of sglang_canary: what a host deploys in a canary deploy (module_utils/canary.py
follow and rung). The documentation is plugins/modules/sglang_canary.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleActionFail
from ansible_collections.inferops.sglang.plugins.module_utils import canary
from ansible_collections.inferops.sglang.plugins.plugin_utils.decision import DecisionAction


class ActionModule(DecisionAction):
    _requires_connection = False
    RULES = {"mutually_exclusive": [["class_canary", "rung"]], "required_one_of": [["class_canary", "rung"]],
             "required_by": {"class_canary": "variant"}}

    def decide(self, args, task_vars):
        if args["rung"] is not None:
            if args["rung"] < 0:
                raise AnsibleActionFail("rung must be 0 or more (the ladder's first variant is 0), not %d" % args["rung"])
            return dict(canary.rung(args["rung"], args["report"], args["deploy_id"]), changed=False)
        said = canary.follow(task_vars.get("inventory_hostname"), args["class_canary"], args["report"],
                             args["deploy_id"], args["variant"])
        return dict(said, changed=False)
