# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of deploy_lock: who is taking the lock, and is a holder still alive.

The run is identified by the `ansible-playbook` process (the parent of this worker) and its
start time, so the same run re-takes its own lock, and a holder from this controller whose
process is gone is known to be dead, not merely old.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import socket

from ansible.plugins.action import ActionBase
from ansible_collections.inferops.sglang.plugins.module_utils import guard
from ansible_collections.inferops.sglang.plugins.plugin_utils.run import run_id, run_owner

MODULE = "inferops.sglang.deploy_lock"


def holder_is_dead(holder):
    """True only when we can tell: the holder ran on this controller and its process is gone."""
    if holder.get("controller") != socket.gethostname() or not holder.get("pid"):
        return False
    # A process that is gone has no start time: its run id then names none.
    return run_id(int(holder["pid"])) != holder.get("run_id")


class ActionModule(ActionBase):
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = dict(self._task.args)
        args["owner"] = run_owner(task_vars)
        answer = self._execute_module(MODULE, module_args=args, task_vars=task_vars)
        holder = answer.get("held_by")
        if answer.get("failed") and holder:
            dead = holder_is_dead(holder)
            # (A run that went away after it handed its restore to the host: its switch is over.)
            ended = answer.get("ended_by_guard")
            if dead and (args.get("break_stale") or ended):
                answer = self._execute_module(MODULE, module_args=dict(args, force=True), task_vars=task_vars)
                answer["stale_reason"] = "its ansible-playbook process %s is gone" % holder.get("pid")
                if ended:
                    answer["stale_reason"] += "; the host's guard ended its switch: %s" % guard.said(ended)
            else:
                answer["msg"] = describe(task_vars.get("inventory_hostname"), holder, answer.get("age"), dead,
                                         args.get("break_stale"))
        result.update(answer)
        if not result.get("failed"):
            # Public, so a later role knows whether another run (or this one's earlier deploy,
            # once released) changed the host meanwhile.
            result["ansible_facts"] = {"deploy_lock": {
                "path": args.get("path") or "/run/inferops-sglang/deploy.lock", "broken": bool(answer.get("broken")),
                "last_released": answer.get("last_released")}}
        return result


def describe(host, holder, age, dead, break_stale):
    who = "%s@%s (ansible-playbook pid %s, %s)" % (
        holder.get("user"), holder.get("controller"), holder.get("pid"), holder.get("playbook"))
    text = "%s is locked by another deploy: %s since %s (%s s ago)." % (host, who, holder.get("since"), age)
    if dead:
        return text + " That process is gone: the lock is stale, and that deploy may have stopped mid-switch. " \
                      "playbooks/status.yml says what the host runs (UNVERIFIED: a switch never confirmed; the " \
                      "host's guard restores the known-good by itself at its deadline) and playbooks/rollback.yml " \
                      "brings the known-good back now. Re-run with -e sglang_break_lock=true to break it."
    if break_stale:
        return text + " It is still running (or ran on another controller and is younger than max_age): " \
                      "not breaking a live lock."
    return text + " Wait for it to finish; if it is dead, re-run with -e sglang_break_lock=true."
