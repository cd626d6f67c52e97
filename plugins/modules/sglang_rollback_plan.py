#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_rollback_plan
short_description: Read an SGLang host once and say whether a rollback restores its known-good service
version_added: "0.3.0"
description:
  - Reads the host with M(inferops.sglang.sglang_facts) (one read-only call) and decides
    (C(deploy_plan.rollback_plan)) - restore, unless the known-good service already serves, healthy, from its
    own unit and on the known-good's bytes. A switch never confirmed (pending) is restored whatever it answers.
  - Fails, before anything changes, when the host keeps no known-good service, or one that is incomplete or
    corrupt, saying what to do.
author:
  - inferops maintainers (@inferops)
options:
  unit:
    description: The managed unit.
    type: str
    default: sglang.service
  host:
    description: The address the server answers on.
    type: str
    default: 127.0.0.1
  port:
    description: The server's port.
    type: int
    default: 30000
  state_dir:
    description: Where the known-good service is kept.
    type: str
    default: /etc/sglang
extends_documentation_fragment:
  - inferops.sglang.decision
seealso:
  - module: inferops.sglang.sglang_plan
"""

EXAMPLES = r"""
- name: Read what runs and the known-good service, and decide whether to restore it
  inferops.sglang.sglang_rollback_plan:
    unit: sglang.service
  register: decided
"""

RETURN = r"""
restore:
  description: The known-good service must be restored (else it already serves, healthy).
  returned: success
  type: bool
known_good:
  description: The known-good service's variant, from its record (null when the record does not name it).
  returned: success
  type: str
ansible_facts:
  description: C(sglang), the read.
  returned: success
  type: dict
elapsed:
  description: Seconds the task took.
  returned: always
  type: float
"""
