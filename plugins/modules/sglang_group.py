#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_group
short_description: Say which node of its SGLang server group a host is, and refuse a group this run cannot change as one
version_added: "0.4.0"
description:
  - One SGLang server can span several hosts (C(--nnodes N --node-rank i --dist-init-addr HOST:PORT)). Its nodes
    are an inventory group, in rank order - the first host is rank 0, the server's face - for which the inventory
    sets O(name) and O(dist_init_addr).
  - Returns the host's place in the group (its rank, the group's size and rank 0), which
    M(inferops.sglang.sglang_plan) takes as O(inferops.sglang.sglang_plan#module:server_group) and turns into the
    node's arguments.
  - Fails, before anything changes, when the group cannot change as one in this run - a node left out by the
    limit, in another batch of C(serial), or failed or unreachable earlier in the run - naming each such node and
    its rank and saying what to change. A node left behind would keep the old release and the server would be
    down.
  - Decides on the controller from its inputs alone (C(server_group)); it reads no host.
author:
  - inferops maintainers (@inferops)
options:
  name:
    description: The server group's name, the inventory group that lists its nodes.
    type: str
    required: true
  nodes:
    description: The group's hosts in rank order (C(groups[name])).
    type: list
    elements: str
    required: true
  dist_init_addr:
    description: Where the ranks meet, C(HOST:PORT) - rank 0's address and a port free on it.
    type: str
    default: ""
  in_play:
    description: The play's hosts after the limit (C(ansible_play_hosts_all)).
    type: list
    elements: str
    required: true
  batch:
    description: This batch of C(serial) (C(ansible_play_batch)).
    type: list
    elements: str
    required: true
  active:
    description: This batch's hosts that have not failed nor been unreachable (C(ansible_play_hosts)).
    type: list
    elements: str
    required: true
  ready:
    description:
      - Say that this node is ready to switch - read, locked, preflighted and built - with its plan (its
        C(sglang_node_plan) fact, from M(inferops.sglang.sglang_plan)), as the fact C(sglang_node_ready) the
        other nodes check next (O(plans)).
      - Run by the nodes together, just before the check. A node that failed earlier never says it; it still
        counts among the play's active hosts until its block's rescue has run, which ansible-core runs after the
        other hosts' next tasks.
      - Mutually exclusive with O(plans).
    type: dict
  plans:
    description:
      - Before the switch, every node's plan of this deploy as it said it is ready, in rank order (each node's
        C(sglang_node_ready) fact, see O(ready); null where a node has none). The group is refused when a node is
        not ready (it stopped before; a plan of another O(variant), or made by another run of
        C(ansible-playbook) - a fact cache may keep an earlier run's - is not this deploy's), when its nodes would
        run different releases, or when some nodes would restart and others would not - a node restarted alone
        cannot rejoin the others' running ranks.
      - Omitted - not checked (before the plan).
    type: list
    elements: raw
  variant:
    description: This deploy's variant, which the nodes' plans must be of.
    type: str
    default: ""
extends_documentation_fragment:
  - inferops.sglang.decision.controller
seealso:
  - module: inferops.sglang.sglang_plan
"""

EXAMPLES = r"""
- name: Say which node of its server group this host is, or refuse a group split by the limit
  inferops.sglang.sglang_group: &group_inputs
    name: "{{ sglang_service_server_group }}"
    nodes: "{{ groups[sglang_service_server_group] | default([]) }}"
    dist_init_addr: "{{ sglang_service_dist_init_addr }}"
    in_play: "{{ ansible_play_hosts_all }}"
    batch: "{{ ansible_play_batch }}"
    active: "{{ ansible_play_hosts }}"
  register: group

# ... each node's plan, preflight and build, then, the nodes together:
- name: Say that this node is ready to switch with the others
  inferops.sglang.sglang_group:
    <<: *group_inputs
    ready: "{{ ansible_facts.sglang_node_plan }}"

- name: Stop here unless every node is ready and restarts with the others
  inferops.sglang.sglang_group:
    <<: *group_inputs
    plans: "{{ groups[sglang_service_server_group] | map('extract', hostvars, 'ansible_facts') | map(attribute='sglang_node_ready', default={}) }}"
    variant: dflash
"""

RETURN = r"""
name:
  description: The server group's name (O(name)).
  returned: success
  type: str
dist_init_addr:
  description: Where the ranks meet (O(dist_init_addr)).
  returned: success
  type: str
node_rank:
  description: This host's rank in the group (its place in O(nodes)).
  returned: success
  type: int
nnodes:
  description: How many nodes the group has.
  returned: success
  type: int
face:
  description: This host is rank 0 - it serves the API and is the gateway's worker.
  returned: success
  type: bool
rank0:
  description: The group's rank 0.
  returned: success
  type: str
nodes:
  description: The group's hosts in rank order.
  returned: success
  type: list
  elements: str
ansible_facts:
  description: With O(ready), C(sglang_node_ready) - the plan it was given.
  returned: when O(ready) is given
  type: dict
  contains:
    sglang_node_ready:
      description: This node's plan, said ready to switch.
      type: dict
elapsed:
  description: Seconds the task took.
  returned: always
  type: float
"""
