# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Judge an SGLang start by its progress, not by a clock.

Pure Python (no Ansible imports). A start goes through SGLang 0.5.23's phases, each ending
with a line every rank logs (its own ` TP<i>` prefix on a multi-GPU server):

    parallel   Init parallel ends.              srt/distributed/bootstrap.py (NCCL comes up)
    weights    Load weight end.                 srt/model_executor/model_runner.py
    kv_pool    Memory pool end.                 srt/mem_cache/kv_cache_configurator.py
    graphs     Capture ... CUDA graph end.      .../model_runner_components/cuda_graph_setup.py
    ready      The server is fired up ...       srt/entrypoints/http_server.py (after warm-up)

A phase ends when its last rank says so. Progress is any phase line (begin or end, any rank)
or the unit's process tree changing. A start that makes no progress for longer than its
phase's limit has stalled: the limit is a multiple of what that phase took in the
known-good's own start on this host, never under a floor (the floor alone when no start was
recorded). The timeline (seconds each phase took) is what a deploy records.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.inferops.sglang.plugins.module_utils.sglang_failures import PHASES as CLASSIFIER_PHASES
from ansible_collections.inferops.sglang.plugins.module_utils.sglang_failures import RANK_RE, STAMP_RE

# (phase, the line that ends it), in SGLang's order; a server without CUDA graphs skips `graphs`.
# The lines are the classifier's own phase lines (sglang_failures.PHASES, checked by make fidelity).
PHASE_ENDS = tuple((name, dict(CLASSIFIER_PHASES)[line]) for name, line in (
    ("parallel", "parallel_ready"), ("weights", "weights_loaded"), ("kv_pool", "memory_pool"),
    ("graphs", "cuda_graph_done"), ("ready", "ready")))
PHASES = tuple(name for name, _regex in PHASE_ENDS)
# Lines that start a phase or show it moving (every rank logs its own).
PROGRESS = re.compile(r"server_args=|Init parallel begin\.|Load weight begin\.|KV Cache is allocated\.|"
                      r"CUDA graph begin\.|Uvicorn running on|Application startup complete\.")
# After `ready`, the start waits for the health check's first 200 (a one-token request through
# every rank, http_server.py health_generate): a server that logged ready and never answers it
# has stalled there.
HEALTH = "health"
# What a start says of its memory, per GPU, in SGLang 0.5.23's own lines (the smallest over the
# ranks: they all-reduce to it): what the weights (the draft's after the target's) left, the KV
# pool's tokens, what the pool and the CUDA graphs left outside the static budget. A tune
# chooses its next envelope from them.
MEMORY = (
    ("weights_avail_gib", re.compile(r"Load weight end\..*avail mem=([\d.]+) GB"), float),
    ("kv_tokens", re.compile(r"KV Cache is allocated\..*#tokens: (\d+)"), int),
    ("pool_avail_gib", re.compile(r"Memory pool end\. avail mem=([\d.]+) GB"), float),
    ("graphs_avail_gib", re.compile(r"CUDA graph end\..*avail mem=([\d.]+) GB"), float),
)
LABELS = {"parallel": "parallel init", "weights": "weights", "kv_pool": "kv pool", "graphs": "graphs",
          "ready": "warm-up", HEALTH: "the first health check"}


class Progress:
    """Feed the invocation's messages with their times (seconds, any epoch) in order."""

    def __init__(self):
        self.started = None          # the first line's time
        self.ends = {}               # phase -> the time its latest end line was seen
        self.ended_by = {}           # phase -> the ranks that said it ended (None: the main process)
        self.ranks = set()           # every rank seen
        self.last_at = None          # the time of the latest progress
        self.last_line = ""
        self.lines = 0
        self.memory = {}             # MEMORY's facts, once said
        self._weights_by = {}        # rank -> what its latest weight load left

    def feed(self, at, message):
        self.lines += 1
        if self.started is None:
            self.started = self.last_at = at
        rank = rank_of(message)
        if rank is not None:
            self.ranks.add(rank)
        self._memory(rank, message)
        for phase, regex in PHASE_ENDS:
            if regex.search(message):
                self.ends[phase] = at
                self.ended_by.setdefault(phase, set()).add(rank)
                self._moved(at, message)
                return
        if PROGRESS.search(message):
            self._moved(at, message)

    def _memory(self, rank, message):
        for name, regex, kind in MEMORY:
            found = regex.search(message)
            if not found:
                continue
            value = kind(found.group(1))
            if name == "weights_avail_gib":
                # The draft loads after the target: a rank's latest line is what both left.
                self._weights_by[rank] = value
                value = min(self._weights_by.values())
                self.memory[name] = value
            else:
                self.memory[name] = min(value, self.memory.get(name, value))
            return

    def tree_changed(self, at):
        """The unit's processes changed (a rank started or ended): that is progress too."""
        if self.started is None:
            self.started = at
        self.last_at = at

    def _moved(self, at, message):
        self.last_at = at
        self.last_line = message.strip()

    def done(self, phase):
        """Every rank seen has said the phase ended (any line does on a one-GPU server)."""
        said = self.ended_by.get(phase)
        return bool(said) and (None in said or self.ranks <= said)

    def phase(self):
        """The phase under way: the one after the last that every rank finished (None once ready)."""
        reached = [i for i, name in enumerate(PHASES) if self.done(name)]
        after = reached[-1] + 1 if reached else 0
        return PHASES[after] if after < len(PHASES) else None

    def timeline(self):
        """Seconds each finished phase took, in order (from the previous phase's end)."""
        out, since = {}, self.started
        for name in PHASES:
            if self.done(name) and since is not None:
                out[name] = round(max(0.0, self.ends[name] - since), 2)
                since = self.ends[name]
        return out


def rank_of(message):
    """`TP3` for a line of rank 3's scheduler, None for the main process's or a continuation."""
    stamp = STAMP_RE.match(message)
    rank = RANK_RE.search(stamp.group("prefix")) if stamp else None
    return "TP" + rank.group(1) if rank else None


def stall_limit(phase, known_good, floor, factor):
    """How long `phase` may go without progress: `factor` x what it took in the known-good's
    start, at least `floor`."""
    took = (known_good or {}).get(phase)
    return max(float(floor), float(factor) * float(took)) if took else float(floor)


def stalled(progress, now, known_good, floor, factor, watching_since=None):
    """None while the start makes progress, else what stalled: phase, seconds without
    progress, the limit, the known-good's time for the phase, the last progress line. (Asked
    only until the health check's first 200: after `ready`, that is the phase waited for.)
    `watching_since`: when the gate began to watch. Quiet before then is not the start's: a
    server that logged its lines long before (a re-gate of one that runs, a gate that began
    late on a busy controller) is judged from then, not by the age of its lines."""
    phase = progress.phase() or HEALTH
    if not floor or progress.last_at is None:
        return None
    quiet = now - max(progress.last_at, watching_since or progress.last_at)
    limit = stall_limit(phase, known_good, floor, factor)
    if quiet <= limit:
        return None
    return {"phase": phase, "seconds": round(quiet, 1), "limit": round(limit, 1),
            "known_good": (known_good or {}).get(phase), "last_line": progress.last_line}


def stall_reason(stall):
    kg = " (the known-good took %s s there)" % stall["known_good"] if stall.get("known_good") else ""
    return "no progress for %.0f s in %s (limit %.0f s%s); last line: %s" % (
        stall["seconds"], LABELS.get(stall["phase"], stall["phase"]), stall["limit"], kg,
        stall["last_line"] or "(none)")


def stall_hint(stall):
    return ("the start stopped making progress in %s: a hung NCCL bring-up, a weight load from a dead "
            "mount or a hung rank; read the last lines of each rank (journalctl -u UNIT), check the model's "
            "storage and the GPUs (nvidia-smi); raise sglang_service_health_stall (the floor) or "
            "sglang_service_health_stall_factor if this phase is only slow" % LABELS.get(stall["phase"], stall["phase"]))


def describe_timeline(timeline, known_good=None):
    """`weights 212 s (known-good 198 s), kv pool 4 s, graphs 41 s`."""
    parts = []
    for name in PHASES:
        if name in (timeline or {}):
            kg = (known_good or {}).get(name)
            parts.append("%s %s s%s" % (LABELS[name], _num(timeline[name]),
                                        " (known-good %s s)" % _num(kg) if kg is not None else ""))
    return ", ".join(parts)


def _num(value):
    return ("%.1f" % value).rstrip("0").rstrip(".") if value < 10 else "%.0f" % value
