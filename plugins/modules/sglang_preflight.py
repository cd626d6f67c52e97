#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_preflight
short_description: Check an SGLang host's GPUs, attention backend, model folders and memory fit before a deploy
version_added: "0.3.0"
description:
  - Reads the GPUs and the processes that hold their memory with M(inferops.sglang.gpu_facts) (one call to the
    host, with the model configs O(models) does not hold), then names every problem at once
    (C(module_utils/preflight.py)) - the GPUs are not O(gpu_model) or fewer than the envelope's C(tp_size), the
    attention backend does not run on their compute capability, a model folder has no C(config.json), the
    envelope's memory lower bound does not fit, a process outside O(unit) (and O(adopt)) holds memory on a GPU the
    deploy needs (with its PID, unit and the command that stops it).
  - Fails with the problems and C(Nothing was changed.); passes with the memory fit's explanation.
  - The draft model is checked only for a variant with C(draft=true) in O(variants).
author:
  - inferops maintainers (@inferops)
options:
  host_class:
    description: The host's class, named in the messages.
    type: str
    default: ""
  gpu_model:
    description: The class's GPU model as nvidia-smi names it.
    type: str
    required: true
  envelope:
    description: The envelope with the host's overrides (C(tp_size), C(mem_fraction_static), C(context_length), ...).
    type: dict
    required: true
  variant:
    description: The variant deployed.
    type: str
    required: true
  variants:
    description: The variants (C(draft=true) - the variant serves with a draft model).
    type: dict
    required: true
  model_path:
    description: The model folder on the host.
    type: str
    required: true
  draft_model_path:
    description: The draft model's folder on the host.
    type: str
    default: ""
  models:
    description: Model folders already read (folder -> its parsed C(config.json), null without one).
    type: dict
    default: {}
  attention_backend_sm:
    description: Attention backends that need particular GPU generations -> the compute capabilities they run on.
    type: dict
    default: {}
  check_fit:
    description: Check the envelope's memory lower bound against the smallest GPU.
    type: bool
    default: true
  unit:
    description: The managed unit (its own GPU memory is no obstacle - the deploy restarts it).
    type: str
    default: sglang.service
  adopt:
    description: A hand-made unit the deploy adopts and stops (its memory is no obstacle either).
    type: str
    default: ""
  nnodes:
    description:
      - The nodes of the server this host is one of (M(inferops.sglang.sglang_group)'s C(nnodes)); 1 for a server on
        one host. Each node needs C(tp_size / nnodes) of the class's GPUs; the weights still split over C(tp_size).
    type: int
    default: 1
extends_documentation_fragment:
  - inferops.sglang.decision
seealso:
  - module: inferops.sglang.gpu_facts
"""

EXAMPLES = r"""
- name: Check the GPUs, the attention backend, the model folders and the memory fit
  inferops.sglang.sglang_preflight:
    host_class: blackwell
    gpu_model: NVIDIA RTX PRO 6000 Blackwell Server Edition
    envelope: {tp_size: 8, mem_fraction_static: 0.85, context_length: 131072, attention_backend: triton}
    variant: ddtree
    variants: {nextn: {}, ddtree: {draft: true}}
    model_path: /models/Qwen3.6-27B
    draft_model_path: /models/Qwen3.6-27B-DFlash
"""

RETURN = r"""
problems:
  description: Every problem found (empty when the host passes).
  returned: success or failure
  type: list
  elements: str
fit:
  description: The memory-fit estimate (C(fits), C(explanation), ...); null when not checked.
  returned: success or failure
  type: dict
msg:
  description: The fit's explanation, or the problems and C(Nothing was changed.).
  returned: always
  type: str
ansible_facts:
  description: C(gpu), what M(inferops.sglang.gpu_facts) read.
  returned: success or failure
  type: dict
elapsed:
  description: Seconds the task took.
  returned: always
  type: float
"""
