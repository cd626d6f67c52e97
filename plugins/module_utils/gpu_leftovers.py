# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a stopped SGLang unit left behind on the host (private to this collection; pure).

A server that failed can outlive its unit's stop for a while: a process still in the unit
(stuck in the driver), or GPU memory that no process holds any more and the driver has not
given back (nvidia-smi counts it as used and lists no process). A known-good server started
into those GPUs sizes its pools from what is free and fails, or starts smaller; so the
rollback waits until both are gone, and says so when they do not go."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.inferops.sglang.plugins.module_utils.host_processes import describe, is_sglang_child


def unlisted_memory(devices, processes):
    """Per GPU index, the memory used that no listed process holds (MiB; 0 or more)."""
    listed = {}
    for proc in processes or ():
        index = proc.get("gpu_index")
        if index is not None:
            listed[index] = listed.get(index, 0) + (proc.get("used_memory_mib") or 0)
    return dict((d["index"], max(0, (d.get("memory_used_mib") or 0) - listed.get(d["index"], 0)))
                for d in devices or () if d.get("index") is not None)


def leftovers(unit, remaining, devices, processes, tolerance_mib):
    """What `unit` left: its processes still running (`remaining`, [{pid, name}], and any GPU
    process nvidia-smi names in it), any SGLang rank outside every unit that holds GPU memory
    (the unit's KillMode=control-group ends every process in its cgroup; a rank outside it -
    started by hand, or by a unit that kills only its main process - outlives any stop) and
    each GPU whose unlisted memory is over `tolerance_mib` (the driver's own and display use
    stay under it). `devices` and `processes` are gpu_facts' ansible_facts.gpu devices and
    processes."""
    pids = dict((p["pid"], dict(p, unit=unit)) for p in remaining or ())
    for proc in processes or ():
        orphan = is_sglang_child(proc) and not proc.get("unit")
        if (proc.get("unit") == unit or orphan) and proc.get("pid") not in pids:
            pids[proc["pid"]] = {"pid": proc["pid"], "name": proc.get("name"), "title": proc.get("title"),
                                 "unit": proc.get("unit")}
    unlisted = unlisted_memory(devices, processes)
    held = [{"index": index, "unlisted_mib": mib} for index, mib in sorted(unlisted.items()) if mib > tolerance_mib]
    return {"released": not pids and not held, "processes": [pids[pid] for pid in sorted(pids)], "gpus": held}


def describe_leftovers(unit, found, waited_s):
    """One sentence for the diagnosis: what was still there after the wait, and what to do."""
    parts = [("%s still runs in it" if p.get("unit") == unit else "%s, an SGLang rank outside " + unit +
              " whose server is gone, still holds GPU memory") % describe(p) for p in found["processes"]]
    parts += ["GPU %s has %s MiB used by no process" % (g["index"], g["unlisted_mib"]) for g in found["gpus"]]
    if not parts:
        return "%s left nothing behind" % unit
    fix = ("kill -9 %s" % " ".join(str(p["pid"]) for p in found["processes"])) if found["processes"] else \
        "reset the GPUs (nvidia-smi --gpu-reset) or reboot"
    return ("%.0f s after %s stopped, %s. The known-good service was not started into GPUs that are not free: "
            "%s, then run playbooks/rollback.yml" % (waited_s, unit, "; ".join(parts), fix))
