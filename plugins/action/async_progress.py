# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Waits for an async task (`async: N`, `poll: 0`) and prints what it does and for how long.

`poll: N` on a long task prints nothing until it ends, and an `until` loop over async_status
prints a countdown of retries, not the time spent: a release build installing torch sits
silent for minutes. This prints one status line each `interval`; the job's own result is the task's.

The wait happens on the host: each poll is one run of inferops.sglang.async_wait there, which
watches the job's status file and answers the moment the job ends or after `interval` seconds.
A measurement of 3 s is seen done within a fifth of a second of its end, and a build of minutes
costs the controller one module run each `interval` (a loop of async_status and a sleep here
would see a job end only at its next poll, up to an `interval` late, unless it polled often).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible.errors import AnsibleActionFail
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()

# async_status's and async_wait's own keys, not the job's result.
JOB_KEYS = ("ansible_job_id", "started", "finished", "results_file", "waited", "_ansible_suppress_tmpdir_delete")


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
        async_dir = self._remote_expand_user(self.get_shell_option("async_dir", default="~/.ansible_async"))
        wait_args = {"jid": job["ansible_job_id"], "async_dir": async_dir}
        while True:
            waited = time.monotonic() - started
            if timeout and waited >= timeout:
                self._execute_module(module_name="ansible.legacy.async_status", task_vars=task_vars, module_args={
                    "jid": job["ansible_job_id"], "mode": "cleanup", "_async_dir": async_dir})
                result.update(failed=True, msg="%s: %s did not finish within %s (job %s, still running on the host)"
                              % (host, what, minutes(timeout), job["ansible_job_id"]), elapsed=round(waited, 1))
                return result
            if time.monotonic() - said >= interval:
                said = time.monotonic()
                display.display("  %s: %s, %s so far" % (host, what, minutes(said - started)))
            # On the host, until the next status line or the timeout, whichever comes first.
            wait = max(0.0, min(interval - (time.monotonic() - said), (timeout - waited) if timeout else interval))
            answer = self._execute_module(module_name="inferops.sglang.async_wait", task_vars=task_vars,
                                          module_args=dict(wait_args, wait=wait))
            if answer.get("finished") or answer.get("failed") and not answer.get("started"):
                break
        answer = dict((k, v) for k, v in answer.items() if k not in JOB_KEYS)
        result.update(answer)
        result["elapsed"] = round(time.monotonic() - started, 1)
        if boolean(args.get("report_done", True), strict=False) and result["elapsed"] >= interval:
            display.display("  %s: %s %s after %s" % (host, what, "failed" if answer.get("failed") else "done",
                                                      minutes(result["elapsed"])))
        return result
