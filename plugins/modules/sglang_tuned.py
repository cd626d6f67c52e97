#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_tuned
short_description: Read what each host class's tune learned - its winning variant and envelope
version_added: "0.4.0"
description:
  - Reads C(<dir>/<class>.json), the result M(inferops.sglang.sglang_tune) wrote for each class in O(classes), and
    returns the winning variant and envelope of each (C(module_utils/tune.py) C(learned)).
  - When the known-good won, the class keeps its own envelope (RV(tuned) says C(envelope=null)).
  - A class without a result fails the task, naming the class, the folder and what to run - C(playbooks/deploy.yml)
    calls it once in its sorting play with C(sglang_envelope_from=tuned), before any host is touched.
  - Runs on the controller (an action plugin); it reads no host.
author:
  - inferops maintainers (@inferops)
options:
  dir:
    description: The tune's result folder (C(sglang_tune_result_dir)); a relative one is taken from where C(ansible-playbook) runs.
    type: str
    required: true
  classes:
    description: The host classes to deploy (each host's C(sglang_host_class)); repeats are read once.
    type: list
    elements: str
    required: true
extends_documentation_fragment:
  - inferops.sglang.decision.controller
"""

EXAMPLES = r"""
- name: Read what each class's tune learned
  inferops.sglang.sglang_tuned:
    dir: tuned
    classes: [a6000, blackwell]
  run_once: true
  register: learned
"""

RETURN = r"""
tuned:
  description: Per class - C(variant), C(envelope) (null - the class's own, when the known-good won), C(tok_s), C(ratio)
    (to the known-good) and C(tuned_at).
  returned: success
  type: dict
  sample: {a6000: {variant: dflash, envelope: {tp_size: 2, context_length: 131072, max_running_requests: 4}, tok_s: 247.7,
    ratio: 1.378, tuned_at: "2026-12-04T09:26:19Z"}}
dir:
  description: The folder read (absolute).
  returned: success
  type: str
elapsed:
  description: Seconds the task took.
  returned: always
  type: float
"""
