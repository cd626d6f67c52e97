#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_report
short_description: Write a deploy's JSON and text report on the controller
version_added: "0.1.0"
description:
  - Writes C(<dir>/<host>/<UTC stamp>-<name>.json) and C(.txt), and C(latest.json) and
    C(latest.txt) beside them, each atomically (a reader never sees half a report).
  - Runs on the controller only (an action plugin); nothing is sent to the host.
  - A relative O(dir) is taken from the folder C(ansible-playbook) runs in, so reports land
    beside where the user runs from, wherever the collection is installed.
  - Returns the host's row of the fleet summary as RV(summary) and as the fact
    C(sglang_deploy) (so a later play, a class's other hosts after its canary, reads how
    this host's deploy ended); the P(inferops.sglang.fleet_summary#callback) callback prints it.
  - Returns the same row as the job's artifacts, as C(ansible.builtin.set_stats) does (C(aggregate=true),
    C(per_host=false)) - C(sglang_outcomes), a mapping of each host to its row - which ansible-runner writes
    with the job's events and an AWX workflow branches on. Ansible keeps them only from a task that did not
    fail, so a deploy that must fail its host fails it in a task of its own, after this one (O(fail) would
    drop them).
  - With O(read=true) it writes nothing and returns the host's C(latest.json) as RV(report)
    (playbooks/status.yml reads the last deploy so).
author:
  - inferops maintainers (@inferops)
options:
  dir:
    description: The reports folder on the controller; one sub-folder per host.
    type: str
    required: true
  read:
    description: Return the host's last report instead of writing one.
    type: bool
    default: false
  host:
    description: The host's sub-folder. Default is the inventory hostname.
    type: str
  name:
    description: What the report is about (the variant), part of the file names. Required unless O(read=true).
    type: str
  report:
    description: The report, written as JSON. Required unless O(read=true).
    type: dict
  text:
    description: The short diagnosis, written as text and returned as RV(msg). Required unless O(read=true).
    type: str
  started:
    description:
      - When this host's deploy started, in seconds since the epoch; the report then records
        C(seconds), how long the deploy took until its report.
    type: float
  fail:
    description:
      - Fail the task once the report is written, with O(text) as its message (the deploy
        ended badly). The report is written either way, so a failed deploy has one too.
    type: bool
    default: false
  in_progress:
    description:
      - The report of a deploy still under way (a switch not yet confirmed) - written as C(latest.json) and
        C(latest.txt) only, not into the host's history, so that the deploy's own report replaces it. A run that
        ends before its report (Ctrl-C, the host unreachable) leaves it as the host's last word.
    type: bool
    default: false
    version_added: 0.3.0
  deploy:
    description:
      - The deploy's id (one per run of playbooks/deploy.yml), kept in the fact C(sglang_deploy), so a later
        play tells this deploy's report from an earlier one's in the same run.
    type: str
    version_added: 0.3.0
  ok:
    description:
      - Whether the deploy ended well, kept in the fact C(sglang_deploy). Default is the opposite of O(fail).
      - A watch (O(watch)) that restored the known-good makes it false, unless O(fail_on_rollback=false).
    type: bool
    version_added: 0.3.0
  watch:
    description:
      - How the host's watch of the deployed server ended, as P(inferops.sglang.sglang_guard#module) with
        C(state=watched) returned it (its RV(inferops.sglang.sglang_guard#module:watch)), when the play waited for it.
      - Taken only when its C(config_id) is O(config_id) (a wait of an earlier deploy in the same run is not
        this one's). The report keeps it as C(watch) and O(text) gains its line; without it, the report's
        C(watching_until) (the host still watches) gives the line.
    type: dict
    version_added: 0.6.0
  config_id:
    description: The configuration this deploy switched to (its plan's), which O(watch) must be of.
    type: str
    version_added: 0.6.0
  fail_on_rollback:
    description:
      - Whether a watch that restored the known-good makes the deploy end badly (O(ok) false), as a rollback
        does.
    type: bool
    default: true
    version_added: 0.6.0
attributes:
  action:
    support: full
    description: Runs entirely in the action plugin, on the controller.
  check_mode:
    support: full
    description:
      - In check mode the report (what the deploy would do) goes to C(check.json) and C(check.txt) in the host's
        folder; C(latest.*) and the history keep the last real deploy's.
  diff_mode:
    support: none
    description: Reports are not host changes.
  platform:
    support: full
    platforms: posix
    description: The controller's file system.
"""

EXAMPLES = r"""
- name: Write the report
  inferops.sglang.sglang_report:
    dir: reports
    name: ddtree
    report: {outcome: deployed}
    text: "ct200: DDTREE deployed, healthy in 6.1 s"

- name: Write the report, and fail the host when the deploy did not end well
  inferops.sglang.sglang_report:
    dir: reports
    name: ddtree
    report: {outcome: rolled_back}
    text: "ct200: DDTREE ROLLED BACK (kv_pool_oom) ..."
    started: "{{ deploy_started }}"
    fail: true

- name: Read the last report
  inferops.sglang.sglang_report:
    dir: reports
    read: true
  register: last
"""

RETURN = r"""
paths:
  description: The files written.
  returned: when written
  type: list
  elements: str
  sample: [/srv/ops/reports/ct200/20261130T211500Z-ddtree.json, /srv/ops/reports/ct200/latest.json]
msg:
  description:
    - O(text), the deploy's diagnosis (the failure message with O(fail=true)), and the line of the host's watch
      (how it ended, or until when it runs).
  returned: when written
  type: str
  sample: "ct200: DDTREE deployed, healthy in 6.1 s"
summary:
  description: The host's row of the fleet summary (what the deploy changed, how it ended, why, in how long).
  returned: when written
  type: dict
  sample: {host: ct200, class: blackwell, before: nextn, after: ddtree, variant: ddtree, outcome: deployed,
           cause: null, ratio: 1.24, seconds: 41.2}
dir:
  description: The reports folder, absolute (the fleet summary's JSON goes there).
  returned: when written
  type: str
  sample: /srv/ops/reports
ansible_facts:
  description:
    - The fact C(sglang_deploy), RV(summary) with C(deploy) (O(deploy)), C(ok) (O(ok)) and C(msg) (O(text)).
  returned: when written
  type: dict
  sample: {sglang_deploy: {host: ct200, outcome: deployed, cause: null, deploy: "1796300000.1", ok: true,
                           msg: "ct200: DDTREE deployed, healthy in 6.1 s"}}
report:
  description: The host's last report (C(latest.json)), or null when there is none.
  returned: with O(read=true)
  type: dict
  sample: {outcome: deployed, variant: ddtree, time: "2026-11-30T21:15:00Z"}
"""
