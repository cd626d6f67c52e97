#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: gpu_released
short_description: Wait until a stopped unit's processes are gone and the GPU memory is back
version_added: "0.1.0"
description:
  - Waits, with back-off, until no process runs in O(unit) any more (by its cgroup, as
    C(/proc/PID/cgroup) names it, and as nvidia-smi names the processes that hold GPU
    memory) and until no GPU has more than O(tolerance_mib) of memory used by no listed process.
  - A failed SGLang server can outlive its unit's stop for a while - a process stuck in the
    driver, or memory the driver has not given back yet - and a known-good server started into
    those GPUs sizes its pools from what is free and fails. The rollback runs this between
    stopping the failed unit and starting the known-good one.
  - With O(fail_on_timeout=false) a wait that ends with leftovers returns RV(released=false)
    and a message for the diagnosis instead of failing.
  - Changes nothing.
author:
  - inferops maintainers (@inferops)
options:
  unit:
    description: The unit that was stopped (its processes must be gone).
    type: str
    required: true
  timeout:
    description: Seconds to wait at most. V(0) looks once.
    type: float
    default: 60
  tolerance_mib:
    description:
      - Memory per GPU that no listed process holds and that still counts as free (the
        driver's own, and a display server's, which C(--query-compute-apps) does not list).
    type: int
    default: 1024
  nvidia_smi:
    description: Path or name of the nvidia-smi binary.
    type: str
    default: nvidia-smi
  fail_on_timeout:
    description: Fail when the wait ends with leftovers (else return RV(released=false)).
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    description: Only reads the host, so it waits in check mode too.
notes:
  - nvidia-smi does not list processes of other PID namespaces (containers); their memory is
    "used by no process" here. Raise O(tolerance_mib) on such hosts, or do not wait (the
    sglang_service role's C(sglang_service_leftovers_timeout=0)).
seealso:
  - module: inferops.sglang.gpu_facts
  - module: inferops.sglang.sglang_health
"""

EXAMPLES = r"""
- name: Wait for the failed server's leftovers before the known-good starts
  inferops.sglang.gpu_released:
    unit: sglang.service
    timeout: 60
    fail_on_timeout: false
  register: leftovers

- name: Start the known-good service only into free GPUs
  ansible.builtin.systemd_service:
    name: sglang.service
    state: started
  when: leftovers.released
"""

RETURN = r"""
released:
  description: Whether the unit's processes are gone and the GPUs' memory is back.
  returned: always
  type: bool
  sample: true
processes:
  description: The unit's processes still running when the wait ended.
  returned: always
  type: list
  elements: dict
  sample: [{pid: 812, name: python3, unit: sglang.service}]
gpus:
  description: The GPUs with more than O(tolerance_mib) used by no process when the wait ended.
  returned: always
  type: list
  elements: dict
  sample: [{index: 0, unlisted_mib: 44032}]
waited:
  description: Whether anything was left at the first look (the wait then lasted RV(elapsed)).
  returned: always
  type: bool
  sample: false
msg:
  description: What was found, for the diagnosis.
  returned: always
  type: str
  sample: sglang.service left nothing behind
elapsed:
  description: Seconds the module ran.
  returned: always
  type: float
  sample: 0.2
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.inferops.sglang.plugins.module_utils.gpu_leftovers import describe_leftovers, leftovers
from ansible_collections.inferops.sglang.plugins.module_utils.host_processes import (
    process_title, process_unit, unit_processes,
)
from ansible_collections.inferops.sglang.plugins.module_utils.nvidia_smi import NvidiaSmiError, read_gpus

# Seconds between looks: quick at first (the usual wait is none or a second), then 2 s.
BACKOFF = (0.25, 0.5, 1.0, 2.0)


def look(module, binary):
    gpu = read_gpus(lambda argv: module.run_command(argv, environ_update={"LC_ALL": "C"}), binary, 30, process_unit,
                    process_title)
    return leftovers(module.params["unit"], unit_processes(module.params["unit"]), gpu["devices"], gpu["processes"],
                     module.params["tolerance_mib"])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            unit=dict(type="str", required=True),
            timeout=dict(type="float", default=60),
            tolerance_mib=dict(type="int", default=1024),
            nvidia_smi=dict(type="str", default="nvidia-smi"),
            fail_on_timeout=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    params, started = module.params, time.monotonic()
    binary = module.get_bin_path(params["nvidia_smi"])
    if binary is None:
        module.fail_json(msg="nvidia-smi not found on this host (looked for %r in PATH): the wait for %s's GPU "
                             "memory needs it; set nvidia_smi, or do not wait (the sglang_service role's "
                             "sglang_service_leftovers_timeout: 0)" % (params["nvidia_smi"], params["unit"]),
                         elapsed=0.0)
    try:
        found, looks = look(module, binary), 0
        first = found["released"]
        while not found["released"] and time.monotonic() - started < params["timeout"]:
            time.sleep(BACKOFF[min(looks, len(BACKOFF) - 1)])
            found, looks = look(module, binary), looks + 1
    except NvidiaSmiError as exc:
        module.fail_json(msg="%s: cannot read the GPUs to wait for its leftovers: %s" % (params["unit"], exc),
                         elapsed=round(time.monotonic() - started, 3))
    elapsed = round(time.monotonic() - started, 3)
    result = dict(found, changed=False, waited=not first, elapsed=elapsed,
                  msg=describe_leftovers(params["unit"], found, elapsed))
    if not found["released"] and params["fail_on_timeout"]:
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
