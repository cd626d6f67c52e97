#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_plan
short_description: Read an SGLang host once and plan its deploy - what to write, snapshot, restart and gate
version_added: "0.3.0"
description:
  - Says what the deploy runs - the server's arguments (the envelope, the variant's arguments with its draft model,
    O(extra_args), the host's O(overrides), where it serves from and listens; renamed or removed flags of
    O(version) applied), its command line, and the unit, env and secrets texts (the calling role's
    O(unit_template) and O(env_template), rendered with the task's variables and the C(ExecStart=) line made here).
  - Reads the host with M(inferops.sglang.sglang_facts) (one read-only call), unless this run's read still stands -
    it was made for this configuration and no run released the deploy lock since (O(lock)).
  - Plans from the read (C(module_utils/deploy_plan.py)) - converged or not, which files to write, whether to
    snapshot the running service as the known-good one (and with which record), whether to validate, build,
    restart and daemon-reload, whether an earlier rollback of this configuration stops the run.
  - Refuses, before anything on the host changes, an unknown variant, no release, no model, a variant with a
    draft model but none given, an envelope out of range, a port another process holds, a hand-made unit to adopt
    that is not one, running files that no longer match the deploy record - each by name, with what to change.
  - A host of the rest of its class whose canary did not keep the variant (O(canary_verdict), decided by
    M(inferops.sglang.sglang_canary)) is skipped - read, not planned - and RV(ended) says why.
  - Runs on the controller (an action plugin); only the read goes to the host.
author:
  - inferops maintainers (@inferops)
options:
  variant:
    description: The variant to deploy, a key of O(variants).
    type: str
    required: true
  variants:
    description:
      - Each variant's server arguments. C(draft=true) - the variant serves with a draft model and gets
        C(speculative_draft_model_path) from O(draft_model_path).
    type: dict
    required: true
  envelope:
    description: The host class's serving envelope (SGLang field names).
    type: raw
    default: {}
  overrides:
    description: This host's changes to the envelope.
    type: raw
    default: {}
  extra_args:
    description: More server arguments for every host.
    type: dict
    default: {}
  model_path:
    description: The model folder on the host.
    type: str
    default: ""
  draft_model_path:
    description: The draft model's folder on the host (a variant with C(draft=true) needs it).
    type: str
    default: ""
  release:
    description: The release folder (what P(inferops.sglang.sglang_build#role) names).
    type: str
    default: ""
  version:
    description: The release's SGLang version, which keys O(flags_by_version).
    type: str
    required: true
  flags_by_version:
    description: Per version, C(renamed) and C(removed) server arguments.
    type: dict
    default: {}
  launcher:
    description: The Python module the unit runs.
    type: str
    default: sglang.launch_server
  host:
    description: The address the server binds.
    type: str
    default: 127.0.0.1
  port:
    description: The server's port.
    type: int
    default: 30000
  api_key:
    description: The server's API key (the secrets file, read with C(--config)).
    type: str
    default: ""
  unit:
    description: The managed systemd unit.
    type: str
    default: sglang.service
  adopt:
    description: A hand-made unit to take over as the first known-good service.
    type: str
    default: ""
  user:
    description: The service's system user.
    type: str
    default: sglang
  group:
    description: The service's group.
    type: str
    default: sglang
  state_dir:
    description: The folder of the env and secrets files and the records.
    type: str
    default: /etc/sglang
  data_dir:
    description: The service's working folder.
    type: str
    default: /var/lib/sglang
  lock_path:
    description: The deploy lock file (a host whose lock another run holds is never converged).
    type: str
    default: /run/inferops-sglang/deploy.lock
  lock:
    description:
      - The C(deploy_lock) fact M(inferops.sglang.deploy_lock) left; a lock released after the last read
        makes that read stale.
    type: dict
    default: {}
  retry_rolled_back:
    description: Restart into a configuration that was rolled back before.
    type: bool
    default: false
  watch_limits:
    description: The watch after the gates' limits (C(sglang_watch_limits)), checked by name before anything changes.
    type: dict
    default: {}
  perf_gate:
    description: The performance gate's settings (enabled, baseline, min_ratio, workload), merged with their defaults.
    type: dict
    default: {}
  canary_verdict:
    description:
      - What M(inferops.sglang.sglang_canary) decided for this host of the rest of its class (its result); with
        C(go=false) the host is skipped, and its C(cause) and C(msg) are its report's. Empty - the host goes on.
    type: dict
    default: {}
  started:
    description: When the deploy started (epoch seconds), kept when the plan is made again; default now.
    type: float
  unit_template:
    description:
      - The unit's template, found as C(ansible.builtin.template) finds its source (the role's C(templates/), then
        the playbook's).
      - Rendered byte for byte as the C(ansible.builtin.template) lookup renders it, with the task's variables and
        two more, C(__sglang_service_exec_start) (the C(ExecStart=) command line the plan made) and
        C(__sglang_service_release) (the release's folder).
    type: str
    default: sglang.service.j2
  env_template:
    description: The env file's template, found and rendered as O(unit_template) is.
    type: str
    default: sglang.env.j2
  checker:
    description: The argument checker the role installs (its C(files/)); the plan compares its checksum.
    type: str
    default: validate_server_args.py
  server_group:
    description:
      - The host's node of a server group, M(inferops.sglang.sglang_group)'s result (empty - the default - for a
        server on one host). Its C(nnodes), C(node_rank) and C(dist_init_addr) join the server's arguments
        (checked by the release's parser like every argument); a C(tp_size) that is not a multiple of the
        group's nodes is refused.
      - A node other than rank 0 has no API to measure - its plan's C(perf_gate) is off; rank 0's gate stands for
        the group.
    type: dict
    default: {}
extends_documentation_fragment:
  - inferops.sglang.decision
notes:
  - The plan's fields are the only thing the role's later tasks decide from; see the deploy guide on the docs site.
seealso:
  - module: inferops.sglang.sglang_facts
  - module: inferops.sglang.sglang_outcome
"""

EXAMPLES = r"""
- name: Read the host and plan the deploy
  inferops.sglang.sglang_plan:
    variant: ddtree
    variants:
      nextn: {speculative_algorithm: NEXTN, speculative_num_steps: 3}
      ddtree: {draft: true, speculative_algorithm: DDTREE, speculative_num_draft_tokens: 16}
    envelope: {tp_size: 8, mem_fraction_static: 0.85, context_length: 131072}
    model_path: /models/Qwen3.6-27B
    draft_model_path: /models/Qwen3.6-27B-DFlash
    release: /opt/sglang/releases/0.5.23-4f1c2ab90d3e
    version: "0.5.23"
  register: plan

- name: End here when the host already runs exactly this
  ansible.builtin.meta: end_host
  when: plan.converged
"""

RETURN = r"""
converged:
  description: The host already runs exactly this, healthy, with nothing pending - nothing to do.
  returned: success
  type: bool
ended:
  description:
    - How the deploy ended already (a converged or skipped host), in M(inferops.sglang.sglang_outcome)'s shape; null
      when the deploy goes on.
  returned: success
  type: dict
skip:
  description: Why this host is skipped after its class canary (C(cause), C(msg)); null when it goes on.
  returned: success
  type: dict
write:
  description: The files whose bytes differ (C(unit), C(env), C(secrets)).
  returned: when planned
  type: list
  elements: str
write_config:
  description:
    - Their texts, by name (what M(inferops.sglang.sglang_state) writes), but the secrets file's, which holds the
      API key and so stays out of the task's result.
  returned: when planned
  type: dict
restart:
  description: The switch restarts the unit (and so is gated and guarded).
  returned: when planned
  type: bool
build:
  description: The host lacks the release - the deploy builds it.
  returned: when planned
  type: bool
snapshot:
  description: The running service becomes the known-good one first.
  returned: when planned
  type: bool
before:
  description: What the host ran before (its variant; C(<variant> (unverified)) for a switch never confirmed).
  returned: success
  type: str
server_args:
  description: The server's arguments (SGLang field names).
  returned: success
  type: dict
argv:
  description: The server's command line, for the release's own parser.
  returned: success
  type: list
  elements: str
config_id:
  description: The configuration's name (16 hex digits of the unit, env and secrets texts).
  returned: success
  type: str
read:
  description: The host was read (else this run's earlier read stood).
  returned: success
  type: bool
started:
  description: When the deploy started (epoch seconds).
  returned: success
  type: float
ansible_facts:
  description:
    - C(sglang), the read (M(inferops.sglang.sglang_facts)'s), when the host was read.
    - C(sglang_node_plan), for a node of a server group - whether it restarts, its variant and release, and the
      run of C(ansible-playbook) that planned it - which M(inferops.sglang.sglang_group) compares across the
      group's nodes before the switch.
  returned: when read, or for a node of a server group
  type: dict
elapsed:
  description: Seconds the task took.
  returned: always
  type: float
"""
