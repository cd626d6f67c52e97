# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One SGLang server over several hosts (a server group): which node a host is, the arguments
that make it that node, and whether the group is whole in this run. Pure: no Ansible, no I/O.

The inventory names a group's nodes as an inventory group in rank order (its first host is
rank 0, the server's face: it serves the API and the gateway knows it alone) and sets, for
that group, `sglang_server_group` (the group's name) and
`sglang_dist_init_addr` (rank 0's address and a free port, where the ranks meet).

SGLang 0.5.23 (srt/entrypoints/engine.py, srt/distributed/bootstrap.py): every node runs the
same argv but for --node-rank; node i runs TP ranks i*tp/N .. (i+1)*tp/N - 1; every rank
waits for all the others in distributed init (up to --dist-timeout), so the nodes may start in
any order; only rank 0 serves HTTP (the others answer /health with a stand-in 200 once their
ranks are ready); a non-zero node's SIGTERM only logs: its schedulers stop on rank 0's
ShutdownReq (or at the unit's stop timeout)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

ADDR_RE = re.compile(r"^(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>\d{1,5})$")
NOTHING = "Nothing was changed."


class GroupError(ValueError):
    """A server group this run cannot deploy as one; the message says what to change."""


def check_addr(name, addr):
    match = ADDR_RE.match(str(addr or ""))
    if not match or not 0 < int(match.group("port")) < 65536:
        raise GroupError("server group %s: sglang_dist_init_addr %r is not HOST:PORT (rank 0's address "
                         "and a free port where the ranks meet, e.g. 192.0.2.201:50000). %s"
                         % (name, addr or "", NOTHING))


def membership(name, nodes, host, dist_init_addr):
    """This host's place in its group: {name, nodes, nnodes, node_rank, face, dist_init_addr}.
    `nodes`: the group's inventory hosts in rank order."""
    nodes = list(nodes or [])
    if not nodes:
        raise GroupError("server group %s: no inventory group of that name lists its nodes; add one, its hosts in "
                         "rank order (rank 0 first). %s" % (name, NOTHING))
    if host not in nodes:
        raise GroupError("server group %s: %s is not one of its nodes (%s); set sglang_server_group on the "
                         "group's own inventory group. %s" % (name, host, ", ".join(nodes), NOTHING))
    if len(nodes) < 2:
        raise GroupError("server group %s has one node (%s): a server on one host needs no group; unset "
                         "sglang_server_group. %s" % (name, nodes[0], NOTHING))
    check_addr(name, dist_init_addr)
    rank = nodes.index(host)
    return {"name": name, "nodes": nodes, "nnodes": len(nodes), "node_rank": rank, "face": rank == 0,
            "rank0": nodes[0], "dist_init_addr": str(dist_init_addr)}


def server_args(group):
    """The arguments that make a host its node of the group (none for a host on its own)."""
    if not group:
        return {}
    return {"nnodes": group["nnodes"], "node_rank": group["node_rank"], "dist_init_addr": group["dist_init_addr"]}


def parallel_problem(group, args):
    """SGLang asserts it at launch (validation_hook.check_server_args), after the argument
    checker said yes: said here, before anything changes."""
    if not group:
        return None
    tp = int(args.get("tp_size") or 1) * int(args.get("pp_size") or 1)
    if tp % group["nnodes"]:
        return ("server group %s: tp_size %d (times pp_size) is not a multiple of its %d nodes; SGLang would fail "
                "at launch (\"tp_size must be divisible by number of nodes\"). Set tp_size to the GPUs of all its "
                "nodes. %s" % (group["name"], tp, group["nnodes"], NOTHING))
    return None


def _named(group, hosts):
    return ", ".join("%s (rank %d)" % (node, group["nodes"].index(node)) for node in hosts)


def whole_problem(group, in_play, batch, active):
    """Why the group cannot change as one in this run, or None. `in_play`: the play's hosts
    after the limit (ansible_play_hosts_all); `batch`: this batch of `serial`
    (ansible_play_batch); `active`: the batch's hosts that have not failed nor been unreachable
    (ansible_play_hosts). A node left out would keep running the old release while the others
    change: the server would be down."""
    if not group:
        return None
    name, nodes = group["name"], group["nodes"]
    left_out = [node for node in nodes if node not in in_play]
    if left_out:
        return ("server group %s: %s not in this run (the limit or the play's hosts leave it out); a group changes "
                "as one: run it whole (--limit %s). %s" % (name, _named(group, left_out), name, NOTHING))
    apart = [node for node in nodes if node not in batch]
    if apart:
        return ("server group %s: %s in another batch of `serial` (or of the class canary's phase); a group "
                "changes as one: deploy it in one batch (playbooks/deploy.yml batches each group whole; a play of "
                "your own can take its hosts and serial from the sglang_deploy_batches filter). %s"
                % (name, _named(group, apart), NOTHING))
    down = [node for node in nodes if node not in active]
    if down:
        return ("server group %s: %s failed or was unreachable earlier in this run; the others stop before they "
                "change (a group changes as one). %s" % (name, _named(group, down), NOTHING))
    return None


def restart_problem(group, plans, variant, run):
    """Why the nodes cannot restart together, or None. `plans`: each node's plan as it said it
    is ready to switch (its sglang_node_ready fact, a copy of its sglang_node_plan: restart,
    variant, run, release), in rank order; `run`: this run's identity (an earlier run's plan,
    kept by a fact cache, is not this deploy's). A node restarted alone cannot join the ranks
    of the others, still running, and they lose it: the server is down.

    A node that failed before it said so (its preflight, its build) is not ready, though it
    still counts among the play's active hosts: ansible-core runs its block's rescue only
    after the others' next tasks, and a host being rescued has not failed."""
    if not group or plans is None:
        return None
    fresh = [p if p and p.get("variant") == variant and p.get("run") == run else None for p in plans]
    unplanned = [node for node, p in zip(group["nodes"], fresh) if p is None]
    if unplanned:
        return ("server group %s: %s is not ready to switch in this deploy (it stopped before it: its own error "
                "says why); a group changes as one. %s" % (group["name"], _named(group, unplanned), NOTHING))
    releases = sorted(set(p.get("release") for p in fresh))
    if len(releases) > 1:
        said = ", ".join("%s (rank %d): %s" % (node, rank, p.get("release"))
                         for rank, (node, p) in enumerate(zip(group["nodes"], fresh)))
        return ("server group %s: its nodes would run different releases (%s); every node of a server runs one "
                "release: give them the same sglang_build settings (version, patches, packages). %s"
                % (group["name"], said, NOTHING))
    restarting = [node for node, p in zip(group["nodes"], fresh) if p["restart"]]
    if restarting and len(restarting) < len(group["nodes"]):
        staying = [node for node in group["nodes"] if node not in restarting]
        return ("server group %s: %s would restart but %s would not (it runs this already, or its class canary "
                "stopped it); a node restarted alone cannot rejoin the others' running ranks. Deploy a change "
                "every node shares, or restart the group (playbooks/rollback.yml restores its known-good). %s"
                % (group["name"], _named(group, restarting), _named(group, staying), NOTHING))
    return None


def link_problem(group, probe):
    """What a node's probe of the place where the ranks meet (sglang_link's) says is broken, or
    None. `probe`: reached (a TCP connect to dist_init_addr got an answer: the store accepted,
    or the host refused, so the path is there), local (rank 0 only: the address is one of its
    own), error. The ranks of a node that cannot reach rank 0 never join, or lose the others."""
    if not group or not probe:
        return None
    node, rank, addr = group["nodes"][group["node_rank"]], group["node_rank"], group["dist_init_addr"]
    if group["face"] and probe.get("local") is False:
        return ("server group %s: %s (rank 0) does not hold %s's address now (its network is down, or "
                "sglang_dist_init_addr names another host): the ranks meet at rank 0. Mend its network, or set "
                "sglang_dist_init_addr to an address of %s." % (group["name"], node, addr, node))
    if probe.get("reached") is False:
        return ("server group %s: %s (rank %d) cannot reach rank 0 (%s) at %s: %s; its ranks cannot meet the "
                "others'. Mend the network between them, or set sglang_dist_init_addr to an address of %s every "
                "node reaches." % (group["name"], node, rank, group["rank0"], addr, probe.get("error") or "?",
                                   group["rank0"]))
    return None


def _batch_size(spec, units):
    """ansible-core's pct_to_int for one entry of `serial`, counted in units (a host on its
    own, or a whole server group): a percentage of the units, at least one; 0 or less: all."""
    text = str(spec).strip()
    if text.endswith("%"):
        return max(int(units * float(text[:-1]) / 100.0), 1)
    return int(float(text))


def batches(hosts, groups, serial):
    """The play's hosts in an order that keeps each server group's nodes together, and the
    `serial` batch sizes (in hosts) that put each group whole in one batch: {order, serial}.
    `groups`: each host's server group, in the same order (empty: a server on one host);
    `serial`: the user's (a number, a percentage or a list of them, as a play's serial), counted
    in units - a host on its own, or a whole group, placed where its first node is. A group
    split over two batches would be refused (a node restarted alone cannot rejoin the others)."""
    units, where = [], {}
    for host, group in zip(hosts, list(groups) + [""] * (len(hosts) - len(groups))):
        if group and group in where:
            units[where[group]].append(host)
            continue
        if group:
            where[group] = len(units)
        units.append([host])
    specs = serial if isinstance(serial, (list, tuple)) else [serial]
    specs = list(specs) or [0]
    sizes, taken, total = [], 0, len(units)
    while taken < total:
        size = _batch_size(specs[min(len(sizes), len(specs) - 1)], total)
        size = total - taken if size <= 0 else min(size, total - taken)
        sizes.append(sum(len(unit) for unit in units[taken:taken + size]))
        taken += size
    return {"order": [host for unit in units for host in unit], "serial": sizes}
