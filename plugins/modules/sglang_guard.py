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
  - Before a deploy restarts the service on a new configuration, O(state=armed) records the
    switch as pending on the host (C(pending.json) in O(state_dir)) and arms a guard of the host's
    own systemd - a timer that fires at the deadline and a unit that runs at every boot.
  - Unless the deploy confirms the switch first (O(state=disarmed), once its gates passed and its
    outcome is recorded), the guard restores the known-good service by itself - the same restore
    as the rollback's - proves it healthy on its own address, and writes what it did to the
    journal (C(journalctl -u <unit stem>-guard)) and to C(guard.json) in O(state_dir).
  - A host that boots while a switch is pending restores the known-good at boot, not at the
    deadline - the reboot ended the deploy, so nothing can confirm the switch any more.
  - The guard's program is written to C(/usr/local/lib/inferops-sglang/guard/) (standard library
    only); its units are C(<unit stem>-guard.timer), C(<unit stem>-guard.service) and
    C(<unit stem>-guard-boot.service).
  - Arming again moves the deadline (the rollback re-arms for its own restore); it keeps the
    pending switch's start time.
author:
  - inferops maintainers (@inferops)
options:
  state:
    description: V(armed) records the switch as pending and arms the guard; V(disarmed) confirms it.
    type: str
    choices: [armed, disarmed]
    required: true
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
    description: What the deploy does until the deadline, for the guard's messages.
    type: str
    choices: [gate, rollback]
    default: gate
  timeout:
    description: How long the guard waits for the restored known-good to answer 200.
    type: float
    default: 600
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
"""

RETURN = r"""
pending:
  description: The pending switch as recorded on the host (armed), or the one cleared (disarmed); null when none.
  returned: always
  type: dict
deadline_at:
  description: The deadline, in UTC (armed).
  returned: when armed
  type: str
  sample: "2026-12-03 12:04:31 UTC"
fired:
  description:
    - What the guard did when it already acted on this switch (disarmed) - it restored the known-good before
      the deploy confirmed; null when it did not. The caller decides what that means for its outcome.
  returned: always
  type: dict
said:
  description: The guard's result in one sentence, when it acted.
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
from ansible_collections.inferops.sglang.plugins.module_utils import guard, host_state

PACKAGE = "ansible_collections.inferops.sglang.plugins.module_utils"


# The guard units' program: this collection's guard.py and host_state.py, copied beside it.
LAUNCHER = """#!/usr/bin/env python3
# inferops.sglang: the host's guard over an SGLang switch (written by inferops.sglang.sglang_guard).
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guard  # noqa: E402

code, line = guard.main(sys.argv[1:])
print(line)
raise SystemExit(code)
"""


def write_program(check):
    """The guard's launcher and the two modules it imports, from this collection's own copies."""
    changed = False
    if not check and not os.path.isdir(guard.LIB_DIR):
        os.makedirs(guard.LIB_DIR, 0o755)
    for name in ("guard.py", "host_state.py"):
        data = pkgutil.get_data(PACKAGE, name)
        changed |= host_state.put_file(os.path.join(guard.LIB_DIR, name), data, 0o644, 0, 0, check)
    changed |= host_state.put_file(os.path.join(guard.LIB_DIR, "sglang-guard"), LAUNCHER.encode("utf-8"), 0o755, 0, 0,
                                   check)
    return changed


def write_units(params, deadline, check):
    timer, service, boot = guard.guard_units(params["unit"])
    texts = {timer: guard.timer_text(params["unit"], deadline),
             service: guard.service_text(params["unit"], sys.executable, params["state_dir"], "deadline"),
             boot: guard.service_text(params["unit"], sys.executable, params["state_dir"], "boot")}
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


def arm(module, params):
    try:
        gid = grp.getgrnam(params["group"]).gr_gid
    except KeyError:
        if module.check_mode:   # the deploy creates the group; check mode has not
            gid = 0
        else:
            module.fail_json(msg="group %s does not exist (set group to the service's)" % params["group"],
                             elapsed=0.0)
    now = time.time()
    deadline = now + params["deadline"]
    earlier = guard.read_pending(params["state_dir"]) or {}
    pending = {
        "config_id": params["config_id"], "variant": params["variant"], "phase": params["phase"],
        # A re-arm of the same switch (the rollback's) keeps when the switch began.
        "started": earlier.get("started") if earlier.get("config_id") == params["config_id"] and earlier else now,
        "deadline": deadline, "unit": params["unit"], "unit_dir": params["unit_dir"], "gid": gid,
        "timeout": params["timeout"], "host": params["host"], "port": params["port"],
    }
    if module.check_mode:
        return dict(changed=True, pending=pending, deadline_at=guard.clock(deadline), fired=None, said=None,
                    msg="would arm the guard of %s until %s (check mode)" % (params["unit"], guard.clock(deadline)))
    with guard.Locked(params["state_dir"]):
        write_program(False)
        write_units(params, deadline, False)
        # A new switch: the guard's last result was said by the read that planned it, it is history
        # now. (A rollback's re-arm keeps it: the guard may have acted on this very switch.)
        result = os.path.join(params["state_dir"], guard.RESULT)
        if params["phase"] == "gate" and os.path.exists(result):
            os.rename(result, result + ".prev")
        guard.write_json(os.path.join(params["state_dir"], guard.PENDING), pending)
        timer, _service, boot = guard.guard_units(params["unit"])
        run(module, "daemon-reload")
        run(module, "enable", boot)
        run(module, "restart", timer)
    return dict(changed=True, pending=pending, deadline_at=guard.clock(deadline), fired=None, said=None,
                msg="%s: the host restores the known-good by itself unless this deploy confirms %s by %s"
                    % (params["unit"], (params["variant"] or "the switch").upper(), guard.clock(deadline)))


def disarm(module, params):
    if not os.path.isdir(params["state_dir"]):   # check mode on a host the deploy has not prepared
        return dict(changed=False, pending=None, fired=None, said=None)
    # Read under the guard's lock: a guard run that holds it may be restoring this very switch.
    with guard.Locked(params["state_dir"]):
        pending = guard.read_pending(params["state_dir"])
        fired = guard.fired_on(params["config_id"], pending, guard.read_result(params["state_dir"]))
        if fired or module.check_mode or pending is None:
            return dict(changed=False if fired else pending is not None, pending=pending, fired=fired,
                        said=guard.said(fired) if fired else None)
        timer, _service, boot = guard.guard_units(params["unit"])
        run(module, "disable", "--now", timer)
        run(module, "disable", boot)
        os.unlink(os.path.join(params["state_dir"], guard.PENDING))
    return dict(changed=True, pending=pending, fired=None, said=None)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", required=True, choices=["armed", "disarmed"]),
            unit=dict(type="str", default="sglang.service"),
            unit_dir=dict(type="path", default="/etc/systemd/system"),
            state_dir=dict(type="path", default="/etc/sglang"),
            group=dict(type="str", default="sglang"),
            deadline=dict(type="float"),
            config_id=dict(type="str"),
            variant=dict(type="str"),
            phase=dict(type="str", default="gate", choices=["gate", "rollback"]),
            timeout=dict(type="float", default=600.0),
            host=dict(type="str", default="127.0.0.1"),
            port=dict(type="int", default=30000),
        ),
        required_if=[["state", "armed", ["deadline", "config_id"]]],
        supports_check_mode=True,
    )
    params, started = module.params, time.monotonic()
    if params["state"] == "armed" and params["deadline"] <= 0:
        module.fail_json(msg="deadline must be a positive number of seconds, got %s" % params["deadline"],
                         elapsed=0.0)
    if not os.path.isdir(params["state_dir"]) and not module.check_mode:
        module.fail_json(msg="%s does not exist: the deploy creates the state folders before it arms the guard"
                             % params["state_dir"], elapsed=0.0)
    result = arm(module, params) if params["state"] == "armed" else disarm(module, params)
    module.exit_json(elapsed=round(time.monotonic() - started, 3), **result)


if __name__ == "__main__":
    main()
