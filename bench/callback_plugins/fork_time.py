# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bench's count of controller forks held: for each host and task, the time from the
worker's start (v2_runner_on_start, sent as ansible-playbook forks the worker) to its result,
summed per task and in all, written as JSON to $INFEROPS_FORK_TIME when the play ends.

A worker is a fork of ansible-playbook that lives until its task ends on its host: a health
gate that waits five minutes in the task holds one for five minutes, which AWX counts against
its execution node's capacity (forks) the whole time."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: fork_time
type: aggregate
short_description: Sum the time each worker (fork) of ansible-playbook lives, per task
description:
  - Writes {"total", "tasks", "longest"} as JSON to the file named by INFEROPS_FORK_TIME when the run ends.
options: {}
"""

import json
import os
import time

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "fork_time"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super(CallbackModule, self).__init__()
        self.started = {}
        self.held = {}

    def v2_runner_on_start(self, host, task):
        self.started[(host.get_name(), task._uuid)] = (time.monotonic(), task.get_name())

    def _ended(self, result, **kwargs):
        key = (result._host.get_name(), result._task._uuid)
        if key in self.started:
            since, name = self.started.pop(key)
            self.held[name] = self.held.get(name, 0.0) + time.monotonic() - since

    v2_runner_on_ok = v2_runner_on_failed = v2_runner_on_skipped = v2_runner_on_unreachable = _ended

    def v2_playbook_on_stats(self, stats):
        path = os.environ.get("INFEROPS_FORK_TIME")
        if not path:
            return
        longest = sorted(self.held.items(), key=lambda kv: -kv[1])[:8]
        with open(path, "w") as fh:
            json.dump({"total": round(sum(self.held.values()), 1), "tasks": len(self.held),
                       "longest": [[name, round(seconds, 1)] for name, seconds in longest]}, fh)
