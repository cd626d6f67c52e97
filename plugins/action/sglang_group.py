# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of sglang_group: which node of its server group a host is, and whether the
group is whole in this run (server_group). The documentation is plugins/modules/sglang_group.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleActionFail
from ansible_collections.inferops.sglang.plugins.module_utils import server_group
from ansible_collections.inferops.sglang.plugins.plugin_utils.decision import DecisionAction
from ansible_collections.inferops.sglang.plugins.plugin_utils.run import run_id


class ActionModule(DecisionAction):
    def decide(self, args, task_vars):
        if args["plans"] is not None and args["ready"] is not None:
            raise AnsibleActionFail("parameters are mutually exclusive: plans|ready (say the node is ready in one task, "
                                    "check the others in the next)")
        host = task_vars.get("inventory_hostname")
        try:
            group = server_group.membership(args["name"], args["nodes"], host, args["dist_init_addr"])
        except server_group.GroupError as exc:
            raise AnsibleActionFail(str(exc))
        problem = server_group.whole_problem(group, args["in_play"], args["batch"], args["active"]) or \
            server_group.restart_problem(group, args["plans"], args["variant"], run_id())
        if problem:
            raise AnsibleActionFail(problem)
        if args["ready"] is not None:
            # Said by a task of its own, which the nodes run together just before the check:
            # a node that failed before it never says it.
            return dict(group, changed=False, ansible_facts={"sglang_node_ready": args["ready"]})
        return dict(group, changed=False)
