#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_tune
short_description: Choose a tune's next try from what the last SGLang start said, and the class's winner
version_added: "0.4.0"
description:
  - The decision of a tune on a class's canary (the C(sglang_tune) role, C(playbooks/tune.yml)), from the tries
    so far (C(module_utils/tune.py)). Each variant of O(variants) starts at the top of O(bounds); each next
    envelope comes from the last start of that variant - its cause and SGLang's own memory lines
    (C(Load weight end ... avail mem), C(KV Cache is allocated) with its tokens, the figures of
    C(Raise --mem-fraction-static above X) and of the hybrid-state error).
  - The static budget short (C(kv_pool_oom), C(weights_leave_no_kv), C(hybrid_state_oom)), or a healthy start
    whose KV pool holds less than one request of the context length - raise C(mem_fraction_static) to the
    minimum SGLang names, else halve C(max_running_requests), then C(context_length) (never under
    O(min_context)), then raise C(mem_fraction_static) to its bound.
  - The memory outside the static budget short (C(cuda_graph_failed), C(cuda_graph_oom), C(cuda_oom)) - halve
    C(cuda_graph_max_bs_decode), then lower C(mem_fraction_static) by 0.03.
  - Any other cause is no memory limit - the variant failed. A variant with nothing left to move does not fit,
    and the result says which memory is short. A healthy start fits - the largest envelope, as every earlier
    try was larger.
  - Once every variant fits, does not fit or failed, or O(max_tries) or O(time_limit) is reached (or with
    O(finish)), returns the class's result - the fastest of the variants that fit and the known-good - and,
    with O(dir), writes it to C(<dir>/<host_class>.json).
  - Bad bounds fail the task before anything on a host changes, each problem said under its variable's name.
  - Runs on the controller (an action plugin); it reads and changes nothing on the host.
author:
  - inferops maintainers (@inferops)
options:
  host_class:
    description: The class tuned (the result's file name).
    type: str
    required: true
  variants:
    description: The variants to try, in order.
    type: list
    elements: str
    required: true
  envelope:
    description: The class's envelope (SGLang field names); the knobs not in O(bounds) keep its values.
    type: dict
    required: true
  bounds:
    description:
      - Each knob the tune may move, as C([lowest, highest]) - C(context_length), C(max_running_requests),
        C(cuda_graph_max_bs_decode), C(mem_fraction_static).
    type: dict
    default: {}
  min_context:
    description: A fit with a shorter C(context_length) does not count.
    type: int
    default: 1
  max_tries:
    description: Tries (deploys) at most, over all variants.
    type: int
    default: 12
  time_limit:
    description: Seconds from O(started) after which no new try starts.
    type: float
    default: 3600
  started:
    description: When the tune started (epoch seconds); now when not given.
    type: float
  attempts:
    description: The tries so far (this task's RV(attempts) from the last call).
    type: list
    elements: dict
    default: []
  last:
    description: The try just made (the last call's RV(next)); with O(report), it joins RV(attempts).
    type: dict
  report:
    description: The deploy report of the try just made (M(inferops.sglang.sglang_report) with C(read=true)).
    type: dict
  known_good:
    description: The known-good's C(variant) and C(tok_s), measured with the same workload (the floor).
    type: dict
    default: {}
  dir:
    description: Where to write the class's result once the tune is over (on the controller; not in check mode).
    type: str
    default: ""
  finish:
    description: End the tune now (its result is what the tries so far say).
    type: bool
    default: false
extends_documentation_fragment:
  - inferops.sglang.decision.controller
"""

EXAMPLES = r"""
- name: Plan the tune
  inferops.sglang.sglang_tune:
    host_class: a6000
    variants: [ddtree, dflash]
    envelope: "{{ sglang_envelope }}"
    bounds:
      context_length: [32768, 131072]
      max_running_requests: [4, 16]
      mem_fraction_static: [0.8, 0.92]
    min_context: 32768
  register: tune

- name: Choose the next try from what the last one said
  inferops.sglang.sglang_tune:
    host_class: a6000
    variants: [ddtree, dflash]
    envelope: "{{ sglang_envelope }}"
    started: "{{ tune.started }}"
    attempts: "{{ tune.attempts }}"
    last: "{{ tune.next }}"
    report: "{{ try_report.report }}"
  register: tune
"""

RETURN = r"""
next:
  description: The next try - C(variant), C(envelope), C(why) and its number C(try); null when the tune is over.
  returned: success
  type: dict
  sample: {variant: ddtree, envelope: {context_length: 131072, max_running_requests: 8},
           why: "the static budget is short: halving max_running_requests", try: 2}
done:
  description: The tune is over.
  returned: success
  type: bool
variants:
  description: Each variant's state - C(status) (C(fits), C(no_fit), C(failed), C(next), C(not_tried), C(stopped)), C(why),
    C(envelope), C(tries), C(tok_s).
  returned: success
  type: list
  elements: dict
stopped:
  description: Why the tune stopped before every variant was settled (tries or time used); null.
  returned: success
  type: str
attempts:
  description: Every try so far - C(variant), C(envelope), C(why), C(outcome), C(cause), C(evidence), C(memory), C(tok_s).
  returned: success
  type: list
  elements: dict
started:
  description: When the tune started (epoch seconds).
  returned: success
  type: float
planned:
  description: Where each variant's search starts, one line each.
  returned: success
  type: list
  elements: str
result:
  description: Once the tune is over - the C(winner) (C(variant), C(envelope), C(tok_s), C(ratio), C(known_good)),
    C(rows) (each variant with C(ratio) to the known-good and C(vs_winner)), C(known_good), C(attempts).
  returned: when done
  type: dict
table:
  description: Once the tune is over - the class's lines of class x variant x envelope x tok/s x ratio x winner.
  returned: when done
  type: list
  elements: str
path:
  description: The result's file, when written.
  returned: when done
  type: str
elapsed:
  description: Seconds the task took.
  returned: always
  type: float
"""
