#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: deploy_lock
short_description: Take or release a host's deploy lock
version_added: "0.1.0"
description:
  - One deploy at a time per host. The lock is a file created atomically; it records who
    holds it (controller, user, the C(ansible-playbook) process, playbook, time).
  - A second deploy fails at once, naming the holder. The action plugin of the same name
    fills in O(owner) and tells a stale lock (its holder's process is gone on this controller,
    or it is older than O(max_age)) from a live one; a stale lock is broken only when asked.
  - Taking and releasing the lock report C(changed=false) - the lock lives only for the
    run and is not configuration.
  - Releasing the lock first marks the time (C(<path>.released)); taking it returns that time as
    RV(last_released), so a run that read the host before it held the lock knows whether another
    run finished on the host since (then it reads again).
author:
  - inferops maintainers (@inferops)
options:
  path:
    description: The lock file.
    type: path
    default: /run/inferops-sglang/deploy.lock
  state:
    description: V(present) takes the lock, V(absent) releases it (only if this run holds it).
    type: str
    choices: [present, absent]
    default: present
  owner:
    description:
      - Who takes the lock; set by the action plugin. V(run_id) identifies one playbook run.
    type: dict
    required: true
  force:
    description: Take (or remove) the lock even if another run holds it.
    type: bool
    default: false
  max_age:
    description: Seconds after which a held lock counts as stale.
    type: int
    default: 7200
  break_stale:
    description: Break a lock the action plugin found stale. A live lock is never broken.
    type: bool
    default: false
  guard_state_dir:
    description:
      - The state folder of the host's guard (M(inferops.sglang.sglang_guard)'s
        O(inferops.sglang.sglang_guard#module:state_dir)). A lock whose holder handed its switch's restore to the
        host and then went away is said with what the guard did (RV(ended_by_guard)); the action plugin breaks it
        without O(break_stale) once it knows the holder's process is gone - the switch that lock protected is over.
    type: path
attributes:
  check_mode:
    support: full
    description:
      - Writes nothing in check mode - the lock file included. A check run still fails on a lock another
        live run holds, and says that it would break a stale one (RV(would_break)).
  diff_mode:
    support: none
    description: Nothing to diff.
seealso:
  - module: inferops.sglang.gpu_facts
"""

EXAMPLES = r"""
- name: Take the deploy lock
  inferops.sglang.deploy_lock:
    break_stale: "{{ sglang_break_lock | default(false) }}"

- name: Release it
  inferops.sglang.deploy_lock:
    state: absent
"""

RETURN = r"""
held_by:
  description: The lock's holder when it could not be taken (or was broken).
  returned: when another run holds or held the lock
  type: dict
  sample: {controller: ctl, user: alice, pid: 4242, playbook: deploy_ddtree.yml, since: "2026-11-30T18:00:00Z"}
age:
  description: Seconds since the holder took the lock.
  returned: when another run holds or held the lock
  type: float
broken:
  description: Whether this call broke another run's lock.
  returned: always
  type: bool
would_break:
  description: In check mode, whether a real run would break another run's (stale) lock.
  returned: in check mode
  type: bool
ended_by_guard:
  description: What the host's guard did to end the switch of the lock's holder (its C(guard.json)), when it ended
    it and nothing is pending any more; null otherwise.
  returned: when another run holds the lock and O(guard_state_dir) is given
  type: dict
last_released:
  description:
    - When a run last released this host's lock (the host's clock, epoch seconds); null when
      none has since the host started (the lock lives in C(/run)). A broken lock counts as
      released now, since its holder may have changed the host.
    - After a release, the time of this release (or of the last one, when this run did not hold the lock).
  returned: always
  type: float
  sample: 1796111202.47
ansible_facts:
  description:
    - The lock just taken, or released, for later tasks and roles of the same run. After a release,
      a later deploy of the same run reads the host again (this run may have changed it since its read).
  returned: when the lock was taken or released
  type: dict
  contains:
    deploy_lock:
      description: C(path), C(broken) and C(last_released), as above.
      type: dict
      sample: {path: /run/inferops-sglang/deploy.lock, broken: false, last_released: 1796111202.47}
elapsed:
  description: Seconds the module took.
  returned: always
  type: float
"""

import datetime
import json
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.inferops.sglang.plugins.module_utils import guard


def read_lock(path):
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return {"run_id": None, "unreadable": True}


def write_lock(path, owner, exclusive):
    record = dict(owner, since=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                  taken=time.time())
    flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if exclusive else os.O_TRUNC)
    fd = os.open(path, flags, 0o644)
    with os.fdopen(fd, "w") as fh:
        json.dump(record, fh)


def released_marker(path):
    return path + ".released"


def last_released(path):
    try:
        return os.stat(released_marker(path)).st_mtime
    except OSError:
        return None


def mark_released(path):
    """Before the lock goes: a run that takes it next must see that this one may have changed the host."""
    with open(released_marker(path), "w") as fh:
        fh.write("%.6f\n" % time.time())


def ended_by_guard(state_dir, holder):
    """The guard's result when it ended the switch of the lock's holder (guard.ended_on: nothing
    pending any more), else None."""
    if not state_dir or not holder.get("run_id") or not os.path.isdir(state_dir):
        return None
    result = guard.read_result(state_dir) or {}
    if ((result.get("pending") or {}).get("lock") or {}).get("run_id") != holder["run_id"]:
        return None
    return guard.ended_on(result["pending"].get("config_id"), guard.read_pending(state_dir), result)


def check_only(module, path, owner, done):
    """Check mode: read the lock, write nothing (a check run must leave the host as it was)."""
    holder = read_lock(path) if os.path.exists(path) else None
    if module.params["state"] == "absent" or holder is None or holder.get("run_id") == owner.get("run_id"):
        done(broken=False, would_break=False, last_released=last_released(path))
    age = time.time() - float(holder.get("taken") or 0)
    if module.params["force"] or (module.params["break_stale"] and age > module.params["max_age"]):
        done(broken=False, would_break=True, held_by=holder, age=round(age, 1), last_released=last_released(path))
    module.fail_json(msg="locked by another deploy", held_by=holder, age=round(age, 1), broken=False, elapsed=0.0,
                     ended_by_guard=ended_by_guard(module.params["guard_state_dir"], holder))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", default="/run/inferops-sglang/deploy.lock"),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            owner=dict(type="dict", required=True),
            force=dict(type="bool", default=False),
            max_age=dict(type="int", default=7200),
            break_stale=dict(type="bool", default=False),
            guard_state_dir=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    started = time.monotonic()
    path, owner = module.params["path"], module.params["owner"]

    def done(**kw):
        module.exit_json(changed=False, elapsed=round(time.monotonic() - started, 3), **kw)

    if module.check_mode:
        check_only(module, path, owner, done)

    if module.params["state"] == "absent":
        holder = read_lock(path) if os.path.exists(path) else None
        if holder is not None and (holder.get("run_id") == owner.get("run_id") or module.params["force"]):
            mark_released(path)
            os.unlink(path)
        done(broken=False, last_released=last_released(path))

    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        write_lock(path, owner, exclusive=True)
        done(broken=False, last_released=last_released(path))
    except FileExistsError:
        pass
    holder = read_lock(path)
    age = time.time() - float(holder.get("taken") or 0)
    if holder.get("run_id") == owner.get("run_id"):
        done(broken=False, last_released=last_released(path))
    if module.params["force"] or (module.params["break_stale"] and age > module.params["max_age"]):
        write_lock(path, owner, exclusive=False)
        done(broken=True, held_by=holder, age=round(age, 1), last_released=time.time())
    module.fail_json(msg="locked by another deploy", held_by=holder, age=round(age, 1), broken=False,
                     ended_by_guard=ended_by_guard(module.params["guard_state_dir"], holder),
                     elapsed=round(time.monotonic() - started, 3))


if __name__ == "__main__":
    main()
