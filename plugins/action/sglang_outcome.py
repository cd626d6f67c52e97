# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of sglang_outcome: how the deploy ended after its gates
(deploy_plan.outcome); when they passed, the switch confirmed to the host's guard (the
sglang_guard module, state=disarmed); when it rolls back, the configuration's failure recorded
on the host (the sglang_state module), which is the task's change: its notify runs the rollback
handler. The documentation is plugins/modules/sglang_outcome.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible.errors import AnsibleActionFail
from ansible_collections.inferops.sglang.plugins.module_utils import deploy_plan, watch
from ansible_collections.inferops.sglang.plugins.plugin_utils.decision import DecisionAction

GUARD_MODULE = "inferops.sglang.sglang_guard"
STATE_MODULE = "inferops.sglang.sglang_state"


class ActionModule(DecisionAction):
    def decide(self, args, task_vars):
        the_plan = args["plan"]
        run = self.run_facts(args)
        if args.get("publish"):
            return self.publish(args, the_plan, run)
        ended = deploy_plan.outcome(the_plan, run)
        confirmed, fired = None, None
        guarded = deploy_plan.ran(args["guard"]) and not self._task.check_mode
        if guarded and ended["rollback"]:
            # A gate or a task may have failed because the host was gone past the guard's deadline
            # (frozen, unreachable): the guard restored the known-good then, so whatever the gates
            # saw after the thaw was that restore, and the guard's act is how the switch ended.
            fired = self.guard_fired(args, the_plan["config_id"], task_vars)
            if fired:
                ended = deploy_plan.outcome(the_plan, dict(run, guard_fired=fired))
        # (A try's switch stays pending: what brings the known-good back after it is the tune, or the guard.)
        if guarded and not ended["rollback"] and ended["cause"] != deploy_plan.GUARD_ACTED and not args.get("trial"):
            # (A server group's other nodes hold their guards until rank 0's confirms the group: guard_link.)
            group = args.get("server_group") or {}
            confirmed = self.call(GUARD_MODULE, dict({"state": "disarmed", "unit": args["unit"],
                                                      "state_dir": args["state_dir"], "config_id": the_plan["config_id"],
                                                      "hold": bool(group) and not group.get("face")},
                                                     **self.watched(args, ended)), task_vars)
            if confirmed.get("failed"):
                return confirmed
            if confirmed.get("fired"):
                # The guard's deadline came first: it restored the known-good; nothing to confirm.
                fired = confirmed["fired"]
                ended = deploy_plan.outcome(the_plan, dict(run, guard_fired=fired))
        recorded = self.record_rollback(args, ended, task_vars) if ended["rollback"] else None
        if recorded and recorded.get("failed"):
            return recorded
        # The decision is the change: a rollback (its record written here, its restore the handler
        # this task notifies). A confirmation is said in `confirmed`: like the deploy lock, the
        # guard lives only for the switch.
        # (`guard_restored`: the host's guard restored the known-good of this switch already, as its
        # failure's restore or at its deadline. A rollback then only says so: restore.yml must not
        # stop a server group's node the guard brought back, for the guard does not start it twice.)
        return dict(ended, time=run["now"], changed=bool(ended["rollback"]), guard_restored=bool(fired),
                    confirmed=deploy_plan.task_result(confirmed) if confirmed else None)

    @staticmethod
    def watched(args, ended):
        """The confirmation's watch after the gates (sglang_guard's watch), with the speed limit's
        figures from this deploy's performance gate; {} when none is asked."""
        given = args.get("watch") or {}
        if not given or float(given.get("duration") or 0) <= 0:
            return {}
        # (Its /metrics only when the server exports them: SGLang's --enable-metrics.)
        exported = "--enable-metrics" in (args["plan"].get("argv") or [])
        return {"watch": dict(given, metrics=exported, baseline=watch.baseline_of(ended.get("perf")))}

    def record_rollback(self, args, ended, task_vars):
        """The rolled-back configuration recorded on the host before its restore (so a re-run
        does not crash it again, or, `retry`, tries it again): sglang_state's answer."""
        record = ended["record"]
        return self.call(STATE_MODULE, {"state_dir": args["state_dir"], "rolled_back": record["rolled_back"],
                                        "config_id": record["config_id"]}, task_vars)

    @staticmethod
    def publish(args, the_plan, run):
        """A node of a server group says how its own gates ended (its sglang_node_outcome fact),
        for every node's decision after it; nothing is confirmed yet."""
        if not args["server_group"]:
            raise AnsibleActionFail("publish: true needs server_group (sglang_group's result)")
        ended = deploy_plan.outcome(the_plan, dict(run, group=None))
        word = deploy_plan.node_word(args["server_group"], ended, args["variant"], time.time(), run.get("link"))
        return {"changed": False, "word": word, "ansible_facts": {"sglang_node_outcome": word}}

    def guard_fired(self, args, config_id, task_vars):
        """The guard's result when it already acted on this switch, read without touching it (the
        rollback still needs it armed). sglang_guard reads it under the guard's lock: a guard run
        restoring this switch now is waited for, since what failed then (a restart job its stop
        canceled) is its doing, and its result says how it ended."""
        answer = self.call(GUARD_MODULE, {"state": "read", "unit": args["unit"], "state_dir": args["state_dir"],
                                          "config_id": config_id}, task_vars)
        return answer.get("fired")

    def run_facts(self, args):
        """What the gates saw, in deploy_plan.outcome's words."""
        the_plan = args["plan"]
        return {
            "check_mode": bool(self._task.check_mode), "variant": args["variant"], "version": args["version"],
            "release": args["release"], "unit": args["unit"], "validation": args["validation"],
            "restarted": deploy_plan.ran(args["restart"]) is not None, "gate": args["gate"],
            "perf_gate": the_plan.get("perf_gate") or {}, "perf": args["perf"], "baseline": args["baseline"],
            "failure": args["failure"], "fail_on_rollback": args["fail_on_rollback"],
            "running_perf": the_plan.get("running_perf"), "server_args": the_plan.get("server_args"),
            "running_timeline": the_plan.get("running_timeline"),
            "now": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            # A server group's nodes: every node's word, judged together (deploy_plan.group_failure).
            "group": args.get("server_group") or None, "group_said": args.get("group_said"),
            "link": deploy_plan.ran(args.get("link")),
            "since": the_plan.get("started"),
            "trial": bool(args.get("trial")),
        }
