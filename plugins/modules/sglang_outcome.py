#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_outcome
short_description: Say how an SGLang deploy ended after its gates; confirm the switch, or record its rollback
version_added: "0.3.0"
description:
  - Decides, from the plan (M(inferops.sglang.sglang_plan)) and what the gates saw, how the deploy ended
    (C(module_utils/deploy_plan.py)) - the first of a stop before the switch (C(not_retried)), a command line the
    release rejected, check mode, a failed health gate, a slower or failing variant, a failed task, nothing
    restarted, C(deployed) - with its cause, whether to roll back, and what the host records.
  - When the gates passed and the switch was guarded (O(guard)), confirms it to the host's guard
    (M(inferops.sglang.sglang_guard) C(state=disarmed)), said in RV(confirmed). When the guard had already restored
    the known-good (its deadline came first), says so (cause C(guard_acted_first)) instead; nothing is recorded.
  - When the deploy rolls back, records the rolled-back configuration on the host (M(inferops.sglang.sglang_state)
    O(inferops.sglang.sglang_state#module:rolled_back)), so that a re-run does not crash it again. That is the
    task's change - the task is changed exactly when it rolls back - so its C(notify) runs the rollback handler
    (C(inferops.sglang rollback)). A confirmation is not a change of its own - like the deploy lock, the guard
    lives only for the switch.
  - A task that failed after the restart, outside the gates (a module error, a host that refused a command), ends
    C(rolled_back) with cause C(task_failed), its message quoted in the diagnosis; the configuration is not to
    blame - its record says C(retry), so a re-run tries it again. So is a server group's rollback because a node's
    link to rank 0 broke (C(link_lost)).
  - Before any rollback of a guarded switch (a failed gate, a slow variant, a failed task), reads the guard's
    files without touching them (the rollback still needs it armed). When the guard had already restored the
    known-good (the host was gone past its deadline, so what the gates saw after was that restore), the cause is
    C(guard_acted_first) and nothing is rolled back or remembered.
  - Runs on the controller (an action plugin); only the confirmation and the rollback's record go to the host.
author:
  - inferops maintainers (@inferops)
options:
  plan:
    description: The plan (M(inferops.sglang.sglang_plan)'s result).
    type: dict
    required: true
  variant:
    description: The variant deployed.
    type: str
    required: true
  version:
    description: The release's SGLang version (for a rejected command line's message).
    type: str
    required: true
  release:
    description: The release folder.
    type: str
    required: true
  unit:
    description: The managed unit.
    type: str
    default: sglang.service
  state_dir:
    description: Where the guard keeps its pending record.
    type: str
    default: /etc/sglang
  validation:
    description: The argument checker's result (a command task's), or skipped.
    type: dict
  restart:
    description: The restart task's result, or skipped.
    type: dict
  gate:
    description: M(inferops.sglang.sglang_health)'s result, or skipped.
    type: dict
  perf:
    description: M(inferops.sglang.sglang_bench)'s result for the new service, or skipped.
    type: dict
  baseline:
    description: The performance gate's baseline (the C(inferops.sglang.sglang_perf_baseline) filter's result).
    type: dict
  failure:
    description: The message of a task that failed during the switch.
    type: str
    default: ""
  guard:
    description: The task result that armed the host's guard, or skipped (nothing to confirm).
    type: dict
  fail_on_rollback:
    description: A rolled-back deploy did not end well (the host fails once its report is written).
    type: bool
    default: true
  watch:
    description:
      - The watch after the gates the confirmation starts on the host (M(inferops.sglang.sglang_guard)'s
        O(inferops.sglang.sglang_guard#module:watch) - C(duration), C(interval), C(url), C(metrics), C(limits),
        C(gateway)); its C(baseline) is this deploy's performance gate's (the known-good's speed, the new
        server's and its accept length). Omitted, or C(duration) 0 - the host does not watch.
    type: dict
  server_group:
    description:
      - The host's node of a server group (M(inferops.sglang.sglang_group)'s result); empty for a server on one
        host. With O(group_said), the nodes are judged together - a node that passed its own gates rolls back
        when another did not (cause C(group_node_failed), naming that node and its rank), and so does a node
        whose own gate only waited on the others (it stalled, lost its health, timed out) when another fell first.
        A node whose link to rank 0 is broken (O(link)) is named first - the others' hangs follow from it.
    type: dict
    default: {}
  trial:
    description:
      - A try, not a deploy (the tune's). Its passing switch is not confirmed to the host's guard and not recorded
        as what the host runs - the tune brings the known-good back after it, and if that run goes away first, the
        guard does. A try never becomes the known-good.
    type: bool
    default: false
  link:
    description:
      - A node of a server group - M(inferops.sglang.sglang_link)'s result after the gates. A restarted node whose
        link to rank 0 is broken rolls back with cause C(link_lost) (whatever its own gate saw), and its word says
        why, for the other nodes' cause.
      - Omitted or skipped - not judged.
    type: dict
  group_said:
    description:
      - Every node's word, in rank order (each node's C(sglang_node_outcome) fact, null where a node has none).
        A word of another variant, or older than this deploy's plan, counts as a node that did not say how its
        switch ended.
    type: list
    elements: raw
  publish:
    description:
      - Only say how this node's own gates ended, as the fact C(sglang_node_outcome) (RV(word)), for every node's
        decision after it. Confirms nothing to the host's guard and reads no host. Needs O(server_group).
    type: bool
    default: false
attributes:
  action:
    support: full
    description: Decides on the controller; the confirmation runs M(inferops.sglang.sglang_guard) on the host, the
      rollback's record M(inferops.sglang.sglang_state).
  check_mode:
    support: full
    description: Decides C(check) (what the deploy would do); confirms and records nothing.
  diff_mode:
    support: none
    description: The confirmation only removes the guard's pending record; the rollback's record is a new file.
seealso:
  - module: inferops.sglang.sglang_plan
  - module: inferops.sglang.sglang_guard
"""

EXAMPLES = r"""
# (The role's own way: the decision notifies the rollback handler; it is changed only when it rolls back.)
- name: Decide how the deploy ended; confirm the switch to the host's guard, or roll back
  inferops.sglang.sglang_outcome:
    plan: "{{ plan }}"
    variant: ddtree
    version: "0.5.23"
    release: /opt/sglang/releases/0.5.23-4f1c2ab90d3e
    restart: "{{ restart }}"
    gate: "{{ gate }}"
    guard: "{{ armed }}"
  register: outcome
  notify: inferops.sglang rollback

- name: Roll back now, before the report
  ansible.builtin.meta: flush_handlers
"""

RETURN = r"""
word:
  description: With O(publish), this node's word - C(host), C(node_rank), C(variant), C(at), C(outcome),
    C(rollback), C(cause), C(failure), C(phase) and C(last_line) of a stalled start, and C(link) (why its link to
    rank 0 is broken, or null). Also the fact C(sglang_node_outcome).
  returned: when publish is true
  type: dict
outcome:
  description: C(deployed), C(unchanged), C(rolled_back), C(not_retried), C(check) or C(failed).
  returned: success
  type: str
  sample: rolled_back
cause:
  description: Why (the gate's cause, C(slower_than_baseline), C(bad_argument), C(guard_acted_first), C(task_failed),
    C(group_node_failed), C(link_lost), ...); null.
  returned: success
  type: str
  sample: kv_pool_oom
rollback:
  description: The known-good must be restored.
  returned: success
  type: bool
ok:
  description: The deploy ended well (the play goes on).
  returned: success
  type: bool
failure:
  description: The message of what stopped the deploy, when something did.
  returned: success
  type: str
perf:
  description: The performance gate's judged result (verdict, ratio, new, baseline); null without a measurement.
  returned: success
  type: dict
serves:
  description: The host serves, healthy, without a rollback (the new service, or the one that was never stopped).
  returned: success
  type: bool
record:
  description:
    - What the host records - C(deployed), or C(rolled_back) with its C(config_id) (every rollback, written by this
      task; with C(retry) when the configuration is not to blame); null for nothing.
  returned: success
  type: dict
record_deployed:
  description: The host now runs this deploy, to record as C(deployed).
  returned: success
  type: bool
changed:
  description: The deploy rolls back (its record written; the task's C(notify) restores the known-good).
  returned: always
  type: bool
guard_restored:
  description:
    - The host's guard restored the known-good of this switch already (its failure's restore, or at its deadline,
      before this decision). A rollback then only says so and records it; the role's restore does not stop a server
      group's node first (the guard brought it back with the group, and does not start it twice).
  returned: success
  type: bool
confirmed:
  description: M(inferops.sglang.sglang_guard)'s answer to the confirmation; null when nothing was confirmed.
  returned: success
  type: dict
time:
  description: When the deploy ended (UTC, ISO 8601).
  returned: success
  type: str
elapsed:
  description: Seconds the task took.
  returned: always
  type: float
"""
