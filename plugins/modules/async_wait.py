#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: async_wait
short_description: Wait on the host for an async job to end, for at most a given time
version_added: "0.2.0"
description:
  - Watches the status file of a job started with C(async) and C(poll) set to 0 and returns the
    moment the job ends, or after O(wait) seconds when it is still running. The answer is the one
    M(ansible.builtin.async_status) gives, and C(finished) says which.
  - M(inferops.sglang.async_progress) runs it for each poll, so that the waiting happens on the
    host, where the job runs, and not in the controller's sleep between two polls. A job is seen
    done within a fifth of a second of its end, however long the poll interval.
  - Never changes anything on the host.
author:
  - inferops maintainers (@inferops)
options:
  jid:
    description: The job's id (C(ansible_job_id) of the task started with C(poll) set to 0).
    type: str
    required: true
  wait:
    description: Seconds to wait for the job to end before answering that it still runs (V(0) answers at once).
    type: float
    default: 0
  async_dir:
    description: The folder of the host's async status files (the shell's C(async_dir)).
    type: path
    default: ~/.ansible_async
attributes:
  check_mode:
    support: full
    description: Reads the job's status file as it does without check mode.
  diff_mode:
    support: none
    description: Writes nothing, so it has no diff to show.
  platform:
    support: full
    platforms: posix
    description: Any host an async job runs on.
seealso:
  - module: inferops.sglang.async_progress
  - module: ansible.builtin.async_status
"""

EXAMPLES = r"""
- name: Start measuring the service
  inferops.sglang.sglang_bench:
    url: http://127.0.0.1:30000
  async: 3600
  poll: 0
  register: bench_job

- name: Wait up to 15 s on the host for the measurement to end
  inferops.sglang.async_wait:
    jid: "{{ bench_job.ansible_job_id }}"
    wait: 15
  register: bench_status
"""

RETURN = r"""
finished:
  description: Whether the job ended. When it did, the job's own result is returned as well.
  returned: always
  type: bool
  sample: true
started:
  description: Whether the job started (as M(ansible.builtin.async_status) says it).
  returned: while the job runs
  type: bool
  sample: true
ansible_job_id:
  description: The job's id.
  returned: always
  type: str
  sample: j771337504394.1234
waited:
  description: Seconds this run waited on the host.
  returned: always
  type: float
  sample: 14.9
"""

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule

# How often the status file is read while the job runs: far below a poll interval, and a
# read of one small file costs the host nothing measurable.
TICK = 0.2


def read_status(path):
    """The job's status file as async_status reads it: None while async_wrapper has not
    written it, else its parsed JSON (a dict; 'finished' absent means the job ended)."""
    try:
        with open(path) as fh:
            text = fh.read()
    except OSError:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None if not text.strip() else {"failed": True, "finished": True,
                                              "msg": "could not parse the job's status file: %s" % text[:200]}


def ended(status):
    return status is not None and ("started" not in status or bool(status.get("finished")))


def wait_for_job(path, wait, clock=time.monotonic, sleep=time.sleep):
    """(status, waited): the status once the job ended, or the last one read after `wait` s."""
    started = clock()
    while True:
        status = read_status(path)
        waited = clock() - started
        if ended(status) or waited >= wait:
            return status, waited
        sleep(min(TICK, wait - waited))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            jid=dict(type="str", required=True),
            wait=dict(type="float", default=0),
            async_dir=dict(type="path", default="~/.ansible_async"),
        ),
        supports_check_mode=True,
    )
    jid = module.params["jid"]
    path = os.path.join(module.params["async_dir"], jid)
    if not os.path.exists(path):
        module.fail_json(msg="could not find job %s (no %s on the host)" % (jid, path), ansible_job_id=jid,
                         started=True, finished=True, waited=0.0)
    status, waited = wait_for_job(path, max(0.0, module.params["wait"]))
    waited = round(waited, 1)
    if not ended(status):
        module.exit_json(ansible_job_id=jid, started=True, finished=False, results_file=path, waited=waited)
    answer = dict(status, ansible_job_id=jid, finished=True, waited=waited)
    answer.pop("started", None)
    answer.pop("invocation", None)
    if answer.get("failed"):
        answer.setdefault("msg", "the job failed")
        module.fail_json(**answer)
    module.exit_json(**answer)


if __name__ == "__main__":
    main()
