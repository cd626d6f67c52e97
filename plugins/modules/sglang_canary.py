#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_canary
short_description: Decide what a host deploys in a canary deploy - the variant its class canary kept, or nothing
version_added: "0.4.0"
description:
  - The one decision of a canary deploy (C(playbooks/deploy.yml) with C(sglang_canary=true)), in
    C(module_utils/canary.py), from one fact - a report M(inferops.sglang.sglang_report) wrote as C(sglang_deploy).
  - For a host of the rest of a class (O(class_canary)) - whether it deploys at all, and which variant. It goes on
    when its class canary's report of this deploy says V(deployed), V(unchanged) or V(check), and then deploys the
    variant the canary kept (a later variant of its ladder, when the first rolled back); else it is skipped, and
    RV(cause) and RV(msg) say why (the canary rolled back, was not retried, failed, or wrote no report of this
    deploy). The canary's outcome decides, never its C(ok) (a canary run with C(sglang_fail_on_rollback=false)
    reports C(ok) on a rollback). Pass the result to the M(inferops.sglang.sglang_plan) of the role as
    C(sglang_service_class_canary_verdict) - a skipped host is read, reported, and not touched.
  - For a class's canary that tries a variant ladder (O(rung)) - whether the next variant deploys. The first always;
    a later one only when the host's own report of this deploy says the one before it rolled back or was not
    retried. RV(preceded_by) is what the variants before it said, for its report.
  - Runs on the controller (an action plugin); it reads no host.
author:
  - inferops maintainers (@inferops)
options:
  deploy_id:
    description: This deploy's name (C(playbooks/deploy.yml) names each deploy); a report of another deploy does not count.
    type: str
    required: true
  report:
    description:
      - With O(class_canary) - the class canary's report, its C(sglang_deploy) fact (C(hostvars[canary].ansible_facts.sglang_deploy)),
        or the row of an earlier job that deployed the canaries (C(sglang_canary_outcomes)).
      - With O(rung) - this host's own C(sglang_deploy) fact, which the rung before wrote.
      - Empty - no report.
    type: dict
    default: {}
  class_canary:
    description:
      - This host's class canary (C(playbooks/deploy.yml)'s sorting, C(module_utils/canary.py) C(phases)). Empty, or
        this host itself - no canary decides, the host deploys O(variant).
      - Mutually exclusive with O(rung).
    type: str
  variant:
    description: The variant this host deploys unless its class canary kept another (the first of its ladder). Required with O(class_canary).
    type: str
  rung:
    description:
      - The rung of this canary's variant ladder about to deploy, from 0. Mutually exclusive with O(class_canary).
    type: int
extends_documentation_fragment:
  - inferops.sglang.decision.controller
"""

EXAMPLES = r"""
# The rest of a class follows its canary (playbooks/deploy.yml's rest play).
- name: Follow the class canary - the variant it kept, or skip this host
  inferops.sglang.sglang_canary:
    deploy_id: "{{ deploy_id }}"
    class_canary: ct129
    report: "{{ hostvars['ct129'].ansible_facts.sglang_deploy | default({}) }}"
    variant: dflash
  register: follows

- name: Deploy what the canary kept, or write why this host is skipped
  ansible.builtin.include_role:
    name: inferops.sglang.sglang_service
  vars:
    sglang_service_variant: "{{ follows.variant }}"
    sglang_service_class_canary: ct129
    sglang_service_class_canary_verdict: "{{ follows }}"
    sglang_service_deploy_id: "{{ deploy_id }}"

# A canary's ladder: the role's first task asks, for each rung after the first.
- name: Deploy this rung of the ladder only when the one before failed in this deploy
  inferops.sglang.sglang_canary:
    deploy_id: "{{ deploy_id }}"
    rung: 1
    report: "{{ ansible_facts.sglang_deploy | default({}) }}"
  register: rung
"""

RETURN = r"""
go:
  description: Whether this host deploys (with O(class_canary)), or this rung deploys (with O(rung)).
  returned: success
  type: bool
variant:
  description: The variant this host deploys - the one its class canary kept, else O(variant).
  returned: with O(class_canary)
  type: str
  sample: dflash
cause:
  description: Why this host is skipped (null - it goes on).
  returned: with O(class_canary)
  type: str
  sample: class canary rolled back (kv_pool_oom)
msg:
  description: What was decided and why, in a sentence; for a skipped host, its report's failure.
  returned: success
  type: str
  sample: "ct131: skipped: class canary rolled back (kv_pool_oom) (the canary: ct129); this host was not touched"
preceded_by:
  description: What the earlier variants of the ladder said in this deploy, for this rung's report (its C(ladder)).
  returned: with O(rung)
  type: str
  sample: ddtree rolled back (kv_pool_oom)
elapsed:
  description: Seconds the task took.
  returned: always
  type: float
"""
