#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_guard
short_description: Arm or disarm the host's own guard over an SGLang switch
version_added: "0.3.0"
description:
  - Before the first file of a switch changes, O(state=armed) records the switch as pending on the host
    (C(pending.json) in O(state_dir)) and arms a guard of the host's own systemd - a follower, a timer that fires
    at the deadline and a unit that runs at every boot.
  - The follower watches the switched unit (failed, inactive, auto-restarting, restarted by systemd) and the
    verdict of the deploy's health gate, which runs on the host too (M(inferops.sglang.sglang_health)'s
    O(inferops.sglang.sglang_health#module:verdict_path)). When the new server fails and no controller takes the
    failure over within O(grace) seconds (the rollback re-arms the guard with O(phase=rollback)), the host
    restores the known-good by itself - whether the controller went away or only follows other hosts.
  - Unless the deploy confirms the switch first (O(state=disarmed), once its gates passed and its outcome is
    recorded), the guard restores the known-good at the deadline too - a healthy new server that nobody confirms
    is safe until then.
  - The restore is the rollback's - the known-good's files back, the switched unit stopped, its processes and GPU
    memory gone, the start-limit state cleared, the known-good started, healthy and settled (O(settle)); tried
    again twice with a backoff, and said in the journal (C(journalctl -u <unit stem>-guard*)) and in
    C(guard.json) in O(state_dir). The deploy lock of the controller that went away is released.
  - A host that boots while a switch is pending restores the known-good at boot, not at the deadline - the
    reboot ended the deploy, so nothing can confirm the switch any more.
  - A server group's nodes (O(server_group)) are guarded as one - their followers are linked (rank 0's listens on
    O(group_port) at rank 0's address, where the ranks meet; each other node's keeps a connection to it, its words
    signed with O(group_key)). A node's guard that restores makes every node restore, and every node's switched
    server stops before any known-good starts. Another node's confirmation (O(hold)) holds its guard until rank 0's
    is confirmed, which confirms the group's; so a new release never runs on half a group, whether the controller
    goes away between two nodes or not. A node whose link to rank 0's guard is lost past its deadline judges
    alone - it keeps the switch when it still serves with the group (rank 0 ended it without a restore), and
    restores otherwise.
  - The guard's program is written to C(/usr/local/lib/inferops-sglang/guard/) (this collection's pure
    module_utils, standard library only); its units are C(<unit stem>-guard-follow.service),
    C(<unit stem>-guard.timer), C(<unit stem>-guard.service) and C(<unit stem>-guard-boot.service). A run of
    them that fails is started again by systemd.
  - Arming again moves the deadline (the rollback re-arms for its own restore); it keeps the
    pending switch's start time. A rollback's arm when the guard already restored this switch arms nothing and
    returns RV(fired); while a run of the guard is restoring it, the arm returns at once (its read waits).
  - O(state=read) changes nothing - it says whether the guard already acted on the switch O(config_id)
    (RV(fired)), read under the guard's lock, so a guard run restoring that switch now is waited for and its
    result is read once it ended.
  - O(state=disarmed) with O(watch) keeps watching the confirmed server after its gates, on the host alone - the
    follower probes it each C(interval) seconds for C(duration) seconds (the unit, a real generation through
    SGLang's C(/health_generate), the unit's new journal lines through the gate's classifier, SGLang's
    C(/metrics) when it exports them) and on a breach (see the C(limits)) restores the known-good the switch kept,
    through the switch's one restore, the worker out of the gateway's rotation meanwhile. It says what it did in
    C(guard.json) and the journal, and what it does in C(watch.json). A new switch, or the next deploy's snapshot
    of the running service as the known-good, ends it. A host that reboots during the watch resumes it at boot
    (the guard's boot unit stays enabled while it runs) - once the server, started with the host, is back
    healthy within the gate's health timeout; one that does not come back is a breach. A server group's node does
    not resume its watch alone (its peers' watches saw it go).
  - A server group's nodes are watched as one - each node's follower keeps its link to the others while it watches
    (rank 0's listening on O(group_port) until its watch ends), and a breach on any node (its unit, its journal,
    rank 0's generations) makes every node restore, each stopping before any starts. A node other than rank 0
    begins its watch once rank 0's guard says the group's switch is confirmed.
  - The rollback is the guard's restore too - O(phase=restore) hands it to the host (the rollback's own arm), whose
    follower starts it at once and finishes it whether the controller stays or goes; O(state=read) with O(wait)
    then waits for it and returns its result as the rollback's (RV(ended), RV(rollback)). One restore, one meaning
    of healthy, for the deploy's handler, C(playbooks/rollback.yml) and the host alone. The handed-over restore
    leaves the deploy lock to its controller, which releases it once it read the result.
author:
  - inferops maintainers (@inferops)
options:
  state:
    description:
      - V(armed) records the switch as pending and arms the guard; V(disarmed) confirms it.
      - V(said) marks what the guard did on its own (C(guard.json), its time O(said_time)) as said by a deploy's
        report, so that no later one repeats it; it is kept as C(guard.json.prev).
      - V(read) only reads what the guard did on the switch O(config_id) (RV(fired), RV(ended)), once no guard run
        holds its lock; with O(wait), once the switch is not pending any more.
      - V(watched) only reads how the host's watch of the confirmed switch O(config_id) ended (RV(watch)); with
        O(wait), once it ended - its time ran out, or a breach and its restore ended.
      - V(unwatched) ends the host's watch (of the switch O(config_id), when given) with nothing restored, O(cause)
        saying why - before a server's stop on purpose that the watch would take for a failure. A server group's
        rollback ends every node's watch first - a node stopped while another's is watched would fail that one's
        ranks (its peer gone) and have the variant recorded as failed.
    type: str
    choices: [armed, disarmed, said, read, watched, unwatched]
    required: true
  said_time:
    description: The time of the guard's result a report said (the deploy plan's C(guard_time)).
    type: float
  unit:
    description: The service the guard watches.
    type: str
    default: sglang.service
  unit_dir:
    description: Where the service's unit file is.
    type: path
    default: /etc/systemd/system
  state_dir:
    description: The folder of the deploy records (C(known-good/), C(deployed.json)).
    type: path
    default: /etc/sglang
  group:
    description: The service's group (owns the restored env and secrets files).
    type: str
    default: sglang
  deadline:
    description: Seconds from now after which the guard restores the known-good unless disarmed.
    type: float
  config_id:
    description: The switched configuration's name (deploy_plan's config_id).
    type: str
  variant:
    description: The switched variant, for the guard's messages.
    type: str
  phase:
    description:
      - What the deploy does until the deadline, for the guard's messages. V(rollback) takes a failure over from
        the guard (the controller rolls back).
      - V(restore) hands the rollback's restore to the host - the guard restores the known-good now (always
        restarting it; a first deploy's failed server is stopped), and the task returns at once. Its timer is then
        a backstop that fires within 5 s (or O(deadline), if shorter), should the follower not run it.
    type: str
    choices: [gate, rollback, restore]
    default: gate
  cause:
    description: Why the controller rolls back (O(phase=restore)), or ends the watch (O(state=unwatched)), for the
      guard's messages.
    type: str
  server_group:
    description:
      - This host's node of a server group - M(inferops.sglang.sglang_group)'s result, whose C(name), C(nodes) (in
        rank order), C(nnodes), C(node_rank) and C(dist_init_addr) (rank 0's address, where rank 0's guard listens)
        the guard reads; its other keys are ignored. The guards of the group's nodes are then linked for the switch
        (see the description). A re-arm of the same switch that omits it keeps it.
    type: dict
  group_port:
    description: The TCP port rank 0's guard listens on at rank 0's address for the other nodes' guards, while a
      switch is pending and while it is watched (O(server_group) only). It must be free on rank 0 and reachable
      from every node.
    type: int
    default: 30097
  group_key:
    description:
      - The secret the words between a server group's guards are signed with, with the group's name - the service's
        API key, which every node of a server shares. A word signed otherwise is dropped. Empty - they are signed
        with the group's name alone, which only keeps another group's words apart.
    type: str
    default: ""
  hold:
    description:
      - With O(state=disarmed) - this host is a server group's node other than rank 0; its confirmation holds
        its guard (phase C(held)) until rank 0's guard, confirmed last, says the group's switch is confirmed, or
        restores the group.
    type: bool
    default: false
  stall:
    description:
      - Seconds a start of the known-good may say nothing in its journal before its first 200; the try then fails
        (a server group's known-good that cannot meet its ranks), and the next one begins. 0 waits for O(timeout).
    type: float
    default: 0
  rejoin:
    description:
      - With O(phase=restore) - whether the guard puts the drained worker back behind the gateway once the
        known-good is healthy. V(false) keeps it out, as its controller asks between a tune's tries (the result
        says so). A guard that ends a switch by itself, its controller gone, always puts it back.
    type: bool
    default: true
  remember:
    description:
      - With O(phase=restore) - whether the guard records the switch O(config_id) as a rolled-back configuration
        (O(cause)) once it restored the known-good, as the deploy's rollback does (a re-run of exactly it is then
        not retried). A record its controller wrote since the switch began is kept; the guard's stands in for a
        controller gone before it wrote its own. A guard that ends a failed switch by itself always records it.
    type: bool
    default: false
  wait:
    description: Seconds O(state=read) waits at most for the pending switch O(config_id) to end (a restore handed
      to the host), or O(state=watched) for its watch to end. 0 reads at once.
    type: float
    default: 0
  timeout:
    description: How long the guard waits for the restored known-good to answer 200.
    type: float
    default: 600
  settle:
    description: Seconds the restored known-good must keep answering after its first 200, as the deploy's gate.
    type: float
    default: 0
  grace:
    description:
      - Seconds a failure of the new server waits for a controller to take it over (a rollback's arm) before the
        host restores by itself. At most 15.
    type: float
    default: 15
  leftovers_timeout:
    description: How long the guard's restore waits for the switched unit's processes and GPU memory to go.
    type: float
    default: 60
  tolerance_mib:
    description: GPU memory (MiB) no process holds that the wait tolerates (the driver's own use).
    type: int
    default: 1024
  gateway:
    description:
      - The gateway the deploy took this worker out of (its rotation), for the switch - whoever ends it puts the
        worker back once the known-good serves, the host's guard included. Omitted - the worker is in rotation, or
        there is no gateway.
    type: dict
    suboptions:
      url:
        description: The gateway's base URL (smg's), as the host reaches it.
        type: str
        required: true
      worker_url:
        description: This worker's URL as the gateway knows it.
        type: str
        required: true
      api_key:
        description: The gateway's own API key, if it has one (C(pending.json) is then readable by root only).
        type: str
        default: ""
  watch:
    description:
      - With O(state=disarmed) - the watch after the gates (see the description). Omitted, or C(duration) 0 - none.
    type: dict
    suboptions:
      duration:
        description: Seconds the watch runs after the confirmation.
        type: float
        required: true
      interval:
        description: Seconds between two probes.
        type: float
        default: 10
      url:
        description: The confirmed server's base URL, as the host reaches it (its C(/health_generate), C(/metrics)).
        type: str
        required: true
      metrics:
        description: Whether the server exports SGLang's C(/metrics) (C(--enable-metrics)); the speed and error
          limits need them.
        type: bool
        default: false
      limits:
        description:
          - What a breach is - C(generation_failures) failed generations in a row (default 3); failed requests
            above C(error_rate) (0.5) over C(error_window) seconds (120), once C(error_min_requests) (20) were made;
            a projected speed under C(speed_ratio) (0.9) of the known-good's for C(speed_window) seconds (300).
            The unit no longer running, or a cause in its journal that breaks a running server (a rank or a peer
            node gone), is one at once.
        type: dict
        default: {}
      baseline:
        description: The figures the speed limit compares - C(known_good_speed), C(gate_speed) and
          C(gate_accept_length) (tokens per second, and the new server's accept length at its performance gate).
        type: dict
        default: {}
      gateway:
        description: The gateway the worker serves behind - a breach takes the worker out of its rotation before the
          restore, and puts it back once the known-good is healthy.
        type: dict
        suboptions:
          url:
            description: The gateway's base URL (smg's), as the host reaches it.
            type: str
            required: true
          worker_url:
            description: This worker's URL as the gateway knows it.
            type: str
            required: true
          api_key:
            description: The gateway's own API key, if it has one (C(watch.json) is readable by root only).
            type: str
            default: ""
  lock_path:
    description: The deploy lock (M(inferops.sglang.deploy_lock)'s O(inferops.sglang.deploy_lock#module:path)); the
      guard releases the switch's lock when it ends a switch whose controller went away.
    type: path
    default: /run/inferops-sglang/deploy.lock
  host:
    description: The address the known-good listens on when its record names none.
    type: str
    default: 127.0.0.1
  port:
    description: The port the known-good listens on when its record names none.
    type: int
    default: 30000
requirements:
  - systemd on the host
attributes:
  check_mode:
    support: full
    description: Says what it would arm or disarm, and changes nothing.
  diff_mode:
    support: none
    description: Not supported.
  platform:
    support: full
    platforms: posix
    description: Hosts with systemd.
seealso:
  - module: inferops.sglang.sglang_state
  - module: inferops.sglang.sglang_health
"""

EXAMPLES = r"""
- name: Arm the guard before the restart (health timeout + settle + margin)
  inferops.sglang.sglang_guard:
    state: armed
    deadline: 330
    config_id: "{{ plan.config_id }}"
    variant: ddtree

- name: Confirm the switch once its gates passed and its outcome is recorded
  inferops.sglang.sglang_guard:
    state: disarmed
    config_id: "{{ plan.config_id }}"

- name: Confirm the switch and watch the new server for 30 minutes
  inferops.sglang.sglang_guard:
    state: disarmed
    config_id: "{{ plan.config_id }}"
    watch:
      duration: 1800
      url: http://127.0.0.1:30000
      limits:
        generation_failures: 3

- name: Confirm rank 1 of a server group; its guard holds until rank 0 is confirmed
  inferops.sglang.sglang_guard:
    state: disarmed
    config_id: "{{ plan.config_id }}"
    hold: true

- name: Read whether the host's guard already restored the known-good over this switch
  inferops.sglang.sglang_guard:
    state: read
    config_id: "{{ plan.config_id }}"
  register: guard_read

- name: Wait for the host's watch of the new server to end, and say how it ended
  inferops.sglang.sglang_guard:
    state: watched
    wait: 1900
    config_id: "{{ plan.config_id }}"
  register: watched

- name: End the host's watch before every node of a server group stops (nothing is restored)
  inferops.sglang.sglang_guard:
    state: unwatched
    cause: a rollback of the server group

- name: Roll back - hand the restore to the host
  inferops.sglang.sglang_guard:
    state: armed
    phase: restore
    deadline: 5
    config_id: "{{ plan.config_id }}"
    variant: ddtree
    cause: cuda_oom

- name: Wait for the host's restore (it goes on if this run goes away)
  inferops.sglang.sglang_guard:
    state: read
    wait: 1900
    config_id: "{{ plan.config_id }}"
  async: 3600
  poll: 5
  register: restore_read
"""

RETURN = r"""
pending:
  description: The pending switch as recorded on the host (armed, read), or the one cleared (disarmed); null when
    none.
  returned: always
  type: dict
deadline_at:
  description: The deadline, in UTC (armed).
  returned: when armed
  type: str
  sample: "2026-12-03 12:04:31 UTC"
fired:
  description:
    - What the guard did when it already acted on this switch (disarmed, read, or a rollback's arm) - it restored the
      known-good before the deploy confirmed or took the failure over; null when it did not. The caller decides
      what that means for its outcome.
  returned: always
  type: dict
ended:
  description: The guard's result when the switch O(config_id) ended by its run - on its own (RV(fired)) or as the
    restore the controller handed it; null otherwise.
  returned: when read
  type: dict
rollback:
  description: RV(ended) in the shape of the rollback's result - C(gate) (C(state) V(healthy) or V(failed),
    C(elapsed), C(cause), C(hint)), C(known_good) (its name; null when none existed), C(leftovers) (C(released),
    C(waited), C(elapsed), C(msg)); null when nothing ended.
  returned: when read
  type: dict
watching_until:
  description: Until when the host watches the confirmed server (disarmed with O(watch)), in UTC; null when it does not.
    A server group's node other than rank 0 (O(hold)) begins its watch once rank 0's guard says the group's switch
    is confirmed, a moment later.
  returned: when disarmed
  type: str
  sample: "2026-12-03 12:34:31 UTC"
watch:
  description:
    - The host's watch of the switch O(config_id) (watched; unwatched - the watch it ended, or null) - C(config_id), C(variant), C(watch_started), C(until),
      C(ended) (epoch seconds; null while it runs), C(outcome) (V(clean), V(restored) or V(superseded); null
      while it runs), C(ended_why), C(breach) (C(cause), C(rank), C(evidence), C(time)), C(said), the line
      C(status.yml) prints, and after a restore C(restored), the known-good's name; null when no watch of that
      switch is on record.
  returned: when watched or unwatched
  type: dict
said:
  description: The guard's result in one sentence, when it acted; with O(state=watched), how the watch ended or
    what it does.
  returned: always
  type: str
elapsed:
  description: Seconds the call took.
  returned: always
  type: float
"""

import grp
import os
import pkgutil
import sys
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.inferops.sglang.plugins.module_utils import guard, host_state, watch
from ansible_collections.inferops.sglang.plugins.module_utils.systemd_state import parse_show, show_command, unit_status

PACKAGE = "ansible_collections.inferops.sglang.plugins.module_utils"


# The guard units' program: this collection's pure module_utils, copied beside it as the package
# they import each other from.
LAUNCHER = """#!/usr/bin/env python3
# inferops.sglang: the host's guard over an SGLang switch (written by inferops.sglang.sglang_guard).
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ansible_collections.inferops.sglang.plugins.module_utils import guard  # noqa: E402

code, line = guard.main(sys.argv[1:])
print(line)
raise SystemExit(code)
"""


def write_program(check):
    """The guard's launcher and the modules it imports, from this collection's own copies."""
    changed = False
    folder = os.path.join(guard.LIB_DIR, *PACKAGE.split("."))
    if not check and not os.path.isdir(folder):
        os.makedirs(folder, 0o755)
    for depth in range(len(PACKAGE.split("."))):
        init = os.path.join(guard.LIB_DIR, *PACKAGE.split(".")[:depth + 1] + ["__init__.py"])
        changed |= host_state.put_file(init, b"", 0o644, 0, 0, check)
    for name in guard.PROGRAM_MODULES:
        data = pkgutil.get_data(PACKAGE, name)
        changed |= host_state.put_file(os.path.join(folder, name), data, 0o644, 0, 0, check)
    changed |= host_state.put_file(os.path.join(guard.LIB_DIR, "sglang-guard"), LAUNCHER.encode("utf-8"), 0o755, 0, 0,
                                   check)
    return changed


def write_units(params, deadline, check):
    timer, service, boot = guard.guard_units(params["unit"])
    texts = {timer: guard.timer_text(params["unit"], deadline),
             service: guard.service_text(params["unit"], sys.executable, params["state_dir"], guard.DEADLINE),
             boot: guard.service_text(params["unit"], sys.executable, params["state_dir"], guard.BOOT),
             guard.follower_unit(params["unit"]):
                 guard.service_text(params["unit"], sys.executable, params["state_dir"], guard.FOLLOW)}
    changed = False
    for name, text in texts.items():
        changed |= host_state.put_file(os.path.join(params["unit_dir"], name), text.encode("utf-8"), 0o644, 0, 0,
                                       check)
    return changed


def run(module, *args):
    rc, out, err = module.run_command(["systemctl"] + list(args))
    if rc != 0:
        module.fail_json(msg="%s guard: systemctl %s failed (rc %d): %s"
                             % (module.params["unit"], " ".join(args), rc, (err or out).strip()), elapsed=0.0)
    return out


def input_problem(params):
    """What is wrong with an arm's inputs, before anything is written, or None."""
    if params["deadline"] is None or params["deadline"] <= 0:
        return "deadline must be a positive number of seconds, got %s (the health timeout, the settle and " \
               "sglang_guard_margin add up to it)" % params["deadline"]
    if not 0 < params["grace"] <= guard.GRACE_MAX:
        return "grace must be more than 0 and at most %.0f seconds, got %s" % (guard.GRACE_MAX, params["grace"])
    if params["timeout"] <= 0 or params["settle"] < 0 or params["leftovers_timeout"] < 0:
        return "timeout must be positive, settle and leftovers_timeout 0 or more (got %s, %s and %s)" % (
            params["timeout"], params["settle"], params["leftovers_timeout"])
    return group_problem(params)


GROUP_KEYS = ("name", "nodes", "nnodes", "node_rank", "dist_init_addr")


def group_problem(params):
    group = params.get("server_group")
    if not group:
        return None
    missing = [key for key in GROUP_KEYS if group.get(key) in (None, "")]
    if missing:
        return "server_group lacks %s (give sglang_group's result)" % ", ".join(missing)
    if not 0 < params["group_port"] < 65536:
        return "group_port must be a TCP port (1-65535), got %s" % params["group_port"]
    if not 0 <= int(group["node_rank"]) < int(group["nnodes"]) == len(group["nodes"]):
        return "server_group %s: node_rank %s is not one of its %s nodes (%s)" % (
            group["name"], group["node_rank"], group["nnodes"], ", ".join(group["nodes"]))
    return None


def deadline_in(params):
    """Seconds from the arm to its timer; a restore handed over runs now (its timer a backstop)."""
    if params["phase"] == guard.RESTORE_PHASE:
        return min(params["deadline"], guard.RESTORE_BACKSTOP)
    return params["deadline"]


def pending_record(module, params, now, earlier):
    try:
        gid = grp.getgrnam(params["group"]).gr_gid
    except KeyError:
        if not module.check_mode:
            module.fail_json(msg="group %s does not exist (set group to the service's)" % params["group"],
                             elapsed=0.0)
        gid = 0   # the deploy creates the group; check mode has not
    _rc, out, _err = module.run_command(show_command(params["unit"]))
    holder = host_state.read_json(params["lock_path"]) or {}
    # A re-arm of the same switch (the rollback's) keeps when it began, what the unit ran then, and
    # when its worker was drained.
    kept = earlier if earlier and earlier.get("config_id") == params["config_id"] else {}
    return {
        "config_id": params["config_id"], "variant": params["variant"], "phase": params["phase"],
        "cause": params.get("cause"), "rejoin": params.get("rejoin", True),
        "remember": params.get("remember", False), "stall": params.get("stall", 0.0),
        "started": kept.get("started", now), "armed_at": now,
        "deadline": now + deadline_in(params), "unit": params["unit"], "unit_dir": params["unit_dir"], "gid": gid,
        # What the unit ran at the arm: the follower judges only a start after it.
        "invocation": kept.get("invocation") if kept else unit_status(parse_show(out))["invocation_id"],
        "timeout": params["timeout"], "settle": params["settle"], "grace": params["grace"],
        "leftovers_timeout": params["leftovers_timeout"], "tolerance_mib": params["tolerance_mib"],
        "host": params["host"], "port": params["port"],
        "lock": {"path": params["lock_path"], "run_id": holder.get("run_id")},
        "gateway": dict(params["gateway"], drained_at=(kept.get("gateway") or {}).get("drained_at") or now)
        if params["gateway"] else kept.get("gateway"),
        "group": group_record(params) or kept.get("group"),
    }


def group_record(params):
    """The server group's node as the linked guards need it (guard_link), or None for a server on one host."""
    group = params.get("server_group")
    if not group:
        return None
    return dict(dict((key, group[key]) for key in GROUP_KEYS), port=params["group_port"], key=params["group_key"])


def pending_and_fired(params):
    """The pending switch, and the guard's result when it already acted on the switch config_id
    (guard.fired_on). The caller holds the guard's lock."""
    pending = guard.read_pending(params["state_dir"])
    return pending, guard.fired_on(params["config_id"], pending, guard.read_result(params["state_dir"]))


def handed_over(params):
    """The pending switch config_id when its restore is handed to the host already (phase restore):
    the guard's run restoring it holds the lock until it ends, so this is read without it (the
    file is replaced whole). None otherwise."""
    pending = guard.read_pending(params["state_dir"]) if os.path.isdir(params["state_dir"]) else None
    if pending and pending.get("config_id") == params["config_id"] and pending.get("phase") == guard.RESTORE_PHASE:
        return pending
    return None


def restoring_now(params):
    """(the pending switch config_id, when the guard's run began) while a guard run restores it now,
    else (None, None). Read without the lock, which that run holds."""
    result = guard.read_result(params["state_dir"])
    busy = guard.restoring(params["config_id"], guard.read_pending(params["state_dir"]), result)
    return (busy, float(result["time"])) if busy else (None, None)


def arm(module, params):
    now = time.time()
    deadline = now + deadline_in(params)
    if module.check_mode:
        return dict(changed=True, pending=pending_record(module, params, now, None), deadline_at=guard.clock(deadline),
                    fired=None, said=None,
                    msg="would arm the guard of %s until %s (check mode)" % (params["unit"], guard.clock(deadline)))
    handed = handed_over(params) if params["phase"] != "gate" else None
    busy, since = restoring_now(params) if params["phase"] != "gate" else (None, None)
    if busy:
        # (The host's guard restores this switch now, holding its lock: the rollback's read waits for it.)
        return dict(changed=False, pending=busy, deadline_at=guard.clock(float(busy["deadline"])), fired=None,
                    said=None, msg="%s: the host's guard is restoring the known-good already (since %s)"
                    % (params["unit"], guard.short_clock(since)))
    if handed:
        # (The failed gate handed it over: the guard restores it now; the rollback's read waits for it.)
        return dict(changed=False, pending=handed, deadline_at=guard.clock(float(handed["deadline"])), fired=None,
                    said=None, msg="%s: the host's guard restores the known-good (handed over at %s)"
                    % (params["unit"], guard.short_clock(float(handed["armed_at"]))))
    with guard.Locked(params["state_dir"]):
        earlier, fired = pending_and_fired(params)
        ended = guard.ended_on(params["config_id"], earlier, guard.read_result(params["state_dir"]))
        if params["phase"] != "gate" and ended:
            # The host restored this switch before the rollback took it over (fired), or the restore
            # handed over earlier (the failed gate's) ended: nothing to arm.
            return dict(changed=False, pending=None, deadline_at=None, fired=fired, said=guard.said(ended),
                        msg="%s: the host's guard already restored the known-good: %s" % (
                            params["unit"], guard.said(ended)))
        pending = pending_record(module, params, now, earlier)
        # (A new switch, or a rollback's restore, ends the watch of the switch before it: what it
        # would restore is what the new switch's own guard restores now.)
        guard.end_watch(params["state_dir"], guard.SUPERSEDED, "%s began at %s" % (
            "a rollback" if params["phase"] != "gate" else "a switch to %s" % (params["variant"] or "?").upper(),
            guard.short_clock(now)))
        write_program(False)
        write_units(params, deadline, False)
        # A new switch: the guard's last result was said by the read that planned it, it is history
        # now. (A rollback's re-arm keeps it: the guard may have acted on this very switch.)
        result = os.path.join(params["state_dir"], guard.RESULT)
        if params["phase"] == "gate" and os.path.exists(result):
            os.rename(result, result + ".prev")
        # (Root's alone: it may carry the gateway's API key.)
        guard.write_json(os.path.join(params["state_dir"], guard.PENDING), pending, 0o600)
        timer, _service, boot = guard.guard_units(params["unit"])
        run(module, "daemon-reload")
        run(module, "enable", boot)
        run(module, "restart", timer)
        # A new switch gets a new follower (it judges only the starts after the arm); a restore
        # handed over keeps the running one, which takes it up within its poll, or starts one.
        # (--no-block: the old follower may wait for this very lock to act; it need not end first.)
        follower = guard.follower_unit(params["unit"])
        run(module, "start" if params["phase"] == guard.RESTORE_PHASE else "restart", "--no-block", follower)
    if params["phase"] == guard.RESTORE_PHASE:
        return dict(changed=True, pending=pending, deadline_at=guard.clock(deadline), fired=None, said=None,
                    msg="%s: the host's guard restores the known-good now (the rollback of %s handed to it)"
                        % (params["unit"], (params["variant"] or "the switch").upper()))
    return dict(changed=True, pending=pending, deadline_at=guard.clock(deadline), fired=None, said=None,
                msg="%s: the host restores the known-good by itself if the new server fails and no controller "
                    "takes it over within %.0f s, or unless this deploy confirms %s by %s"
                    % (params["unit"], params["grace"], (params["variant"] or "the switch").upper(),
                       guard.clock(deadline)))


def disarm(module, params):
    if not os.path.isdir(params["state_dir"]):   # check mode on a host the deploy has not prepared
        return dict(changed=False, pending=None, fired=None, said=None)
    if module.check_mode:
        pending = guard.read_pending(params["state_dir"])
        return dict(changed=pending is not None, pending=pending, fired=None, said=None)
    # Read under the guard's lock: a guard run that holds it may be restoring this very switch.
    with guard.Locked(params["state_dir"]):
        pending, fired = pending_and_fired(params)
        if fired or pending is None:
            return dict(changed=False, pending=pending, fired=fired, said=guard.said(fired) if fired else None)
        if params["hold"] and pending.get("group"):
            return hold(params, pending, watch_options(params))
        watched = begin_watch(params, pending)
        guard.end_pending(params["state_dir"], params["unit"], run=lambda *args: run(module, *args), watched=bool(watched))
        if watched:
            # (The switch's follower watches it; one that is not running - it died - starts.)
            run(module, "start", "--no-block", guard.follower_unit(params["unit"]))
    return dict(changed=True, pending=pending, fired=None, said=None,
                watching_until=guard.clock(watched["until"]) if watched else None)


def watch_problem(options):
    """What is wrong with a watch's limits, before anything is changed, or None."""
    try:
        watch.limits((options or {}).get("limits"))
    except ValueError as exc:
        return "%s (watch.limits)" % exc
    return None


def watch_options(params):
    """The watch the confirmation asks for, or None: none asked, or nothing to restore (a first
    deploy keeps no known-good: a watch could only name a failure)."""
    options = params["watch"]
    if not options or float(options["duration"]) <= 0:
        return None
    if host_state.known_good_dir(params["state_dir"]) is None:
        return None
    return options


def begin_watch(params, pending):
    """The confirmed switch's watch (watch.json), or None (watch_options)."""
    options = watch_options(params)
    return guard.begin_watch(params["state_dir"], pending, options, time.time()) if options else None


def hold(params, pending, options):
    """A server group's node other than rank 0, confirmed: its guard holds the switch (phase held)
    until rank 0's guard says the group's is confirmed; the watch `options` begin then (the
    follower's). The caller holds the guard's lock."""
    if pending.get("phase") == guard.HELD:
        return dict(changed=False, pending=pending, fired=None, said=None)
    held = dict(pending, phase=guard.HELD, **({guard.HELD_WATCH: options} if options else {}))
    guard.write_json(os.path.join(params["state_dir"], guard.PENDING), held, 0o600)
    return dict(changed=True, pending=held, fired=None, said=None,
                watching_until=guard.clock(time.time() + float(options["duration"])) if options else None,
                msg="%s: confirmed; its guard holds until rank 0 of server group %s is confirmed%s"
                    % (params["unit"], pending["group"]["name"], ", and watches it then" if options else ""))


def read(module, params):
    """What the guard did on the switch, read under its lock: a guard run holding it may be restoring
    this very switch, and its result is only whole once it ended. With `wait`, read again until
    the switch is not pending any more (a handed-over restore's follower takes the lock soon)."""
    if not os.path.isdir(params["state_dir"]):
        return dict(changed=False, pending=None, fired=None, ended=None, rollback=None, said=None)
    handed = handed_over(params) if params["wait"] <= 0 else None
    if handed:
        # (Its controller handed it over, so the guard did not act on its own: nothing to wait for.)
        return dict(changed=False, pending=handed, fired=None, ended=None, rollback=None, said=None)
    until, pause = time.monotonic() + params["wait"], 0.2
    while True:
        with guard.Locked(params["state_dir"]):
            pending, fired = pending_and_fired(params)
            ended = guard.ended_on(params["config_id"], pending, guard.read_result(params["state_dir"]))
        mine = (pending or {}).get("config_id") == params["config_id"]
        if not mine or time.monotonic() >= until or module.check_mode:
            break
        time.sleep(pause)
        pause = min(pause * 1.5, 1.0)
    if ended:
        rollback = guard.as_rollback(ended)
    elif module.check_mode:
        # (What a real run would restore: the check says it by name.)
        rollback = {"restored": True, "known_good": guard.known_good_name(params["state_dir"])}
    else:
        rollback = guard.unfinished_rollback(params["unit"], params["wait"]) if mine and params["wait"] > 0 and \
            not module.check_mode else None
    return dict(changed=False, pending=pending, fired=fired, ended=ended, rollback=rollback,
                said=guard.said(ended) if ended else None)


def watched(module, params):
    """How the host's watch of the switch `config_id` ended - waited for up to `wait` seconds while
    it runs (the play that waits for it: sglang_watch_wait). Reads only."""
    until, pause = time.monotonic() + params["wait"], 0.5
    while True:
        record = guard.read_watch(params["state_dir"])
        if record and record.get("config_id") != params["config_id"]:
            record = None   # (another switch's: this one's was ended by it, and is gone)
        # (A server group's held node begins its watch once rank 0's guard confirms the group.)
        if not (guard.watching_now(record) or watch_held(params)) or time.monotonic() >= until or module.check_mode:
            break
        time.sleep(pause)
        pause = min(pause * 1.5, 5.0)
    summary = guard.watch_summary(record)
    if summary and summary["outcome"] == guard.RESTORED:
        # (The restore is the guard's result: said as status.yml says it.)
        result = guard.read_result(params["state_dir"]) or {}
        if (result.get("pending") or {}).get("config_id") == params["config_id"]:
            summary.update(said=guard.said(result), restored=result.get("restored"))
    return dict(changed=False, pending=None, fired=None, watch=summary, said=(summary or {}).get("said"))


def unwatch(module, params):
    """The host's watch ended on purpose (a rollback is about to stop the server): nothing is
    restored. Under the guard's lock, so a breach the watch found meanwhile is acted on first, or
    not at all (act_on_breach reads the ended record)."""
    if module.check_mode:
        record = guard.read_watch(params["state_dir"])
        running = guard.watching_now(record, params["config_id"])
        return dict(changed=running, pending=None, fired=None, watch=guard.watch_summary(record) if running else None,
                    said="the watch would end (check mode)" if running else None)
    why = "%s at %s" % (params["cause"] or "ended on purpose", guard.short_clock(time.time()))
    with guard.Locked(params["state_dir"]):
        running = guard.watching_now(guard.read_watch(params["state_dir"]), params["config_id"])
        summary = guard.watch_summary(guard.end_watch(params["state_dir"], guard.SUPERSEDED, why) if running else None)
    return dict(changed=summary is not None, pending=None, fired=None, watch=summary, said=(summary or {}).get("said"))


def watch_held(params):
    """This node's switch `config_id` is held with a watch to begin at rank 0's confirmation."""
    pending = guard.read_pending(params["state_dir"]) or {}
    return pending.get("config_id") == params["config_id"] and bool(pending.get(guard.HELD_WATCH))


def mark_said(module, params):
    """The guard's result (its time `said_time`) is said: moved aside, so that no later report repeats it."""
    path = os.path.join(params["state_dir"], guard.RESULT)
    result = guard.read_result(params["state_dir"]) or {}
    if result.get("time") != params["said_time"]:
        return dict(changed=False, pending=None, fired=None, said=None)
    if not module.check_mode:
        with guard.Locked(params["state_dir"]):
            os.rename(path, path + ".prev")
    return dict(changed=True, pending=None, fired=None, said=guard.said(result))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", required=True, choices=["armed", "disarmed", "said", "read", "watched", "unwatched"]),
            said_time=dict(type="float"),
            unit=dict(type="str", default="sglang.service"),
            unit_dir=dict(type="path", default="/etc/systemd/system"),
            state_dir=dict(type="path", default="/etc/sglang"),
            group=dict(type="str", default="sglang"),
            deadline=dict(type="float"),
            config_id=dict(type="str"),
            variant=dict(type="str"),
            phase=dict(type="str", default="gate", choices=["gate", "rollback", "restore"]),
            cause=dict(type="str"),
            rejoin=dict(type="bool", default=True),
            remember=dict(type="bool", default=False),
            stall=dict(type="float", default=0.0),
            wait=dict(type="float", default=0.0),
            timeout=dict(type="float", default=600.0),
            settle=dict(type="float", default=0.0),
            grace=dict(type="float", default=guard.GRACE),
            leftovers_timeout=dict(type="float", default=60.0),
            tolerance_mib=dict(type="int", default=1024),
            lock_path=dict(type="path", default="/run/inferops-sglang/deploy.lock"),
            gateway=dict(type="dict", options=dict(url=dict(type="str", required=True),
                                                   worker_url=dict(type="str", required=True),
                                                   api_key=dict(type="str", default="", no_log=True))),
            watch=dict(type="dict", options=dict(
                duration=dict(type="float", required=True), interval=dict(type="float", default=10.0),
                url=dict(type="str", required=True), metrics=dict(type="bool", default=False),
                limits=dict(type="dict", default={}), baseline=dict(type="dict", default={}),
                gateway=dict(type="dict", options=dict(url=dict(type="str", required=True),
                                                       worker_url=dict(type="str", required=True),
                                                       api_key=dict(type="str", default="", no_log=True))))),
            host=dict(type="str", default="127.0.0.1"),
            port=dict(type="int", default=30000),
            server_group=dict(type="dict"),
            group_port=dict(type="int", default=30097),
            group_key=dict(type="str", default="", no_log=True),
            hold=dict(type="bool", default=False),
        ),
        required_if=[["state", "armed", ["deadline", "config_id"]], ["state", "said", ["said_time"]],
                     ["state", "read", ["config_id"]], ["state", "watched", ["config_id"]]],
        supports_check_mode=True,
    )
    params, started = module.params, time.monotonic()
    problem = input_problem(params) if params["state"] == "armed" else watch_problem(params["watch"])
    if problem:
        module.fail_json(msg="%s guard: %s; nothing was changed" % (params["unit"], problem), elapsed=0.0)
    if not os.path.isdir(params["state_dir"]) and not module.check_mode and params["state"] not in ("read", "watched", "unwatched"):
        module.fail_json(msg="%s does not exist: the deploy creates the state folders before it arms the guard"
                             % params["state_dir"], elapsed=0.0)
    result = {"armed": arm, "disarmed": disarm, "said": mark_said, "read": read, "watched": watched,
              "unwatched": unwatch}[params["state"]](module, params)
    module.exit_json(elapsed=round(time.monotonic() - started, 3), **result)


if __name__ == "__main__":
    main()
