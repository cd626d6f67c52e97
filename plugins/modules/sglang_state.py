#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_state
short_description: Keep an SGLang host's deploy records - the known-good service, what runs, what was rolled back
version_added: "0.1.0"
description:
  - Manages the records a deploy keeps in O(state_dir) (C(/etc/sglang)), one operation per call.
  - O(known_good=snapshot) makes the running service's unit, env and secrets (O(files)) and its
    record (O(record)) the known-good service, all at once - the new snapshot is staged beside
    the old one and swapped in with two renames, so a host that stops half-way still has a
    complete known-good service (the older one), never a mix of the two. It is refused when
    O(unit) restarted since its record's C(invocation_id) was read (the host's watch restored the
    known-good meanwhile, say), and it ends the host's watch of the running service
    (M(inferops.sglang.sglang_guard)'s O(inferops.sglang.sglang_guard#module:watch)), under the guard's lock.
  - O(known_good=restore) puts the known-good unit, env and secrets back where the service reads
    them (each file replaced atomically) and its record back as C(deployed.json), and returns the
    record. With no known-good service it changes nothing and returns RV(present=false).
  - An adopted known-good service (a hand-made unit a deploy took over) comes back as it was -
    its unit file, drop-ins and environment files where they were, with their modes and owners;
    RV(unit) then names it, so the caller starts it under its own name.
  - O(config) writes the service's unit, env and secrets files (those given). With
    O(known_good=snapshot) in the same call the snapshot is taken first, so the unit of a
    healthy service is never replaced before it is kept.
  - O(deployed) writes the record of what runs now (C(deployed.json)); O(rolled_back) records a
    configuration that was rolled back, under its O(config_id), so a re-run does not crash it again.
  - Never restarts anything (M(ansible.builtin.systemd_service) does); each write happens only when
    the bytes, mode or owner differ.
author:
  - inferops maintainers (@inferops)
options:
  known_good:
    description: V(snapshot) the running service as the known-good one, or V(restore) the known-good service.
    type: str
    choices: [snapshot, restore]
  files:
    description:
      - The running service's files to snapshot (the unit, its env file and, when it has one,
        its secrets file); they are stored under their base names.
    type: list
    elements: path
  record:
    description: The known-good service's record (C(known-good/meta.json)) for O(known_good=snapshot).
    type: dict
  config:
    description:
      - The service's files to write, each replaced atomically and only when its bytes, mode or
        owner differ. Not with O(known_good=restore).
    type: dict
    suboptions:
      unit:
        description: The unit file's text, written to O(unit_dir)/O(unit) (root, 0644).
        type: str
      env:
        description: The environment file's text, written to O(state_dir)/sglang.env (root:O(group), 0640).
        type: str
      secrets:
        description: The secrets file's text, written to O(state_dir)/secrets.yaml (root:O(group), 0640); never shown.
        type: str
  deployed:
    description: The record of what runs now, written as C(deployed.json).
    type: dict
  rolled_back:
    description: The record of a rolled-back configuration (time, variant, cause, release).
    type: dict
  config_id:
    description: The name of the rolled-back configuration (its record is C(rolled-back/<config_id>.json)).
    type: str
  state_dir:
    description: The folder of the records.
    type: path
    default: /etc/sglang
  unit:
    description: The systemd unit the known-good unit file is restored as.
    type: str
    default: sglang.service
  unit_dir:
    description: Where the unit file is restored.
    type: path
    default: /etc/systemd/system
  group:
    description: The group that may read the env and secrets files (the service's group).
    type: str
    default: sglang
attributes:
  check_mode:
    support: full
    description: Reports what would change and changes nothing.
  diff_mode:
    support: partial
    description: The unit and env files O(config) or O(known_good=restore) change, before and after; for O(deployed), the record.
seealso:
  - module: inferops.sglang.sglang_facts
"""

EXAMPLES = r"""
- name: Keep the healthy running service as the known-good one
  inferops.sglang.sglang_state:
    known_good: snapshot
    files: [/etc/systemd/system/sglang.service, /etc/sglang/sglang.env]
    record: "{{ ansible_facts.sglang.deployed }}"

- name: Keep the healthy running service, then write the new unit (one call)
  inferops.sglang.sglang_state:
    known_good: snapshot
    files: [/etc/systemd/system/sglang.service, /etc/sglang/sglang.env]
    record: "{{ ansible_facts.sglang.deployed }}"
    config:
      unit: "{{ lookup('ansible.builtin.template', 'sglang.service.j2') }}"

- name: Bring the known-good service back
  inferops.sglang.sglang_state:
    known_good: restore
  register: restored

- name: Record what runs now
  inferops.sglang.sglang_state:
    deployed: {variant: ddtree, release: /opt/sglang/releases/0.5.23-b822ed918ee1}
"""

RETURN = r"""
present:
  description: Whether a known-good service exists after the call (for O(known_good=restore), whether there was one to restore).
  returned: always
  type: bool
  sample: true
record:
  description: The known-good record restored or snapshot, or the record written (null when there was none to restore).
  returned: always
  type: dict
  sample: {variant: nextn, release: /opt/sglang/releases/0.5.23-b822ed918ee1}
changed_files:
  description: The files written (or, in check mode, that would be).
  returned: always
  type: list
  elements: str
  sample: [/etc/systemd/system/sglang.service]
unit:
  description: For O(known_good=restore), the unit the known-good service runs as (an adopted one's own name).
  returned: with O(known_good=restore)
  type: str
  sample: sglang-qwen.service
adopted:
  description: For O(known_good=restore), whether the known-good service is an adopted hand-made unit.
  returned: with O(known_good=restore)
  type: bool
  sample: false
daemon_reload:
  description: For O(known_good=restore), whether a unit file or drop-in changed (systemd must reload).
  returned: with O(known_good=restore)
  type: bool
  sample: true
name:
  description: For O(known_good=restore), the known-good service as a diagnosis names it (null when there is none).
  returned: with O(known_good=restore)
  type: str
  sample: NEXTN (sglang-qwen.service, adopted)
elapsed:
  description: Seconds the module ran.
  returned: always
  type: float
  sample: 0.01
"""

import contextlib
import grp
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_text
from ansible_collections.inferops.sglang.plugins.module_utils import guard
from ansible_collections.inferops.sglang.plugins.module_utils.adoption import display_name
from ansible_collections.inferops.sglang.plugins.module_utils.systemd_state import parse_show, show_command, unit_status
from ansible_collections.inferops.sglang.plugins.module_utils.host_state import (
    DEPLOYED, KNOWN_GOOD, META, dump_json, known_good_dir, known_good_problem, put_file, read_json,
    restore_entries, restore_known_good, rolled_back_path, snapshot_known_good,
)
from ansible_collections.inferops.sglang.plugins.module_utils.host_state import service_files as host_service_files


def read_text(path):
    try:
        with open(path, "rb") as fh:
            return to_text(fh.read())
    except OSError:
        return ""


def group_id(module, name):
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        module.fail_json(msg="group %s does not exist: the service's group owns the env and secrets files "
                             "(create it, or set group)" % name, elapsed=0.0)


def snapshot(module, params):
    missing = [f for f in params["files"] if not os.path.isfile(f)]
    if missing:
        module.fail_json(msg="cannot snapshot the known-good service: %s missing; the known-good service "
                             "was left as it was and nothing was written" % ", ".join(missing), elapsed=0.0)
    gid = group_id(module, params["group"])
    # The host's watch of what runs may restore the known-good at any moment: under its lock, what
    # runs is checked to be what the deploy read, and the watch ends (its restore would be itself).
    # With no watch, nothing else restarts the service while the deploy holds its lock.
    watched = os.path.exists(os.path.join(params["state_dir"], guard.WATCH)) and not module.check_mode
    with contextlib.ExitStack() as held:
        if watched:
            held.enter_context(guard.Locked(params["state_dir"]))
        refuse_a_restarted_unit(module, params)
        if watched:
            guard.end_watch(params["state_dir"], guard.SUPERSEDED, "the next deploy took it as the known-good at %s"
                            % guard.short_clock(time.time()))
        changed = snapshot_known_good(params["state_dir"], params["files"], params["record"], gid, module.check_mode)
    return [os.path.join(params["state_dir"], KNOWN_GOOD)] if changed else []


def refuse_a_restarted_unit(module, params):
    """The snapshot keeps what the deploy read: a unit restarted since (the host's watch restored
    the known-good meanwhile, say) is refused. The unit the record read: an adopted one's own."""
    planned = params["record"].get("invocation_id")
    unit = (params["record"].get("adopted") or {}).get("unit") or params["unit"]
    if planned and running_invocation(module, unit) != planned:
        module.fail_json(msg="cannot snapshot the known-good service: %s restarted since the deploy read it (its "
                             "invocation is not %s); the known-good service was left as it was. Run the deploy "
                             "again." % (unit, planned), elapsed=0.0)


def running_invocation(module, unit):
    _rc, out, _err = module.run_command(show_command(unit))
    return unit_status(parse_show(out))["invocation_id"]


def service_files(params, gid):
    """(config key, path, mode, uid, gid) of the files the service reads."""
    return host_service_files(params["unit_dir"], params["unit"], params["state_dir"], gid)


def file_diff(name, path, before, after):
    if name in ("secrets", "environment_file"):
        return dict(before_header=path, after_header=path, before="(secret)\n", after="(secret, changed)\n")
    return dict(before_header=path, after_header=path, before=before, after=after)


def write_config(module, params):
    """The files given in `config`; returns (changed paths, diffs)."""
    gid = group_id(module, params["group"])
    changed, diffs = [], []
    for name, path, mode, uid, file_gid in service_files(params, gid):
        text = params["config"].get(name)
        if text is None:
            continue
        before = read_text(path)
        if put_file(path, text.encode("utf-8"), mode, uid, file_gid, module.check_mode):
            changed.append(path)
            diffs.append(file_diff(name, path, before, text))
    return changed, diffs


def switch(module, params):
    """Snapshot (when asked), then the new configuration: the order is the guarantee."""
    changed = snapshot(module, params) if params["known_good"] == "snapshot" else []
    diffs = []
    if params["config"]:
        written, diffs = write_config(module, params)
        changed += written
    result = dict(changed=bool(changed), changed_files=changed,
                  present=params["known_good"] == "snapshot" or known_good_dir(params["state_dir"]) is not None,
                  record=params["record"])
    if module._diff and diffs:
        result["diff"] = diffs
    return result


def restore(module, params):
    gid = group_id(module, params["group"])
    problem = known_good_problem(params["state_dir"], params["unit"])
    if problem:
        module.fail_json(msg="%s: the known-good service is %s. Nothing was restored and the running service was "
                             "not touched: put the missing files back, or deploy a working variant "
                             "(playbooks/deploy_nextn.yml) to take a new known-good." % (params["unit"], problem),
                         problem=problem, elapsed=0.0)
    folder = known_good_dir(params["state_dir"])
    record = read_json(os.path.join(folder, META)) if folder else None
    entries = restore_entries(params["unit_dir"], params["unit"], params["state_dir"], gid, record)
    texts = dict((path, (read_text(path), read_text(os.path.join(folder, name)) if folder else ""))
                 for _kind, name, path, _m, _u, _g in entries)
    targets = [(name, path, mode, uid, file_gid) for _kind, name, path, mode, uid, file_gid in entries]
    record, changed = restore_known_good(params["state_dir"], targets, module.check_mode)
    adopted = (record or {}).get("adopted") or {}
    result = dict(changed=bool(changed), changed_files=changed, present=record is not None, record=record,
                  unit=adopted.get("unit") or params["unit"], adopted=bool(adopted),
                  daemon_reload=any(path in changed for kind, _n, path, _m, _u, _g in entries
                                    if kind in ("unit", "dropin")),
                  name=display_name(record) if record else None)
    if module._diff and changed:
        result["diff"] = [file_diff(kind, path, *texts[path]) for kind, _n, path, _m, _u, _g in entries
                          if path in changed]
    return result


def write_record(module, state_dir, path, record):
    text = dump_json(record)
    before = read_text(path)
    if not os.path.isdir(os.path.dirname(path)):
        module.fail_json(msg="%s does not exist: the deploy creates the state folders before it records anything"
                             % os.path.dirname(path), elapsed=0.0)
    changed = put_file(path, text.encode("utf-8"), 0o644, 0, 0, module.check_mode)
    result = dict(changed=changed, changed_files=[path] if changed else [],
                  present=known_good_dir(state_dir) is not None, record=record)
    if module._diff and changed:
        result["diff"] = dict(before=before, after=text, before_header=path, after_header=path)
    return result


def record_deployed(module, params):
    """deployed.json, unless the host's watch restored the known-good over this very configuration
    already (a failure in the seconds after the confirmation): the restore wrote the known-good's
    record, which stays. Under the guard's lock, as the watch's restore is."""
    path = os.path.join(params["state_dir"], DEPLOYED)
    if module.check_mode or not os.path.isdir(params["state_dir"]):
        return write_record(module, params["state_dir"], path, params["deployed"])
    with guard.Locked(params["state_dir"]):
        watched = guard.read_watch(params["state_dir"]) or {}
        if watched.get("config_id") == params["deployed"].get("config_id") and watched.get("outcome") == guard.RESTORED:
            return dict(changed=False, changed_files=[], present=known_good_dir(params["state_dir"]) is not None,
                        record=None, msg="the host's watch restored the known-good over this configuration already "
                        "(%s): its record stays" % (watched.get("ended_why") or "a breach"))
        return write_record(module, params["state_dir"], path, params["deployed"])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            known_good=dict(type="str", choices=["snapshot", "restore"]),
            files=dict(type="list", elements="path"),
            record=dict(type="dict"),
            config=dict(type="dict", options=dict(
                unit=dict(type="str"), env=dict(type="str"), secrets=dict(type="str", no_log=True))),
            deployed=dict(type="dict"),
            rolled_back=dict(type="dict"),
            config_id=dict(type="str"),
            state_dir=dict(type="path", default="/etc/sglang"),
            unit=dict(type="str", default="sglang.service"),
            unit_dir=dict(type="path", default="/etc/systemd/system"),
            group=dict(type="str", default="sglang"),
        ),
        mutually_exclusive=[["known_good", "deployed", "rolled_back"], ["config", "deployed", "rolled_back"]],
        required_one_of=[["known_good", "config", "deployed", "rolled_back"]],
        required_if=[["known_good", "snapshot", ["files", "record"]]],
        required_by={"rolled_back": "config_id"},
        supports_check_mode=True,
    )
    params, started = module.params, time.monotonic()
    if params["known_good"] == "restore" and params["config"]:
        module.fail_json(msg="config writes a new configuration and known_good=restore brings the known-good one "
                             "back: give one of them", elapsed=0.0)
    if params["known_good"] == "restore":
        result = restore(module, params)
    elif params["known_good"] == "snapshot" or params["config"]:
        result = switch(module, params)
    elif params["deployed"] is not None:
        result = record_deployed(module, params)
    else:
        result = write_record(module, params["state_dir"], rolled_back_path(params["state_dir"], params["config_id"]),
                              params["rolled_back"])
    module.exit_json(elapsed=round(time.monotonic() - started, 3), **result)


if __name__ == "__main__":
    main()
