# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The SGLang Model Gateway's worker API (smg, successor of sglang-router), and what a
worker's own /v1/loads says is in flight (private to this collection; pure, no Ansible imports).

smg 1.13: `GET /workers` lists {id, url, is_healthy, status (ready, draining, ...)}; `DELETE
/workers/{id}` queues the removal (202; the worker shows `draining` for a few seconds, then is
gone); `POST /workers {"url"}` queues an addition (202; 409 WORKER_ALREADY_EXISTS while the
old entry is still there). SGLang 0.5.23's `GET /v1/loads?include=core` gives each DP rank's
num_running_reqs and num_waiting_reqs."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

READY = "ready"


def find_worker(listing, worker_url):
    """The gateway's entry for `worker_url` (trailing slashes ignored), or None."""
    wanted = (worker_url or "").rstrip("/")
    for worker in (listing or {}).get("workers") or ():
        if (worker.get("url") or "").rstrip("/") == wanted:
            return worker
    return None


def in_rotation(worker):
    """Whether the gateway routes to this entry."""
    return bool(worker) and bool(worker.get("is_healthy")) and worker.get("status", READY) == READY


def in_flight(loads):
    """Requests a worker has in flight, from its /v1/loads answer (every DP rank's running
    and waiting requests); None when the answer says nothing."""
    ranks = (loads or {}).get("loads")
    if not isinstance(ranks, list):
        return None
    return sum(int(rank.get("num_running_reqs") or 0) + int(rank.get("num_waiting_reqs") or 0) for rank in ranks)


def drain_message(worker_url, count, unknown, seconds, drain_timeout):
    """What a drain says: drained, requests a restart would cut, or that the worker never said
    (`unknown`, its last answer) so the whole drain_timeout was waited."""
    if count == 0:
        return "%s: out of rotation, 0 requests in flight after %.1f s" % (worker_url, seconds)
    if count is None:
        return ("%s: out of rotation; the worker did not say what it has in flight (%s), so the drain "
                "waited the whole drain_timeout, %s s" % (worker_url, unknown, drain_timeout))
    return ("%s: out of rotation, %s requests in flight after %.1f s (drain_timeout %s s: a restart now cuts them)"
            % (worker_url, count, seconds, drain_timeout))


def error_text(status, body):
    """The gateway's own error ({"error", "code"}), else the HTTP status and body."""
    if isinstance(body, dict) and body.get("error"):
        return "%s (%s, HTTP %s)" % (body["error"], body.get("code", "?"), status)
    return "HTTP %s: %s" % (status, str(body)[:300] if body else "no body")


# What put_back() says of its sequence.
ALREADY, STILL_DRAINED, ROUTED, NOT_ROUTED, REFUSED = "already", "still_drained", "routed", "not_routed", "refused"
# put_back's `first` when the caller has not read the entry (None is an answer: no entry).
UNREAD = object()


def put_back(entry, post, wait, first=UNREAD):
    """The worker back in the gateway's rotation, the one way smg takes it: a removal still
    draining ends first (smg answers POST /workers with 409 while the old entry is there, then
    drops it), then POST /workers, then until the gateway routes to it. The caller's I/O:
    `entry()` reads the worker's entry (None when it has none), `post()` adds it (None, or why the
    gateway refused), `wait(done)` calls done() until it holds or the caller's time runs out, and
    says whether it held. `first`: the entry the caller read already. Returns (ALREADY,
    STILL_DRAINED, ROUTED, NOT_ROUTED or REFUSED, the last entry seen - or the refusal)."""
    seen = [entry() if first is UNREAD else first]

    def look():
        seen.append(entry())
        return seen[-1]
    if in_rotation(seen[-1]):
        return ALREADY, seen[-1]
    if seen[-1] is not None and not wait(lambda: look() is None or in_rotation(seen[-1])):
        return STILL_DRAINED, seen[-1]
    if in_rotation(seen[-1]):
        return ALREADY, seen[-1]
    refused = post()
    if refused:
        return REFUSED, refused
    return (ROUTED if wait(lambda: in_rotation(look())) else NOT_ROUTED), seen[-1]
