#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_health
short_description: Wait for an SGLang systemd unit to serve, or say why it never will
version_added: "0.1.0"
description:
  - Waits for one systemd unit and its HTTP health endpoint. Returns as soon as the endpoint
    answers 200 (C(healthy)), the unit can no longer become healthy (C(failed)), or the
    deadline passes (C(timeout)).
  - C(failed) covers what C(systemctl is-active) misses for a C(Type=simple) server, that is the unit
    failed or went inactive, systemd is auto-restarting it, or it is already on a new
    invocation or a higher restart count than when the wait began. The health endpoint
    answering 401 or 403 is also final.
  - A 200 counts only from the unit's own server. When processes on this host listen on the
    URL's port and none of them runs in the unit (its cgroup), another server answered, and the
    result is C(failed) with cause C(port_taken), naming the holders.
  - Then reads the journal of that exact invocation (its own output and systemd's lines about
    it), all of it, in one streaming pass, and names the cause with a hint of what to change,
    the evidence lines (with context, wherever they are in the invocation) and the tail.
  - Never changes anything on the host.
  - The action plugin of the same name runs the wait in slices of O(progress_interval)
    seconds and prints the phase and elapsed time between them, so a long model load does
    not look frozen.
author:
  - inferops maintainers (@inferops)
extends_documentation_fragment:
  - inferops.sglang.sglang_http
options:
  unit:
    description:
      - The systemd unit to judge, for example C(sglang.service).
    type: str
    required: true
  url:
    description:
      - The health endpoint. SGLang answers 503 until its warm-up request is done.
    type: str
    default: http://127.0.0.1:30000/health
  timeout:
    description:
      - Seconds to wait for C(healthy) before giving up with C(timeout). A 27B model can take
        more than ten minutes to load.
    type: int
    default: 1800
  probe_timeout:
    description:
      - Seconds one HTTP probe may take. SGLang's health handler sleeps one second before it
        answers, so values near 1 make a healthy server look flaky.
    type: float
    default: 5.0
  tail_lines:
    description:
      - How many of the invocation's last journal lines to return in RV(tail).
    type: int
    default: 200
  since:
    description:
      - The invocation to judge (a systemd InvocationID). Default is the unit's current one
        when the wait starts. If the unit is on another invocation, it was restarted and the
        result is C(failed).
    type: str
  baseline_restarts:
    description:
      - The unit's NRestarts when the wait began; a higher count is C(failed). Default is the
        count when this call starts.
    type: int
  fail_on_unhealthy:
    description:
      - Fail the task when the result is C(failed) or C(timeout). With V(false) the task is
        C(ok) and the facts say what happened (handlers can act on them).
    type: bool
    default: true
  progress_interval:
    description:
      - Seconds between progress lines printed by the action plugin. V(0) waits in one call
        and prints nothing until the end.
    type: int
    default: 15
  wait_slice:
    description:
      - Set by the action plugin. Return with C(state=waiting) after this many seconds
        without a verdict. V(0) waits up to O(timeout).
    type: float
    default: 0
  waited:
    description:
      - Set by the action plugin. Seconds already waited in earlier slices; they count
        against O(timeout) and in RV(elapsed).
    type: float
    default: 0
  settle:
    description:
      - Seconds the unit must keep running on the same invocation after the first 200 before
        the result is C(healthy). A crash in that window is C(failed), with the crash's cause.
        SGLang can answer its health check and die a few seconds later on its first real batch.
    type: float
    default: 0
  healthy_at:
    description:
      - Set by the action plugin. Seconds into the wait at which an earlier slice saw the first 200.
    type: float
  stall:
    description:
      - Fail a start that has made no progress for this many seconds (the floor of every
        phase's limit) with cause C(stalled). Progress is a start-up phase line of any rank
        (C(Init parallel begin.), C(Load weight end.), C(Memory pool end.), C(Capture ... CUDA
        graph end.), ...) or the unit's processes changing.
      - A phase's limit is O(stall_factor) times what it took in O(known_good_timeline), never
        less than this. V(0) turns the check off (only O(timeout) bounds the wait).
    type: float
    default: 600
  stall_factor:
    description:
      - How many times the known-good's time for a phase that phase may go without progress.
    type: float
    default: 3.0
  known_good_timeline:
    description:
      - Seconds each start-up phase took in the known-good's own start on this host
        (RV(timeline) of its gate, as the deploy records it), keyed C(parallel), C(weights),
        C(kv_pool), C(graphs) and C(ready), for example 198 for C(weights).
    type: dict
  verdict_path:
    description:
      - Where to write the verdict - its state, cause, reason, invocation and time - once it is reached, for the host's
        guard (M(inferops.sglang.sglang_guard)), which then acts on a failure with no controller to collect this
        result. Not written in check mode, nor while the wait goes on (C(starting), C(waiting)).
    type: path
    version_added: 0.4.0
attributes:
  check_mode:
    support: full
    description: Reports the current state once, without waiting.
  diff_mode:
    support: none
    description: Changes nothing, so there is no diff.
notes:
  - Detection of a failed unit comes within about half a second of systemd marking it failed,
    because the unit is polled with a back-off capped at 0.5 s while HTTP probes run beside it.
seealso:
  - module: ansible.builtin.wait_for
  - module: ansible.builtin.systemd_service
  - module: inferops.sglang.gpu_facts
"""

EXAMPLES = r"""
- name: Gate the restart on health; let handlers roll back on failure
  inferops.sglang.sglang_health:
    unit: sglang.service
    url: http://127.0.0.1:30000/health
    api_key: "{{ sglang_api_key }}"
    timeout: 1200
    fail_on_unhealthy: false
  register: sglang_gate

- name: Report what happened
  ansible.builtin.debug:
    msg: "{{ sglang_gate.state }} after {{ sglang_gate.elapsed }} s: {{ sglang_gate.cause }} ({{ sglang_gate.hint }})"

- name: Show the current state without waiting
  inferops.sglang.sglang_health:
    unit: sglang.service
  check_mode: true
"""

RETURN = r"""
state:
  description: C(healthy), C(failed), C(timeout); C(starting) in check mode; C(waiting) only
    between slices of the action plugin.
  returned: always
  type: str
  sample: failed
elapsed:
  description: Seconds this wait took.
  returned: always
  type: float
  sample: 2.41
unit:
  description: The unit judged.
  returned: always
  type: str
  sample: sglang.service
invocation_id:
  description: The invocation judged.
  returned: always
  type: str
  sample: 0d9a06bb2d5c4f468ad0238c790c858f
reason:
  description: Why the state was reached, in systemd's or HTTP's terms.
  returned: always
  type: str
  sample: unit failed (result exit-code)
active_state:
  description: systemd ActiveState at the end of the wait.
  returned: always
  type: str
  sample: failed
sub_state:
  description: systemd SubState at the end of the wait.
  returned: always
  type: str
  sample: failed
result:
  description: systemd Result of the unit.
  returned: always
  type: str
  sample: exit-code
exit_status:
  description: ExecMainStatus (exit code, or signal number when killed).
  returned: always
  type: int
  sample: 1
signal:
  description: The signal that ended the main process, if one did.
  returned: always
  type: int
  sample: 9
n_restarts:
  description: systemd NRestarts at the end of the wait.
  returned: always
  type: int
  sample: 0
http_status:
  description: The last HTTP status of the health endpoint (null when it did not answer).
  returned: always
  type: int
  sample: 503
http_error:
  description: The last connection error of the probe, if any.
  returned: always
  type: str
  sample: "[Errno 111] Connection refused"
phase:
  description: The last startup phase SGLang reached, from its progress lines (C(starting),
    C(server_args), C(init_parallel), C(parallel_ready), C(loading_weights), C(weights_loaded), C(memory_pool), C(kernels_selected),
    C(cuda_graph), C(cuda_graph_done), C(serving), C(ready)).
  returned: always
  type: str
  sample: weights_loaded
cause:
  description: The named cause (null when healthy), for example C(kv_pool_oom),
    C(weights_leave_no_kv), C(hybrid_state_oom), C(cuda_graph_oom), C(cuda_graph_failed),
    C(cuda_oom), C(oom_killed), C(bad_argument), C(import_error), C(port_in_use),
    C(model_not_found), C(warmup_failed), C(child_died), C(nccl_error), C(peer_died), C(rendezvous_timeout),
    C(nccl_invalid_usage), C(unauthorized), C(port_taken), C(health_check_failed), C(health_lost),
    C(stalled), C(timeout), C(unknown).
  returned: always
  type: str
  sample: kv_pool_oom
hint:
  description: What to change, with the current values from the invocation's own arguments.
  returned: always
  type: str
  sample: raise --mem-fraction-static (now 0.88) or lower --context-length (now 131072) / --max-running-requests (now 16)
evidence:
  description: The matching lines, first the one that names the cause, each with a few lines
    of context, found anywhere in the invocation.
  returned: always
  type: list
  elements: dict
  sample:
    - line: 212
      cause: kv_pool_oom
      match: "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.88"
      context: ["..."]
tail:
  description: The last O(tail_lines) journal lines of this invocation only, systemd's own
    lines about it included.
  returned: always
  type: list
  elements: str
rank:
  description: The rank whose own lines name the cause (C(TP3)), when one rank failed alone;
    null when every rank (or the main process) said it.
  returned: always
  type: str
  sample: TP3
ranks:
  description: Every rank whose own lines show the cause, in the order they said it.
  returned: always
  type: list
  elements: str
  sample: [TP3]
stall:
  description: What stalled (cause C(stalled)) - the phase, the seconds without progress, the
    limit, the known-good's time for the phase and the last progress line; null otherwise.
  returned: always
  type: dict
  sample: {phase: weights, seconds: 15.2, limit: 15.0, known_good: 0.6, last_line: "[... TP0] Load weight begin. avail mem=46.55 GB"}
timeline:
  description: Seconds each start-up phase took in this start (C(parallel), C(weights),
    C(kv_pool), C(graphs), and C(ready), the warm-up), each from the previous phase's end as the
    last rank logged it; only the phases that ended.
  returned: always
  type: dict
  sample: {parallel: 0.1, weights: 0.6, kv_pool: 0.2, graphs: 0.3, ready: 1.3}
memory:
  description:
    - What the start said of its memory per GPU in SGLang's own lines, the smallest over the ranks -
      C(weights_avail_gib) (what the weights, the draft's too, left; C(Load weight end)),
      C(kv_tokens) (the KV pool's tokens; C(KV Cache is allocated)), C(pool_avail_gib) (what is
      left outside the static budget; C(Memory pool end)), C(graphs_avail_gib) (after the CUDA
      graphs). Only what was said; empty when the start was not followed (O(stall=0)).
  returned: always
  type: dict
  sample: {weights_avail_gib: 19.93, kv_tokens: 180000, pool_avail_gib: 4.04, graphs_avail_gib: 2.84}
known_good_timeline:
  description: O(known_good_timeline), as given.
  returned: always
  type: dict
healthy_at:
  description: Seconds into the wait at which the endpoint first answered 200 (null if it never did).
  returned: always
  type: float
  sample: 5.8
observed_at:
  description: The host's clock (epoch seconds) when the state was reached, before the journal
    was read; compare with journal timestamps to measure detection latency.
  returned: always
  type: float
  sample: 1796060681.52
journal_lines:
  description: How many journal lines of the invocation were read.
  returned: always
  type: int
  sample: 412
ansible_facts:
  description: The same result under C(sglang_health).
  returned: always
  type: dict
  contains:
    sglang_health:
      description: All of the values above.
      type: dict
      returned: always
"""

import json
import os
import threading
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.six.moves.urllib.parse import urlsplit
from ansible_collections.inferops.sglang.plugins.module_utils.journal import (
    classify_stream, entry_message, follow_invocation, stream_invocation, tail_command,
)
from ansible_collections.inferops.sglang.plugins.module_utils import startup
from ansible_collections.inferops.sglang.plugins.module_utils.health_probe import probe
from ansible_collections.inferops.sglang.plugins.module_utils.host_processes import (
    describe, listeners, unit_processes,
)
from ansible_collections.inferops.sglang.plugins.module_utils.sglang_bench import auth_headers
from ansible_collections.inferops.sglang.plugins.module_utils.sglang_failures import args_from_argv
from ansible_collections.inferops.sglang.plugins.module_utils.systemd_state import (
    FAILED, RUNNING, exec_start_argv, judge, parse_show, show_command, unit_status,
)

UNIT_POLL_FIRST = 0.05
UNIT_POLL_MAX = 0.5
PROBE_PAUSE_FIRST = 0.2
PROBE_PAUSE_MAX = 2.0
FINAL_HTTP = (401, 403)
WATCH_PAUSE = 1.0       # between probes once the endpoint answered 200 (the settle window)
LOST_AFTER = 2          # probes in a row without a 200, after the first, that fail the gate


class Prober(threading.Thread):
    """Probes the health endpoint with back-off beside the unit watch, so a slow or hung
    probe never delays noticing a dead unit. With `watch` it goes on after the first 200, a
    probe a second, so that a server that stops answering in the settle window (a hung rank:
    the main process stays up) is seen: `failures` counts the probes in a row since then
    that did not answer 200, `ok_started` is when the latest 200's probe began."""

    def __init__(self, url, headers, validate_certs, timeout, watch=False, seen_200=False):
        super(Prober, self).__init__()
        self.daemon = True
        self.url, self.headers = url, headers
        self.validate_certs, self.timeout = validate_certs, timeout
        self.watch = watch
        self.seen_200 = seen_200   # an earlier slice of the wait saw the first 200
        self.status, self.error = None, None
        self.ok_started, self.failures = None, 0
        self.first_200 = None   # when the first 200 came back (monotonic), once it did
        self.stop = threading.Event()

    def probe_once(self):
        return probe(self.url, self.headers, self.validate_certs, self.timeout)

    def run(self):
        pause = PROBE_PAUSE_FIRST
        while not self.stop.is_set():
            started = time.monotonic()
            status, error = self.probe_once()
            if status == 200:
                self.ok_started, self.failures, self.seen_200 = started, 0, True
                self.first_200 = self.first_200 or time.monotonic()
            elif self.seen_200:
                self.failures += 1
            self.status, self.error = status, error
            if status in FINAL_HTTP or (status == 200 and not self.watch):
                return
            self.stop.wait(WATCH_PAUSE if self.seen_200 else pause)
            pause = min(pause * 1.5, PROBE_PAUSE_MAX)

    def answered_since(self, moment):
        """A probe that began at or after `moment` (monotonic) answered 200."""
        return self.ok_started is not None and self.ok_started >= moment


class Follower(threading.Thread):
    """Follows the invocation's journal beside the wait and keeps its start-up progress
    (startup.Progress): the phase lines with their journal times."""

    def __init__(self, invocation_id, journalctl):
        super(Follower, self).__init__()
        self.daemon = True
        self.progress = startup.Progress()
        self.lock = threading.Lock()
        self.proc = follow_invocation(invocation_id, journalctl)

    def run(self):
        for text in self.proc.stdout:
            try:
                at, message = entry_message(json.loads(text))
            except ValueError:
                continue
            with self.lock:
                self.progress.feed(at, message)

    def stop(self):
        self.proc.kill()
        self.proc.wait()


class Gate:
    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.systemctl = module.get_bin_path("systemctl", required=True)
        self.journalctl = module.get_bin_path("journalctl", required=True)
        # Earlier slices of the same wait count against the deadline.
        self.started = time.monotonic() - module.params["waited"]
        self.watching_since = time.time() - module.params["waited"]
        self.healthy_at = module.params["healthy_at"]
        self.taken = None   # the other processes that answered on the port, once seen
        self.follower = None
        self.tree = None    # the unit's PIDs at the last look
        self.stall = None   # what stalled, once seen
        self.lost = None    # the health endpoint stopped answering 200 after its first, once seen

    def settled(self):
        if not self.params["settle"]:
            return ""
        return " and kept running for %.0f s" % (self.elapsed() - self.healthy_at)

    def status(self):
        rc, out, err = self.module.run_command(show_command(self.params["unit"], self.systemctl))
        if rc != 0:
            self.module.fail_json(msg="%s: systemctl show failed (rc %d): %s" % (
                self.params["unit"], rc, err.strip()), elapsed=self.elapsed())
        return unit_status(parse_show(out))

    def elapsed(self):
        return round(time.monotonic() - self.started, 3)

    def taken_by_another(self):
        """A 200 counts only from the unit's own server: when processes on this host listen on
        the URL's port and none runs in the unit (its cgroup), another server answered."""
        holders = listeners(urlsplit(self.params["url"]).port or 80)
        # A socket whose owner this process cannot see (no CAP_SYS_PTRACE) proves nothing.
        if holders and all(h["pid"] for h in holders) and not any(h["unit"] == self.params["unit"] for h in holders):
            self.taken = holders
        return self.taken is not None

    def taken_reason(self):
        return "%s answered 200, but from %s, not from %s" % (
            self.params["url"], "; ".join(describe(h) for h in self.taken), self.params["unit"])

    def headers(self):
        return auth_headers(self.params["headers"], self.params["api_key"])

    def wait(self, since, baseline):
        """(state, reason, final unit status, prober) once a verdict is reached."""
        deadline = self.started + self.params["timeout"]
        slice_end = time.monotonic() + self.params["wait_slice"] if self.params["wait_slice"] else None
        prober = Prober(self.params["url"], self.headers(), self.params["validate_certs"],
                        self.params["probe_timeout"], watch=self.params["settle"] > 0,
                        seen_200=self.healthy_at is not None)
        poll = UNIT_POLL_FIRST
        try:
            while True:
                status = self.status()
                verdict, reason = judge(status, since, baseline)
                if verdict == FAILED:
                    if self.healthy_at is None and prober.first_200 is not None:
                        # (Its first 200 came while this loop read the unit: it answered, then failed.)
                        self.healthy_at = round(prober.first_200 - self.started, 3)
                    if self.healthy_at is not None:
                        reason = "%s %.1f s after it first answered 200" % (reason, self.elapsed() - self.healthy_at)
                    return "failed", reason, status, prober
                if verdict == RUNNING and not prober.is_alive() and prober.status is None:
                    prober.start()
                if prober.status == 200 and self.healthy_at is None:
                    if self.taken_by_another():
                        return "failed", self.taken_reason(), status, prober
                    self.healthy_at = self.elapsed()
                if self.healthy_at is not None:
                    if prober.failures >= LOST_AFTER:
                        self.lost = "%s answered 200 %.1f s into the wait, then %s %d times in a row" % (
                            self.params["url"], self.healthy_at, describe_probe(prober), prober.failures)
                        return "failed", self.lost, status, prober
                    if verdict == RUNNING and self.settle_passed(prober):
                        return "healthy", "%s answered 200%s" % (self.params["url"], self.settled()), status, prober
                if prober.status in FINAL_HTTP:
                    return "failed", "%s answered %d: the API key was refused" % (
                        self.params["url"], prober.status), status, prober
                if self.healthy_at is None and self.stalled(since):
                    return "failed", startup.stall_reason(self.stall), status, prober
                now = time.monotonic()
                # (The settle window is not sliced: its probes' count of answers lost runs through it.)
                if slice_end is not None and slice_end <= now < deadline and self.healthy_at is None:
                    return "waiting", reason, status, prober
                if now >= deadline and self.healthy_at is None:
                    return "timeout", "no 200 from %s within %d s (last: %s)" % (
                        self.params["url"], self.params["timeout"], describe_probe(prober)), status, prober
                time.sleep(poll)
                poll = min(poll * 1.5, UNIT_POLL_MAX)
        finally:
            prober.stop.set()

    def settle_passed(self, prober):
        """The settle window is over and the server still answers: a probe begun in its second
        half answered 200 (a hung server's probe never does)."""
        settle = self.params["settle"]
        if self.elapsed() - self.healthy_at < settle:
            return False
        return not settle or prober.answered_since(self.started + self.healthy_at + settle / 2.0)

    def stalled(self, invocation_id):
        """The start made no progress (a phase line, the process tree changing) for longer
        than its phase's limit: it will not become healthy by waiting."""
        if not self.params["stall"] or not invocation_id:
            return False
        if self.follower is None:
            self.follower = Follower(invocation_id, self.journalctl)
            self.follower.start()
        tree = sorted(p["pid"] for p in unit_processes(self.params["unit"]))
        now = time.time()
        with self.follower.lock:
            if self.tree is not None and tree != self.tree:
                self.follower.progress.tree_changed(now)
            self.tree = tree
            self.stall = startup.stalled(self.follower.progress, now, self.params["known_good_timeline"],
                                         self.params["stall"], self.params["stall_factor"], self.watching_since)
        return self.stall is not None

    def timeline(self):
        """(The phases' seconds, what the start said of its memory), once the wait is over."""
        if self.follower is None:
            return {}, {}
        time.sleep(0.05)   # the lines journald has already sent
        with self.follower.lock:
            timeline = self.follower.progress.timeline()
            memory = dict(self.follower.progress.memory)
        self.follower.stop()
        return timeline, memory

    def check_once(self, since, baseline):
        status = self.status()
        verdict, reason = judge(status, since, baseline)
        prober = Prober(self.params["url"], self.headers(), self.params["validate_certs"],
                        self.params["probe_timeout"])
        if verdict == FAILED:
            return "failed", reason, status, prober
        if verdict == RUNNING:
            prober.status, prober.error = prober.probe_once()
            if prober.status == 200 and self.taken_by_another():
                return "failed", self.taken_reason(), status, prober
            if prober.status == 200:
                return "healthy", "%s answered 200" % self.params["url"], status, prober
        return "starting", reason, status, prober

    def read_journal(self, invocation_id, state, status, timeout):
        """Classify the whole invocation from its messages, then fetch its timestamped tail."""
        context = dict(state=state, signal=status["signal"], timeout=timeout,
                       args=args_from_argv(exec_start_argv(status["exec_start"])))
        if not invocation_id:
            return dict(classify_stream([], **context), tail=[])
        if state == "failed":
            # A process that died at once may have lines journald has received but not yet
            # written; --sync waits for them, so the cause is not missed.
            self.module.run_command([self.journalctl, "--sync"])
        # The main PID belongs to the judged invocation only while it is the current one.
        pid = status["exec_main_pid"] if status["invocation_id"] == invocation_id else 0
        result = classify_stream(stream_invocation(invocation_id, self.journalctl, self.params["unit"], pid),
                                 **context)
        result["tail"] = []
        if self.params["tail_lines"] > 0:
            rc, out, err = self.module.run_command(tail_command(
                invocation_id, self.params["tail_lines"], self.journalctl, self.params["unit"], pid))
            result["tail"] = out.splitlines() if rc == 0 else ["(journalctl failed: %s)" % err.strip()]
        return result


HEALTH_LOST_HINT = (
    "the server answered its health check, then stopped answering while its processes kept running: a rank is "
    "hung (a kernel or a collective that never returns) and no request completes; a py-spy dump of each "
    "sglang::scheduler process shows where; keep the known-good variant on this host class")


def describe_probe(prober):
    if prober.status is not None:
        return "HTTP %d" % prober.status
    return prober.error or "unit never became active, endpoint not probed"


def write_verdict(path, facts):
    """The verdict, where the host's guard reads it (guard.VERDICT): it acts on a failure with no
    controller to collect this result. Written whole (a temporary file renamed)."""
    record = dict((key, facts[key]) for key in ("state", "cause", "reason", "invocation_id", "unit", "rank"))
    record["time"] = facts["observed_at"]
    temporary = "%s.%d" % (path, os.getpid())
    with open(temporary, "w") as fh:
        json.dump(record, fh)
    os.rename(temporary, path)


def failure_message(facts):
    first = facts["evidence"][0]["match"] if facts["evidence"] else (facts["tail"] or ["(no journal lines)"])[-1]
    if facts["stall"]:
        first = facts["stall"]["last_line"] or first
    return "%s: %s after %.1f s (%s); cause %s%s: %s; hint: %s" % (
        facts["unit"], facts["state"], facts["elapsed"], facts["reason"], facts["cause"],
        " on " + facts["rank"] if facts["rank"] else "", first.strip(), facts["hint"])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            unit=dict(type="str", required=True),
            url=dict(type="str", default="http://127.0.0.1:30000/health"),
            timeout=dict(type="int", default=1800),
            probe_timeout=dict(type="float", default=5.0),
            api_key=dict(type="str", no_log=True),
            headers=dict(type="dict", default={}),
            validate_certs=dict(type="bool", default=True),
            tail_lines=dict(type="int", default=200),
            since=dict(type="str"),
            baseline_restarts=dict(type="int"),
            fail_on_unhealthy=dict(type="bool", default=True),
            progress_interval=dict(type="int", default=15),
            wait_slice=dict(type="float", default=0),
            waited=dict(type="float", default=0),
            settle=dict(type="float", default=0),
            healthy_at=dict(type="float"),
            stall=dict(type="float", default=600),
            stall_factor=dict(type="float", default=3.0),
            known_good_timeline=dict(type="dict"),
            verdict_path=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if params["timeout"] <= 0 or params["probe_timeout"] <= 0:
        module.fail_json(msg="timeout and probe_timeout must be positive (got %s and %s)"
                         % (params["timeout"], params["probe_timeout"]), elapsed=0.0)
    gate = Gate(module)
    first = gate.status()
    since = params["since"] or first["invocation_id"]
    baseline = params["baseline_restarts"] if params["baseline_restarts"] is not None else first["n_restarts"]

    if module.check_mode:
        state, reason, status, prober = gate.check_once(since, baseline)
    else:
        state, reason, status, prober = gate.wait(since, baseline)
    observed_at = time.time()

    timeline, memory = gate.timeline()
    journal = gate.read_journal(since, state, status, params["timeout"])
    cause, hint = journal["cause"], journal["hint"]
    if prober.status in FINAL_HTTP:
        cause = "unauthorized"
        hint = "the health endpoint refused the request (HTTP %d): pass the server's api_key" % prober.status
    if gate.stall and cause in (None, "unknown", "timeout", "child_died"):
        cause, hint = "stalled", startup.stall_hint(gate.stall)
    if gate.lost and cause in (None, "unknown", "timeout"):
        cause, hint = "health_lost", HEALTH_LOST_HINT
    if gate.taken:
        cause = "port_taken"
        hint = "another process answers on the port: stop %s, or choose another port (sglang_service_port)" % (
            "; ".join(describe(h) for h in gate.taken))
    if state in ("healthy", "starting", "waiting"):
        cause, hint = None, None
    facts = {
        "state": state, "elapsed": gate.elapsed(), "unit": params["unit"], "invocation_id": since,
        "reason": reason, "active_state": status["active_state"], "sub_state": status["sub_state"],
        "result": status["result"], "exit_status": status["exit_status"], "signal": status["signal"],
        "n_restarts": status["n_restarts"], "baseline_restarts": baseline,
        "http_status": prober.status, "http_error": prober.error, "url": params["url"],
        "phase": journal["phase"], "cause": cause, "hint": hint, "evidence": journal["evidence"],
        "tail": journal["tail"], "journal_lines": journal["lines"], "observed_at": observed_at,
        "healthy_at": gate.healthy_at, "rank": journal.get("rank") if cause else None,
        "ranks": journal.get("ranks", []) if cause else [],
        "stall": gate.stall, "timeline": timeline, "memory": memory,
        "known_good_timeline": params["known_good_timeline"] or None,
    }
    if params["verdict_path"] and state not in ("starting", "waiting") and not module.check_mode:
        write_verdict(params["verdict_path"], facts)
    result = dict(facts, changed=False, ansible_facts={"sglang_health": facts})
    if state in ("failed", "timeout") and params["fail_on_unhealthy"]:
        module.fail_json(msg=failure_message(facts), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
