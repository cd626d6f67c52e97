#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: async_progress
short_description: Wait for an async task and show what it does and the time spent so far
version_added: "0.2.0"
description:
  - Waits for a task started with C(async) and C(poll) set to 0 and prints a status line each O(interval)
    (C(ct129 - installing sglang==0.5.23 from the package index, 2 min 10 s so far)), as the
    health wait does. A long step (a release build that installs torch, a performance
    measurement, a drain) no longer sits silent until it ends.
  - The task's result is the job's own (C(rc), C(stdout), C(stderr) and C(msg) of a
    M(ansible.builtin.command)); it fails when the job failed, so C(rescue) and
    C(ansible_failed_result) work as without async.
  - A job that did not run async (check mode, C(async) set to 0) or was skipped is returned as it is.
  - The wait happens on the host, not in a loop of the controller's. Each poll is one run of
    M(inferops.sglang.async_wait) there, which watches the job's status file and returns the moment the job ends, or after
    O(interval) seconds for the next status line. A job of 3 s is seen done within a fifth of a
    second of its end, and a job of ten minutes costs the controller one module run each O(interval).
  - A controller fork waits through each poll. With C(throttle) on the task (the role's
    C(sglang_service_wait_forks)), the hosts of a batch are read one at a time, so one fork waits
    for the slowest job while the others' jobs run on their hosts, and a host whose job already
    ended is read in one run.
author:
  - inferops maintainers (@inferops)
options:
  job:
    description: The registered result of the task started with C(poll) set to 0.
    type: dict
    required: true
  what:
    description: What the job does, for the status line (C(installing sglang==0.5.23 from the package index)).
    type: str
    default: the task
  interval:
    description:
      - Seconds between status lines, and the longest wait between two polls (at least 0.5).
      - The polls back off from half a second, so a short job is seen done soon after it ends.
    type: float
    default: 15
  timeout:
    description:
      - Fail after this many seconds (the job is left running; its status file is removed).
        V(0) waits as long as the task's own C(async) allows.
    type: float
    default: 0
  report_done:
    description: Print a last line when a job that took at least O(interval) ends.
    type: bool
    default: true
attributes:
  action:
    support: full
    description: Runs in the action plugin; each poll runs this module on the host (where the job runs).
  check_mode:
    support: full
    description: A job that did not run (check mode) is returned as it is.
  diff_mode:
    support: none
    description: Reports no diff of its own.
  platform:
    support: full
    platforms: posix
    description: Any host M(ansible.builtin.async_status) runs on.
seealso:
  - module: ansible.builtin.async_status
"""

EXAMPLES = r"""
- name: Install SGLang
  ansible.builtin.command:
    argv: [/opt/sglang/releases/.build/bin/pip, install, sglang==0.5.23]
  async: 3600
  poll: 0
  register: install_job
  changed_when: true

- name: Wait for the install, showing its progress
  inferops.sglang.async_progress:
    job: "{{ install_job }}"
    what: installing sglang==0.5.23 from the package index
    interval: 15
  changed_when: true
"""

RETURN = r"""
elapsed:
  description: Seconds this task waited for the job.
  returned: when the job ran async
  type: float
  sample: 131.4
rc:
  description: The job's return code, when it was a command (the job's other results are returned as well).
  returned: when the job returns one
  type: int
  sample: 0
"""
