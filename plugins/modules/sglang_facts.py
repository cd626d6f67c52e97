#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_facts
short_description: What an SGLang host runs now, in one call
version_added: "0.1.0"
description:
  - Returns, as the C(sglang) fact, the state of the SGLang unit (systemd's view), one probe
    of its health endpoint, the SHA-1 of the files given in O(files) (null for a missing
    file), the record of what was deployed (C(deployed.json)) and, with O(config_id), the
    record of an earlier rollback of that configuration.
  - The probe goes to the address C(deployed.json) records for the running server, so a
    deploy that moves the port still asks the server that runs now; O(url) is used when
    nothing is recorded.
  - With O(models) and O(layout) it also returns what the preflight and the switch need, so a
    deploy reads the host once. Never waits and never changes anything.
author:
  - inferops maintainers (@inferops)
options:
  unit:
    description: The systemd unit.
    type: str
    default: sglang.service
  url:
    description:
      - The health endpoint to probe once when C(deployed.json) records no address.
      - With a record, its scheme and path are kept and the recorded host and port used.
    type: str
    default: http://127.0.0.1:30000/health
  probe_timeout:
    description: Seconds the probe may take (SGLang's handler sleeps one second before it answers).
    type: float
    default: 5.0
  validate_certs:
    description: Verify TLS certificates when O(url) is https.
    type: bool
    default: true
  files:
    description: Files whose SHA-1 to return (the unit, its env file, a release's marker, ...).
    type: list
    elements: path
    default: []
  state_dir:
    description: The folder of C(deployed.json), C(known-good/) and C(rolled-back/).
    type: path
    default: /etc/sglang
  config_id:
    description:
      - The name a deploy gives its configuration (unit, env and secrets). The record of an
        earlier rollback of exactly that configuration, C(rolled-back/<config_id>.json), is
        returned as C(rolled_back).
    type: str
  lock:
    description: The deploy lock file (M(inferops.sglang.deploy_lock)); its holder is returned as C(locked_by).
    type: path
    default: /run/inferops-sglang/deploy.lock
  probe:
    description: Probe the health endpoint (off for readers that only need the records).
    type: bool
    default: true
  models:
    description:
      - Model folders whose C(config.json) to return (parsed) as C(models); null for a folder
        without one. The preflight's memory estimate reads them.
    type: list
    elements: path
    default: []
  layout:
    description:
      - The service account and folders a deploy keeps. What the host has that differs is
        returned as C(layout_drift), one line per difference (empty when nothing differs).
    type: dict
    suboptions:
      user:
        description: The service user.
        type: str
      group:
        description: The service group (the user's primary group).
        type: str
      home:
        description: The user's home folder.
        type: str
      shell:
        description: The user's shell.
        type: str
      dirs:
        description: Folders, each with C(path), C(owner), C(group) and C(mode) (an octal string).
        type: list
        elements: dict
        default: []
  adopt:
    description:
      - A hand-made unit to adopt (C(sglang_service_adopt)). Its state, command line, files
        (fragment, drop-ins, environment files, each with mode, owner and SHA-1) and health are
        returned as C(adopted).
      - Without it, the unit an adopted known-good service names is read (what a rollback restores).
    type: str
  launchers:
    description: The modules that launch an SGLang server; a unit to adopt must run one of them.
    type: list
    elements: str
    default: [sglang.launch_server]
attributes:
  check_mode:
    support: full
    description: Reads only.
  diff_mode:
    support: none
    description: Changes nothing.
  facts:
    support: full
    description: Sets C(ansible_facts.sglang).
seealso:
  - module: inferops.sglang.sglang_health
"""

EXAMPLES = r"""
- name: Read the SGLang service's state
  inferops.sglang.sglang_facts:
    files:
      - /etc/systemd/system/sglang.service
      - /etc/sglang/sglang.env

- name: Say what runs
  ansible.builtin.debug:
    msg: "{{ ansible_facts.sglang.deployed.variant | default('nothing') }}, healthy: {{ ansible_facts.sglang.healthy }}"
"""

RETURN = r"""
ansible_facts:
  description: The C(sglang) fact.
  returned: always
  type: dict
  contains:
    sglang:
      description: The host's SGLang service.
      type: dict
      contains:
        healthy:
          description: The unit is active and running and the endpoint answered 200.
          type: bool
          sample: true
        http_status:
          description: The probe's HTTP status (null when nothing answered).
          type: int
          sample: 200
        http_error:
          description: Why nothing answered, if so.
          type: str
          sample: "[Errno 111] Connection refused"
        unit:
          description: systemd's view (active_state, sub_state, invocation_id, n_restarts, exec_main_pid, ...).
          type: dict
          sample: {active_state: active, sub_state: running, invocation_id: 9f2c4e, n_restarts: 0}
        checksums:
          description: Path -> SHA-1 (null for a missing file).
          type: dict
          sample: {/etc/systemd/system/sglang.service: 5b1c3d2e}
        deployed:
          description: The record of what was deployed (variant, release, server_args, perf), or null.
          type: dict
          sample: {variant: ddtree, release: /opt/sglang/releases/0.5.23-b822ed918ee1}
        known_good:
          description: A known-good service is kept on the host.
          type: bool
          sample: true
        known_good_record:
          description: The known-good service's record (C(known-good/meta.json)), or null.
          type: dict
          sample: {variant: nextn, release: /opt/sglang/releases/0.5.23-b822ed918ee1}
        known_good_files:
          description: File name -> SHA-1 of the known-good snapshot's unit, env and secrets.
          type: dict
          sample: {sglang.service: 5b1c3d2e}
        known_good_problem:
          description:
            - Why the known-good snapshot cannot be trusted (incomplete or corrupt, with what is missing
              or changed), or null when it is complete and true or there is none.
          type: str
          sample: "incomplete: missing sglang.env in /etc/sglang/known-good"
        pending:
          description:
            - The switch a deploy began and has not confirmed (C(pending.json), written by
              M(inferops.sglang.sglang_guard) before the restart), or null. What runs is unverified.
          type: dict
          sample: {config_id: 3f9a0c1d2e4b5a69, variant: ddtree, started: 1796111180.2, deadline: 1796111510.2}
        guard:
          description: What the host's guard last did on its own (C(guard.json)), or null.
          type: dict
          sample: {restored: nextn, healthy: true, seconds: 5.1, reason: deadline}
        watch:
          description:
            - The host's last watch after the gates (C(watch.json), written as a deploy confirmed its switch), or
              null - its C(variant), C(until), C(ended), C(outcome) (V(clean), V(restored), V(superseded)),
              C(ended_why), C(breach) and C(said), its state in one sentence.
          type: dict
          sample: {variant: ddtree, until: 1796113000.0, ended: null, outcome: null, said: "watching DDTREE until 14:32:05"}
        models:
          description: Model folder -> its parsed C(config.json), or null when it has none.
          type: dict
          sample: {/models/Qwen3.6-27B: {model_type: qwen3_next}}
        layout_drift:
          description: How the service account and folders differ from O(layout).
          type: list
          elements: str
          sample: ["/etc/sglang: mode 0755, want 0750"]
        started_at:
          description: When the unit's main process started (epoch seconds), or null when none runs.
          type: float
          sample: 1796111180.2
        restart_pending:
          description:
            - The files among O(files) modified after the main process started - written but not yet
              run (a deploy in progress, or one stopped between its write and its restart).
          type: list
          elements: str
          sample: [/etc/systemd/system/sglang.service]
        locked_by:
          description: The holder of the deploy lock (another run is deploying), or null.
          type: dict
          sample: {controller: ctl, user: alice, pid: 4242, playbook: deploy_ddtree.yml}
        port_holders:
          description:
            - The processes listening on O(url)'s port (the one this deploy's server binds),
              each with its systemd unit (null outside any); empty with O(probe=false).
          type: list
          elements: dict
          sample: [{pid: 4242, name: python3, unit: sglang-qwen.service, address: 127.0.0.1}]
        adopted:
          description:
            - The hand-made unit of O(adopt) (or of an adopted known-good service), null when
              there is none - C(unit), C(load_state), C(active_state), C(sub_state),
              C(unit_file_state), C(argv), C(launcher) (null when it runs no SGLang server),
              C(variant), C(address), C(url), C(healthy) (a 200 from its own processes),
              C(health_said), C(files) and C(missing_files).
          type: dict
          sample: {unit: sglang-qwen.service, active_state: active, healthy: true, launcher: sglang.launch_server}
        read_at:
          description: The host's clock (epoch seconds) when it was read.
          type: float
          sample: 1796111202.47
        config_id:
          description: The O(config_id) the read was made for (its C(rolled_back) is that configuration's).
          type: str
          sample: 3f2a9c0d4e5b6a71
        url:
          description: The address probed.
          type: str
          sample: http://127.0.0.1:30000/health
        rolled_back:
          description: The record of an earlier rollback of O(config_id) (time, variant, cause), or null.
          type: dict
          sample: {time: "2026-11-30T10:12:00Z", variant: ddtree, cause: kv_pool_oom}
elapsed:
  description: Seconds the module ran.
  returned: always
  type: float
  sample: 0.04
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.six.moves.urllib.parse import urlsplit, urlunsplit
from ansible_collections.inferops.sglang.plugins.module_utils import adoption
from ansible_collections.inferops.sglang.plugins.module_utils.health_probe import probe
from ansible_collections.inferops.sglang.plugins.module_utils.host_processes import describe, listeners
from ansible_collections.inferops.sglang.plugins.module_utils import guard
from ansible_collections.inferops.sglang.plugins.module_utils.host_state import (
    DEPLOYED, known_good, known_good_problem, layout_drift, model_configs, modified_since, observe_layout, read_json, rolled_back_path, sha1_of,
    stored_names,
)
from ansible_collections.inferops.sglang.plugins.module_utils.systemd_state import (
    exec_start_argv, parse_show, show_command, unit_status,
)


def recorded_url(url, deployed):
    """The health URL of the server deployed.json says runs now; `url` when none is recorded."""
    server_args = (deployed or {}).get("server_args") or {}
    if not server_args.get("port"):
        return url
    parts = urlsplit(url)
    host = str(server_args.get("host") or parts.hostname or "127.0.0.1")
    netloc = "%s:%s" % ("[%s]" % host if ":" in host else host, server_args["port"])
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def started_at(unit):
    """The main process's start (systemd's monotonic stamp) on the host's clock, or None."""
    if not unit["main_pid"] or not unit["started_monotonic_us"]:
        return None
    return time.time() - (time.monotonic() - unit["started_monotonic_us"] / 1e6)


def file_facts(path, kind):
    """A unit's file as a snapshot keeps it (None when it is missing)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return {"path": path, "kind": kind, "mode": "%04o" % (st.st_mode & 0o7777), "uid": st.st_uid, "gid": st.st_gid,
            "sha1": sha1_of(path)}


def read_unit_to_adopt(module, systemctl, name):
    """What the hand-made unit `name` is and does: systemd's view, its files, its server's
    address and whether that server, and not another process, answers 200."""
    rc, out, err = module.run_command([systemctl, "show", name, "--property=" + ",".join(adoption.PROPERTIES)])
    if rc != 0:
        module.fail_json(msg="%s: systemctl show failed (rc %d): %s" % (name, rc, err.strip()), elapsed=0.0)
    props = adoption.parse_show_all(out)
    one = dict((key, values[-1]) for key, values in props.items())
    argv = exec_start_argv(one.get("ExecStart", ""))
    files, missing = [], []
    for path, kind, optional in adoption.unit_files(props):
        found = file_facts(path, kind)
        if found:
            files.append(found)
        elif not optional:
            missing.append(path)
    for entry, stored in zip(files, stored_names([f["path"] for f in files])):
        entry["name"] = stored
    address = adoption.server_address(argv)
    active = one.get("ActiveState") == "active"
    url = "http://%s:%s/health" % address if address[1] else None
    status, error = probe(url, {}, module.params["validate_certs"], module.params["probe_timeout"]) \
        if active and url else (None, None)
    main_pid = int(one.get("MainPID") or 0)
    holders = listeners(address[1], [main_pid]) if active and address[1] else []
    own = any(h.get("unit") == name for h in holders)
    said = status or error
    if status == 200 and not own:
        said = "200, but from another process: " + ", ".join(describe(h) for h in holders if h.get("unit") != name)
    return {
        "unit": name, "load_state": one.get("LoadState"), "active_state": one.get("ActiveState"),
        "sub_state": one.get("SubState"), "unit_file_state": one.get("UnitFileState"), "main_pid": main_pid,
        "invocation_id": one.get("InvocationID"), "argv": argv,
        "launcher": adoption.launcher(argv, module.params["launchers"]), "variant": adoption.variant(argv),
        "address": list(address), "url": url, "healthy": status == 200 and own, "health_said": said,
        "files": files, "missing_files": missing,
    }


def lock_holder(path):
    if not os.path.exists(path):
        return None
    return read_json(path) or {"unreadable": True}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            unit=dict(type="str", default="sglang.service"),
            url=dict(type="str", default="http://127.0.0.1:30000/health"),
            probe_timeout=dict(type="float", default=5.0),
            validate_certs=dict(type="bool", default=True),
            files=dict(type="list", elements="path", default=[]),
            state_dir=dict(type="path", default="/etc/sglang"),
            config_id=dict(type="str"),
            lock=dict(type="path", default="/run/inferops-sglang/deploy.lock"),
            probe=dict(type="bool", default=True),
            models=dict(type="list", elements="path", default=[]),
            layout=dict(type="dict", options=dict(
                user=dict(type="str"), group=dict(type="str"), home=dict(type="str"), shell=dict(type="str"),
                dirs=dict(type="list", elements="dict", default=[]))),
            adopt=dict(type="str"),
            launchers=dict(type="list", elements="str", default=list(adoption.LAUNCHERS)),
        ),
        supports_check_mode=True,
    )
    params, started = module.params, time.monotonic()
    read_at = time.time()
    systemctl = module.get_bin_path("systemctl", required=True)
    rc, out, err = module.run_command(show_command(params["unit"], systemctl))
    if rc != 0:
        module.fail_json(msg="%s: systemctl show failed (rc %d): %s" % (params["unit"], rc, err.strip()),
                         elapsed=round(time.monotonic() - started, 3))
    unit = unit_status(parse_show(out))
    running = unit["active_state"] == "active" and unit["sub_state"] == "running"
    deployed = read_json(os.path.join(params["state_dir"], DEPLOYED))
    url = recorded_url(params["url"], deployed)
    asked = running and params["probe"]
    status, error = probe(url, {}, params["validate_certs"], params["probe_timeout"]) if asked else (None, None)
    record, snapshot_files = known_good(params["state_dir"])
    main_started = started_at(unit)
    to_adopt = params["adopt"] or ((record or {}).get("adopted") or {}).get("unit")
    facts = {
        "unit": unit, "http_status": status, "http_error": error, "url": url,
        "healthy": asked and status == 200,
        "checksums": dict((path, sha1_of(path)) for path in params["files"]),
        "deployed": deployed,
        "rolled_back": read_json(rolled_back_path(params["state_dir"], params["config_id"]))
        if params["config_id"] else None,
        "known_good": record is not None and (params["unit"] in snapshot_files or bool(record.get("adopted"))),
        "known_good_record": record,
        "known_good_files": snapshot_files,
        "known_good_problem": known_good_problem(params["state_dir"], params["unit"]),
        "pending": guard.read_pending(params["state_dir"]),
        "guard": guard.read_result(params["state_dir"]),
        "watch": guard.watch_summary(guard.read_watch(params["state_dir"])),
        "models": model_configs(params["models"]),
        "layout_drift": layout_drift(params["layout"], observe_layout(params["layout"])) if params["layout"] else [],
        "started_at": main_started,
        "restart_pending": modified_since(params["files"], main_started),
        "locked_by": lock_holder(params["lock"]),
        "port_holders": listeners(urlsplit(params["url"]).port or 80, [unit["main_pid"]]) if params["probe"] else [],
        "adopted": read_unit_to_adopt(module, systemctl, to_adopt) if to_adopt else None,
        "read_at": read_at,
        "config_id": params["config_id"],
    }
    module.exit_json(changed=False, ansible_facts={"sglang": facts}, elapsed=round(time.monotonic() - started, 3))


if __name__ == "__main__":
    main()
