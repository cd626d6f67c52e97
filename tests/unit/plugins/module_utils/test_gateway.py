"""The gateway's worker listing and a worker's /v1/loads (module_utils/gateway.py) as data tables."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import gateway
from ansible_collections.inferops.sglang.plugins.module_utils.gateway import (
    drain_message, error_text, find_worker, in_flight, in_rotation,
)

LISTING = {"workers": [{"id": "a", "url": "http://198.18.1.2:30000", "is_healthy": True, "status": "ready"},
                       {"id": "b", "url": "http://198.18.1.3:30000/", "is_healthy": False, "status": "draining"}],
           "total": 2}


@pytest.mark.parametrize("url, found", [
    ("http://198.18.1.2:30000", "a"), ("http://198.18.1.3:30000", "b"), ("http://198.18.1.2:30000/", "a"),
    ("http://198.18.1.9:30000", None),
], ids=["listed", "a trailing slash in the listing", "a trailing slash asked", "not listed"])
def test_find_worker(url, found):
    worker = find_worker(LISTING, url)
    assert (worker or {}).get("id") == found


@pytest.mark.parametrize("worker, routed", [
    (LISTING["workers"][0], True), (LISTING["workers"][1], False), (None, False),
    ({"is_healthy": True, "status": "pending"}, False),
])
def test_in_rotation(worker, routed):
    assert in_rotation(worker) is routed


@pytest.mark.parametrize("loads, count", [
    ({"loads": [{"dp_rank": 0, "num_running_reqs": 3, "num_waiting_reqs": 2}]}, 5),
    ({"loads": [{"dp_rank": 0, "num_running_reqs": 1}, {"dp_rank": 1, "num_running_reqs": 2}]}, 3),
    ({"loads": []}, 0),
    ({"detail": "Not Found"}, None),
    (None, None),
], ids=["running and waiting", "every DP rank", "no rank", "no loads endpoint", "no answer"])
def test_in_flight(loads, count):
    assert in_flight(loads) == count


def test_the_gateways_own_error_is_kept():
    body = {"error": "Worker already exists at URL 'http://w'", "code": "WORKER_ALREADY_EXISTS"}
    assert error_text(409, body) == "Worker already exists at URL 'http://w' (WORKER_ALREADY_EXISTS, HTTP 409)"
    assert error_text(502, "Bad Gateway") == "HTTP 502: Bad Gateway"


W = "http://198.18.1.2:30000"


@pytest.mark.parametrize("count, unknown, said", [
    (0, None, W + ": out of rotation, 0 requests in flight after 1.5 s"),
    (3, None, W + ": out of rotation, 3 requests in flight after 1.5 s (drain_timeout 60 s: a restart now cuts them)"),
    (None, "GET %s/v1/loads?include=core: HTTP 404" % W,
     W + ": out of rotation; the worker did not say what it has in flight (GET %s/v1/loads?include=core: HTTP 404),"
     " so the drain waited the whole drain_timeout, 60 s" % W),
], ids=["drained", "cut at the timeout", "the worker never said"])
def test_drain_message(count, unknown, said):
    assert drain_message(W, count, unknown, 1.5, 60) == said


DRAINING = {"id": "w1", "url": "http://198.18.0.5:30000", "is_healthy": True, "status": "draining"}
READY = dict(DRAINING, status="ready")


@pytest.mark.parametrize("entries, waits, outcome, posted", [
    ([READY], 9, gateway.ALREADY, False),
    ([None, None, READY], 9, gateway.ROUTED, True),
    ([DRAINING, DRAINING, None, None, READY], 9, gateway.ROUTED, True),
    ([DRAINING, READY], 9, gateway.ALREADY, False),     # (put back by another meanwhile)
    ([DRAINING] * 20, 3, gateway.STILL_DRAINED, False),
    ([None] * 20, 3, gateway.NOT_ROUTED, True),
], ids=["in rotation already", "gone: added, then routed", "a removal still draining ends first",
        "back meanwhile", "a removal that never ends", "added, never routed"])
def test_put_back_waits_for_the_removal_then_adds_and_waits_for_the_route(entries, waits, outcome, posted):
    """smg answers POST /workers with 409 while the removal of the drained entry is under way, and
    then drops the entry: the one sequence sglang_gateway and the host's guard both follow."""
    seen, posts = list(entries), []

    def entry():
        return seen.pop(0) if len(seen) > 1 else seen[0]

    def wait(done):
        return any(done() for _look in range(waits))
    said, last = gateway.put_back(entry, lambda: posts.append(1), wait)
    assert (said, bool(posts)) == (outcome, posted)
    assert last == (READY if outcome in (gateway.ALREADY, gateway.ROUTED) else entries[-1])


def test_put_back_stops_at_a_refusal_and_reads_no_entry_twice():
    reads = []

    def entry():
        reads.append(1)
        return READY
    # The caller read the entry already and the gateway listed none (the usual rejoin after a
    # drain): no second read before the POST; the gateway's refusal ends it, said as it was.
    said, why = gateway.put_back(entry, lambda: "the gateway answered HTTP 400 to POST /workers",
                                 lambda done: done(), first=None)
    assert (said, why, reads) == (gateway.REFUSED, "the gateway answered HTTP 400 to POST /workers", [])
