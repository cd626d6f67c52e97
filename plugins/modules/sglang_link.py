#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_link
short_description: Probe a server group node's link to where its ranks meet (rank 0's dist_init_addr)
version_added: "0.4.0"
description:
  - The ranks of an SGLang server over several hosts meet at C(--dist-init-addr), a TCP store on rank 0, and
    then exchange every batch. A node that cannot reach it never joins, and one whose link breaks after the start
    hangs the whole server in its next collective - with no error anywhere but rank 0's health check timing out.
  - From the host, opens one TCP connection to O(server_group)'s C(dist_init_addr). An answer - the store
    accepts, or the host refuses because nothing listens there now - proves the path; no route, an unreachable
    network or no answer within O(timeout) does not. On rank 0 it also checks that the address is one of the
    host's own (rank 0 holds the store; a host that lost its address, or an address of another host, is not it).
  - The C(sglang_service) role runs it on every node of a group in the preflight (a node that cannot reach rank 0
    stops the group before anything changes) and after the gates (a link cut since the start names the node whose
    link broke, not only rank 0's lost health).
  - Sends nothing on the connection and closes it at once (torch's TCP store drops a client that says nothing).
    Changes nothing.
author:
  - inferops maintainers (@inferops)
options:
  server_group:
    description:
      - This host's place in its server group, M(inferops.sglang.sglang_group)'s result - C(name), C(nodes),
        C(node_rank), C(face), C(rank0) and C(dist_init_addr) are read.
    type: dict
    required: true
  timeout:
    description: Seconds to wait for an answer to the connection.
    type: float
    default: 5
  fail_on_broken:
    description: Fail when the link is broken (else return RV(ok=false) and RV(msg) for the outcome).
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    description: Only probes, so it probes in check mode too.
notes:
  - A firewall that answers the port with a reset counts as a path; one that drops it does not.
seealso:
  - module: inferops.sglang.sglang_group
"""

EXAMPLES = r"""
- name: Check that this node reaches rank 0 where the ranks meet
  inferops.sglang.sglang_link:
    server_group: "{{ node }}"    # sglang_group's result

- name: After the gates, say whether the link still holds (the outcome names a node whose link broke)
  inferops.sglang.sglang_link:
    server_group: "{{ node }}"
    fail_on_broken: false
  register: link
"""

RETURN = r"""
ok:
  description: The link holds (and on rank 0 the address is its own).
  returned: always
  type: bool
reached:
  description: The connection to C(dist_init_addr) got an answer.
  returned: always
  type: bool
listening:
  description: Something accepted the connection (the ranks' store, while the server runs).
  returned: always
  type: bool
local:
  description: On rank 0, whether C(dist_init_addr)'s host is an address of this host; null on the other nodes.
  returned: always
  type: bool
error:
  description: Why the connection got no answer (the system's words), or null.
  returned: always
  type: str
  sample: "[Errno 101] Network is unreachable"
msg:
  description: What is broken, naming the node, its rank, rank 0 and the address; or that the link holds.
  returned: always
  type: str
elapsed:
  description: Seconds the probe took.
  returned: always
  type: float
"""

import errno
import socket
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.inferops.sglang.plugins.module_utils import server_group


def resolve(addr):
    """(family, sockaddr) of HOST:PORT, or raises socket.gaierror."""
    host, port = addr.rsplit(":", 1)
    found = socket.getaddrinfo(host.strip("[]"), int(port), 0, socket.SOCK_STREAM)[0]
    return found[0], found[4]


def own_address(family, sockaddr):
    """The address is one of this host's: only an own address can be bound."""
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.bind((sockaddr[0], 0) + tuple(sockaddr[2:]))
        return True
    except OSError as exc:
        # (Any other refusal says nothing about whose address it is.)
        return False if exc.errno == errno.EADDRNOTAVAIL else None
    finally:
        sock.close()


def connect(family, sockaddr, timeout):
    """(reached, listening, error) of one connection attempt."""
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(sockaddr)
        return True, True, None
    except socket.timeout:
        return False, False, "no answer within %g s" % timeout
    except OSError as exc:
        if exc.errno == errno.ECONNREFUSED:
            return True, False, None
        return False, False, str(exc)
    finally:
        sock.close()


def probe(group, timeout):
    try:
        family, sockaddr = resolve(group["dist_init_addr"])
    except (socket.gaierror, ValueError) as exc:
        return {"reached": False, "listening": False, "local": None, "error": "cannot resolve it: %s" % exc}
    local = own_address(family, sockaddr) if group.get("face") else None
    reached, listening, error = connect(family, sockaddr, timeout)
    return {"reached": reached, "listening": listening, "local": local, "error": error}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            server_group=dict(type="dict", required=True),
            timeout=dict(type="float", default=5),
            fail_on_broken=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    started, group = time.monotonic(), module.params["server_group"]
    missing = [key for key in ("name", "nodes", "node_rank", "face", "rank0", "dist_init_addr") if key not in group]
    if missing:
        module.fail_json(msg="server_group lacks %s: pass sglang_group's result" % ", ".join(missing), elapsed=0.0)
    said = probe(group, module.params["timeout"])
    problem = server_group.link_problem(group, said)
    node = group["nodes"][group["node_rank"]]
    result = dict(said, changed=False, ok=problem is None, elapsed=round(time.monotonic() - started, 3),
                  msg=problem or "%s (rank %d) reaches rank 0 at %s" % (node, group["node_rank"], group["dist_init_addr"]))
    if problem and module.params["fail_on_broken"]:
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
