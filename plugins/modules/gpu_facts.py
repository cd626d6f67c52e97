#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: gpu_facts
short_description: Gather NVIDIA GPU facts from nvidia-smi
version_added: "0.1.0"
description:
  - Runs C(nvidia-smi --query-gpu=... --format=csv,nounits) on the host and returns the GPUs
    as C(ansible_facts.gpu), each with its memory used and free.
  - Runs C(nvidia-smi --query-compute-apps=...) and returns the processes that hold GPU
    memory as C(ansible_facts.gpu.processes), each with the systemd unit it runs in (from
    C(/proc/PID/cgroup)), so a deploy can tell its own service from other tenants.
  - Fails with nvidia-smi's own reason when the driver cannot be reached or no GPU is found,
    so a deploy stops before it touches anything.
author:
  - inferops maintainers (@inferops)
options:
  nvidia_smi:
    description:
      - Path or name of the nvidia-smi binary.
    type: str
    default: nvidia-smi
  timeout:
    description:
      - Seconds to wait for nvidia-smi (a wedged driver can hang it).
    type: int
    default: 30
  models:
    description:
      - Model folders whose C(config.json) to return (parsed) as C(ansible_facts.model_configs),
        null for a folder without one. The preflight's memory estimate reads them; asking here
        saves a second call to the host when nothing read them before.
    type: list
    elements: path
    default: []
attributes:
  check_mode:
    support: full
    description: Only reads; runs the same in check mode.
  diff_mode:
    support: none
    description: Changes nothing, so there is no diff.
notes:
  - Reads only; never changes the host.
seealso:
  - module: inferops.sglang.sglang_health
"""

EXAMPLES = r"""
- name: Read the GPUs
  inferops.sglang.gpu_facts:

- name: Stop unless the host has the cards its class promises
  ansible.builtin.assert:
    that:
      - ansible_facts.gpu.model == 'NVIDIA RTX A6000'
      - ansible_facts.gpu.count >= 2
    fail_msg: "{{ inventory_hostname }} has {{ ansible_facts.gpu.count }}x {{ ansible_facts.gpu.model }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts to add to ansible_facts.
  returned: success
  type: dict
  contains:
    gpu:
      description: The host's NVIDIA GPUs.
      returned: success
      type: dict
      contains:
        count:
          description: Number of GPUs.
          type: int
          sample: 2
        model:
          description: The model name when all GPUs are alike, else null.
          type: str
          sample: NVIDIA RTX A6000
        total_memory_mib:
          description: Sum of memory.total over all GPUs, in MiB.
          type: int
          sample: 98280
        driver_version:
          description: NVIDIA driver version.
          type: str
          sample: 580.105.08
        cuda_version:
          description: Highest CUDA version the driver supports (from the nvidia-smi table).
          type: str
          sample: "13.0"
        devices:
          description: One entry per GPU.
          type: list
          elements: dict
          sample:
            - index: 0
              name: NVIDIA RTX A6000
              uuid: GPU-5b1d2c4e-a6a6-4c1e-0000-1d2e3f4a5b60
              memory_total_mib: 49140
              memory_used_mib: 4
              compute_capability: "8.6"
              pci_bus_id: "00000000:01:00.0"
              memory_free_mib: 49136
        processes:
          description:
            - The processes that hold memory on a GPU, one entry per process and card.
            - C(unit) is the systemd unit (service or scope) the process runs in, null outside any.
            - C(title) is the process's own title, the first word of C(/proc/PID/cmdline). SGLang names
              each rank's process C(sglang::scheduler_TP<i>), so each rank of a server is listed on its own GPU.
          type: list
          elements: dict
          sample:
            - pid: 31337
              name: /opt/sglang/releases/0.5.23-b822ed918ee1/bin/python
              used_memory_mib: 42013
              gpu_uuid: GPU-5b1d2c4e-a6a6-4c1e-0000-1d2e3f4a5b60
              gpu_index: 0
              unit: sglang.service
              title: sglang::scheduler_TP0
    model_configs:
      description: Each of O(models) and its parsed C(config.json) (null when it has none).
      returned: when O(models) is given
      type: dict
      sample: {/models/Qwen3.6-27B: {model_type: qwen3_next, num_hidden_layers: 64}}
elapsed:
  description: Seconds the module took.
  returned: always
  type: float
  sample: 0.08
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.inferops.sglang.plugins.module_utils.host_processes import process_title, process_unit
from ansible_collections.inferops.sglang.plugins.module_utils.host_state import model_configs
from ansible_collections.inferops.sglang.plugins.module_utils.nvidia_smi import NvidiaSmiError, read_gpus


def run_nvidia_smi(module, args):
    return module.run_command(args, environ_update={"LC_ALL": "C"})


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nvidia_smi=dict(type="str", default="nvidia-smi"),
            timeout=dict(type="int", default=30),
            models=dict(type="list", elements="path", default=[]),
        ),
        supports_check_mode=True,
    )
    started = time.monotonic()
    binary = module.get_bin_path(module.params["nvidia_smi"])
    if binary is None:
        module.fail_json(msg="nvidia-smi not found on this host (looked for %r in PATH): install the "
                             "NVIDIA driver utilities or set nvidia_smi" % module.params["nvidia_smi"],
                         elapsed=round(time.monotonic() - started, 3))
    try:
        facts = read_gpus(lambda argv: run_nvidia_smi(module, argv), binary, module.params["timeout"], process_unit,
                          process_title)
    except NvidiaSmiError as exc:
        module.fail_json(msg=str(exc), elapsed=round(time.monotonic() - started, 3))
    found = {"gpu": facts}
    if module.params["models"]:
        found["model_configs"] = model_configs(module.params["models"])
    module.exit_json(changed=False, ansible_facts=found,
                     elapsed=round(time.monotonic() - started, 3))


if __name__ == "__main__":
    main()
