# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Waits for an async task (`async: N`, `poll: 0`) and prints what it does and for how long.

`poll: N` on a long task prints nothing until it ends, and an `until` loop over async_status
prints a countdown of retries, not the time spent: a release build installing torch sits
silent for minutes. This polls the job with ansible.builtin.async_status every `interval`
seconds at most and prints one status line each `interval`; the job's own result is the task's.

It polls first after half a second and then twice as long each time, up to `interval` (the
back-off of community.docker's wait_for_state): a measurement of 3 s is seen done within about
a second of its end, not at the next `interval` (10 to 15 s later), while a build of minutes
is still polled once an `interval`, each poll costing the controller a module run.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible.errors import AnsibleActionFail
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()

# The first poll's delay; each next one waits twice as long, up to the task's `interval`.
FIRST_DELAY = 0.5
# async_status's own keys, not the job's result.
JOB_KEYS = ("ansible_job_id", "started", "finished", "results_file", "_ansible_suppress_tmpdir_delete")


def minutes(seconds):
    """'42 s' or '3 min 05 s'."""
    seconds = int(seconds)
    return "%d s" % seconds if seconds < 60 else "%d min %02d s" % divmod(seconds, 60)


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = False
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = self._task.args
        job = args.get("job")
        if not isinstance(job, dict):
            raise AnsibleActionFail("async_progress needs job, the registered result of a task with poll: 0")
        if "ansible_job_id" not in job or job.get("finished") or job.get("skipped"):
            # Ran without async (check mode, async 0) or was skipped: its result is the answer.
            result.update(dict((k, v) for k, v in job.items() if not k.startswith("_ansible")))
            return result
        interval = max(0.5, float(args.get("interval", 15) or 15))
        timeout = float(args.get("timeout", 0) or 0)
        what = args.get("what") or "the task"
        host = task_vars.get("inventory_hostname", "?")
        started = said = time.monotonic()
        delay = FIRST_DELAY
        status_args = {"jid": job["ansible_job_id"], "mode": "status",
                       "_async_dir": self._remote_expand_user(self.get_shell_option("async_dir", default="~/.ansible_async"))}
        while True:
            waited = time.monotonic() - started
            answer = self._execute_module(module_name="ansible.legacy.async_status", module_args=status_args,
                                          task_vars=task_vars)
            if answer.get("finished") or answer.get("failed") and not answer.get("started"):
                break
            if timeout and waited >= timeout:
                status_args["mode"] = "cleanup"
                self._execute_module(module_name="ansible.legacy.async_status", module_args=status_args,
                                     task_vars=task_vars)
                result.update(failed=True, msg="%s: %s did not finish within %s (job %s, still running on the host)"
                              % (host, what, minutes(timeout), job["ansible_job_id"]), elapsed=round(waited, 1))
                return result
            if time.monotonic() - said >= interval:
                said = time.monotonic()
                display.display("  %s: %s, %s so far" % (host, what, minutes(said - started)))
            time.sleep(min(delay, interval))
            delay *= 2
        answer = dict((k, v) for k, v in answer.items() if k not in JOB_KEYS)
        result.update(answer)
        result["elapsed"] = round(time.monotonic() - started, 1)
        if boolean(args.get("report_done", True), strict=False) and result["elapsed"] >= interval:
            display.display("  %s: %s %s after %s" % (host, what, "failed" if answer.get("failed") else "done",
                                                      minutes(result["elapsed"])))
        return result
