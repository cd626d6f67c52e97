"""The watch after the gates, as data: each late failure a real server shows, probe by probe, and
what the watch decides; and the blips it lets pass."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import watch

T0 = 1_800_000_000.0
LIMITS = watch.limits()
# The known-good served 100 tok/s at its gate; the new variant 140 at an accept length of 3.5.
BASELINE = {"known_good_speed": 100.0, "gate_speed": 140.0, "gate_accept_length": 3.5}

OK = {"unit": "active", "generation": "ok"}
DEAD_SCHEDULER = {"unit": "active", "generation": "failed",
                  "generation_evidence": "GET /health_generate: 503 after 20.0 s"}
PEER_DIED = {"cause": "peer_died", "rank": "TP8", "evidence": [
    {"match": "[rank8]:[E1207 14:11:02.123] [PG ID 0 PG GUID 0 Rank 8] Process group watchdog thread terminated "
              "with exception: Connection closed by peer [198.18.0.12]:29500"}]}
CRASHED = {"cause": "cuda_error", "rank": "TP3", "evidence": [
    {"match": "[2026-12-07 14:11:02 TP3] RuntimeError: CUDA error: an illegal memory access was encountered"}]}
# A line SGLang logs about one request the server survives (the classifier names it; no breach on its own).
ONE_REQUEST = {"cause": "cuda_oom", "rank": "TP0", "evidence": [{"match": "torch.OutOfMemoryError: CUDA out of memory."}]}


def metrics(accept=None, requests=None, errors=None):
    return {"accept_length": accept, "gen_throughput": None, "requests": requests, "errors": errors}


def run(probes, interval=10.0, limits=None, baseline=None):
    """Feed the probes one interval apart: (the index of the probe that breached, the breach) or (None, None)."""
    limits, baseline = limits or LIMITS, BASELINE if baseline is None else baseline
    state = watch.fresh()
    for index, probe in enumerate(probes):
        state, breach = watch.observe(state, dict(probe, time=T0 + interval * (index + 1)), limits, baseline)
        if breach:
            return index, breach
    return None, None


@pytest.mark.parametrize("probes, at, cause, rank", [
    # A crash after the settle window: the unit is gone; the journal names why.
    ([OK, OK, {"unit": "failed", "diagnosis": CRASHED}], 2, "cuda_error", "TP3"),
    # It exited and the journal said nothing the classifier knows.
    ([OK, {"unit": "inactive", "diagnosis": None}], 1, "server_exited", None),
    # A peer node died: the survivor's ranks say it in gloo's words, before any probe fails.
    ([OK, {"unit": "active", "generation": "ok", "diagnosis": PEER_DIED}], 1, "peer_died", "TP8"),
    # A dead scheduler behind a live HTTP server: three failed generations in a row.
    ([OK, DEAD_SCHEDULER, DEAD_SCHEDULER, DEAD_SCHEDULER], 3, "generation_failed", None),
    # A health request that hangs is a failed generation too (the probe's own timeout).
    ([{"unit": "active", "generation": "failed", "generation_evidence": "GET /health_generate: no answer in 25 s"}] * 3,
     2, "generation_failed", None),
], ids=["crash after the settle window", "exit without a known cause", "a peer node died",
        "dead scheduler behind live HTTP", "a health request that hangs"])
def test_each_late_failure_is_named_at_the_probe_that_shows_it(probes, at, cause, rank):
    index, breach = run(probes)
    assert (index, breach["cause"], breach["rank"]) == (at, cause, rank), breach
    assert breach["evidence"] and breach["time"] == T0 + 10.0 * (at + 1)


def test_the_generation_breach_says_since_when_and_its_evidence():
    breach = run([OK, DEAD_SCHEDULER, DEAD_SCHEDULER, DEAD_SCHEDULER])[1]
    assert breach["evidence"] == DEAD_SCHEDULER["generation_evidence"]
    assert breach["why"].startswith("3 generations in a row failed since ")


@pytest.mark.parametrize("probes", [
    [OK, DEAD_SCHEDULER, DEAD_SCHEDULER, OK, DEAD_SCHEDULER, DEAD_SCHEDULER, OK],
    [OK, {"unit": "active", "generation": "ok", "diagnosis": ONE_REQUEST}, OK],
    [{"unit": "reloading", "generation": None}, OK],
    [dict(OK, metrics=metrics(accept=2.0)), dict(OK, metrics=metrics(accept=3.4)), dict(OK, metrics=metrics(accept=2.0))],
], ids=["failed generations never three in a row", "a line about one request", "a reload",
        "a slow window between fast ones"])
def test_no_single_blip_restores_a_host(probes):
    assert run(probes) == (None, None)


def slow(accept, count, interval=60.0, limits=None):
    return run([dict(OK, metrics=metrics(accept=accept))] * count, interval=interval, limits=limits)


def test_an_accept_length_that_falls_is_a_breach_once_held_for_the_window():
    # 3.5 -> 2.0: 140 * 2 / 3.5 = 80 tok/s projected, under 90 % of the known-good's 100.
    index, breach = slow(2.0, 10)
    assert index == 5 and breach["cause"] == "slower_than_known_good", (index, breach)
    assert "accept length 2.00 (the gate's 3.50): 80.0 tok/s projected, the known-good's 100.0" in breach["evidence"]
    # 3.0: 120 tok/s, faster than the known-good: never.
    assert slow(3.0, 10) == (None, None)
    # The window is the user's: two minutes.
    assert slow(2.0, 10, limits=watch.limits({"speed_window": 120}))[0] == 2


def test_no_speed_breach_without_figures_to_compare():
    assert slow(2.0, 10, limits=LIMITS)[0] is not None
    assert run([dict(OK, metrics=metrics(accept=2.0))] * 10, interval=60.0, baseline={"known_good_speed": 100.0}) == \
        (None, None), "no gate accept length recorded"
    assert run([dict(OK, metrics=metrics(accept=None))] * 10, interval=60.0) == (None, None), "not speculative"


@pytest.mark.parametrize("errors, breached", [
    ((0, 0, 0, 0, 0, 0, 0), False),
    ((0, 5, 10, 20, 30, 40, 50), True),
    ((0, 1, 2, 3, 4, 5, 6), False),
], ids=["none", "most requests failing", "a few"])
def test_failed_requests_over_the_window(errors, breached):
    probes = [dict(OK, metrics=metrics(requests=10.0 * i, errors=float(e))) for i, e in enumerate(errors)]
    index, breach = run(probes, interval=20.0)
    assert (breach is not None) == breached, breach
    if breached:
        assert breach["cause"] == "requests_failing" and " requests failed in " in breach["evidence"]


def test_a_counter_that_went_down_starts_the_window_again():
    # The server restarted under systemd between probes: its counters start at 0 again.
    probes = [dict(OK, metrics=metrics(requests=r, errors=e)) for r, e in ((100, 0), (200, 0), (10, 9), (20, 18))]
    assert run(probes, interval=30.0) == (None, None)


@pytest.mark.parametrize("unit, result, restarts, stopped", [
    ("inactive", "success", 0, True),
    ("deactivating", "success", 0, True),
    ("activating", "success", 0, True),
    ("failed", "signal", 0, False),
    ("inactive", "exit-code", 0, False),
    ("activating", "signal", 1, False),
    ("activating", "success", 1, False),
    ("deactivating", "timeout", 0, False),
    ("active", "success", 0, False),
    ("reloading", "success", 0, False),
], ids=["a stop job ended it", "a stop job is ending it", "restarted by hand: starting again", "it crashed",
        "it exited with an error", "systemd restarts it after a crash", "systemd starts it again after a crash",
        "its stop timed out", "it runs", "it reloads"])
def test_a_unit_stopped_on_purpose_ends_the_watch_and_a_failure_does_not(unit, result, restarts, stopped):
    # (NRestarts was 0 as the watch began.)
    assert watch.stopped_cleanly({"unit": unit, "result": result, "restarts": restarts}, 0) == stopped


@pytest.mark.parametrize("environment, waits", [
    ("", 25.0),                                                    # SGLang's 20 s and the margin
    ("# Ansible managed\nPYTHONUNBUFFERED=1\nHF_HUB_OFFLINE=1\n", 25.0),
    ("SGLANG_HEALTH_CHECK_TIMEOUT=3\n", 8.0),                      # the lab's rows
    ("SGLANG_HEALTH_CHECK_TIMEOUT=120\n", 125.0),                  # raised for long prefills: not a hang
    ("SGLANG_HEALTH_CHECK_TIMEOUT=\"60\"\n", 65.0),
    ("SGLANG_HEALTH_CHECK_TIMEOUT=soon\n", 25.0),                  # SGLang would not start on it
    ("MY_SGLANG_HEALTH_CHECK_TIMEOUT=90\n", 25.0),
])
def test_a_generation_waits_sglangs_own_health_timeout_and_a_margin(environment, waits):
    assert watch.generation_timeout(environment) == waits


def test_thresholds_are_checked_by_name():
    assert watch.limits({"generation_failures": 5, "speed_ratio": None})["generation_failures"] == 5
    assert watch.limits({"speed_ratio": None})["speed_ratio"] == watch.DEFAULTS["speed_ratio"]
    with pytest.raises(ValueError, match="unknown watch thresholds: generation_failure "):
        watch.limits({"generation_failure": 5})


METRICS = """# HELP sglang:spec_accept_length Mean acceptance length of speculative decoding.
# TYPE sglang:spec_accept_length gauge
sglang:spec_accept_length{engine_type="unified",model_name="Qwen/Qwen3-30B-A3B",tp_rank="0"} 3.25
sglang:spec_accept_length{engine_type="unified",model_name="Qwen/Qwen3-30B-A3B",tp_rank="1"} 3.75
# TYPE sglang:num_requests_total counter
sglang:num_requests_total{model_name="Qwen/Qwen3-30B-A3B",is_streaming="true"} 120.0
sglang:num_requests_total{model_name="Qwen/Qwen3-30B-A3B",is_streaming="false"} 30.0
sglang:num_requests_created{model_name="Qwen/Qwen3-30B-A3B",is_streaming="false"} 1.7e+09
sglang:gen_throughput{model_name="Qwen/Qwen3-30B-A3B"} NaN
"""


def test_the_figures_are_read_from_sglangs_metrics_text():
    assert watch.metrics_figures(METRICS) == {"accept_length": 3.5, "gen_throughput": None, "requests": 150.0,
                                              "errors": None}
    assert watch.metrics_figures("") == dict.fromkeys(("accept_length", "gen_throughput", "requests", "errors"))
