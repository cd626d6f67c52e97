# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of sglang_rollback_plan: one read of the host (the sglang_facts module) and
the decision (deploy_plan.rollback_plan). The documentation is plugins/modules/sglang_rollback_plan.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleActionFail
from ansible_collections.inferops.sglang.plugins.action.sglang_plan import FACTS_MODULE
from ansible_collections.inferops.sglang.plugins.module_utils import deploy_plan, service_config
from ansible_collections.inferops.sglang.plugins.plugin_utils.decision import DecisionAction


class ActionModule(DecisionAction):
    def decide(self, args, task_vars):
        unit_path = service_config.paths(args["unit"], args["state_dir"])["unit"]
        answer = self.call(FACTS_MODULE, {"unit": args["unit"], "url": "http://%s:%s/health" % (args["host"], args["port"]),
                                          "state_dir": args["state_dir"], "files": [unit_path]}, task_vars)
        if answer.get("failed"):
            return answer
        facts = (answer.get("ansible_facts") or {}).get("sglang") or {}
        try:
            decided = deploy_plan.rollback_plan(facts, task_vars.get("inventory_hostname"), args["unit"], unit_path,
                                                args["state_dir"])
        except deploy_plan.InputError as exc:
            raise AnsibleActionFail(str(exc))
        # (Left alone, nothing was restored; what the host's guard did before is said first.)
        return dict(decided, restored=False, guard=facts.get("guard"), changed=False, ansible_facts={"sglang": facts})
