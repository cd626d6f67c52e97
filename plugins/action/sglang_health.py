# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runs the sglang_health module in slices and prints progress between them.

A module cannot write to the terminal while it runs, and a 27B model can take ten minutes
to load: without this, the person at the terminal sees nothing until the verdict. Each
slice carries the judged invocation, the restart count and the time already waited
forward, so the verdict and its timing are those of one long wait.

With `async` and `poll: 0` the module runs once, on the host, for the whole wait, and the task
returns at once: inferops.sglang.async_progress then waits for the verdict on the host and prints
the time spent (the role does this, so that no controller fork is held through a long start).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()

MODULE = "inferops.sglang.sglang_health"


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = dict(self._task.args)
        interval = float(args.get("progress_interval", 15) or 0)
        if self._task.async_val and not self._task.check_mode:
            result.update(self._execute_module(MODULE, module_args=args, task_vars=task_vars,
                                               wrap_async=not self._connection.has_native_async))
            return result
        if self._task.check_mode or interval <= 0:
            result.update(self._execute_module(MODULE, module_args=args, task_vars=task_vars))
            return result

        host = task_vars.get("inventory_hostname", "?")
        started = time.monotonic()
        args["wait_slice"] = interval
        while True:
            args["waited"] = time.monotonic() - started
            answer = self._execute_module(MODULE, module_args=args, task_vars=task_vars)
            if answer.get("state") != "waiting":
                break
            args["since"] = answer["invocation_id"]
            args["baseline_restarts"] = answer["baseline_restarts"]
            args["healthy_at"] = answer.get("healthy_at")
            if answer.get("healthy_at") is not None:
                display.display("  %s: %s healthy after %d s, making sure it stays up (settle %s s)" % (
                    host, args.get("unit"), answer["healthy_at"], args.get("settle")))
                continue
            display.display("  %s: %s still starting after %d s, phase %s (health: %s)" % (
                host, args.get("unit"), answer.get("elapsed", 0), answer.get("phase"),
                answer.get("http_status") or answer.get("http_error") or "not probed yet"))
        result.update(answer)
        return result
