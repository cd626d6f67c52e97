"""Goodput under latency targets (data tables): the targets' refusals, a load step's figures as
SGLang's benchmark computes them, the rate search's next step, the Pareto table and the winners."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils.goodput import (
    best, met, next_rate, pareto, slo_problems, step, time_per_token, winners,
)


@pytest.mark.parametrize("slo, said", [
    ({"ttft_p99_ms": 2000}, []),
    ({"itl_p99_ms": 50, "error_budget": 0.01}, []),
    ({"ttft_p99_ms": 2000, "itl_p99_ms": 50.5, "error_budget": 0}, []),
    ([], ["sglang_tune_slo must be a mapping such as {ttft_p99_ms: 2000, itl_p99_ms: 50}"]),
    ({}, ["sglang_tune_slo: give ttft_p99_ms or itl_p99_ms, or both"]),
    ({"error_budget": 0.1}, ["sglang_tune_slo: give ttft_p99_ms or itl_p99_ms, or both"]),
    ({"ttft_p99_ms": 0}, ["sglang_tune_slo.ttft_p99_ms: 0 must be a number of milliseconds above 0"]),
    ({"itl_p99_ms": "50ms"}, ["sglang_tune_slo.itl_p99_ms: '50ms' must be a number of milliseconds above 0"]),
    ({"itl_p99_ms": True}, ["sglang_tune_slo.itl_p99_ms: True must be a number of milliseconds above 0"]),
    ({"ttft_p99_ms": 9, "error_budget": 1}, ["sglang_tune_slo.error_budget: 1 must be a fraction from 0 up to 1, such as 0.01"]),
    ({"ttft_p99": 9, "ttft_p99_ms": 9},
     ["sglang_tune_slo.ttft_p99: the targets are ttft_p99_ms, itl_p99_ms, error_budget"]),
])
def test_slo_problems(slo, said):
    assert slo_problems(slo) == said


def test_slo_problems_name_the_option_they_came_from():
    assert slo_problems({"ttft": 1}, "slo") == ["slo.ttft: the targets are ttft_p99_ms, itl_p99_ms, error_budget",
                                                "slo: give ttft_p99_ms or itl_p99_ms, or both"]


def request(ttft, latency, tokens, gaps=(), ok=True, accept=None):
    return {"ok": ok, "ttft": ttft, "latency": latency, "tokens": tokens, "itl": list(gaps), "accept_length": accept}


@pytest.mark.parametrize("record, expected", [
    (request(0.1, 1.1, 11), 0.1),
    (request(0.2, 0.2, 1), 0.0),
    (request(0.2, 0.2, 0), 0.0),
])
def test_time_per_token(record, expected):
    assert time_per_token(record) == pytest.approx(expected)


@pytest.mark.parametrize("slo, record, expected", [
    ({"ttft_p99_ms": 200}, request(0.2, 9.0, 2), True),
    ({"ttft_p99_ms": 200}, request(0.201, 0.3, 2), False),
    ({"itl_p99_ms": 100}, request(5.0, 6.0, 11), True),
    ({"itl_p99_ms": 99}, request(5.0, 6.0, 11), False),
    ({"ttft_p99_ms": 200, "itl_p99_ms": 100}, request(0.1, 1.1, 11), True),
    ({"ttft_p99_ms": 50, "itl_p99_ms": 100}, request(0.1, 1.1, 11), False),
])
def test_met(slo, record, expected):
    assert met(record, slo) is expected


STEADY = [request(0.1, 1.1, 11, [0.1] * 10, accept=3.0) for dummy in range(9)] + [request(0.5, 3.5, 11, [0.3] * 10, accept=2.0)]


@pytest.mark.parametrize("slo, records, expected", [
    # Nine fast requests and a slow one: the p99s are nearly the slow one's; goodput counts the nine.
    ({"ttft_p99_ms": 500, "itl_p99_ms": 300}, STEADY,
     {"rate": 2.0, "sent": 10, "failed": 0, "meets": True, "goodput": 2.0, "ttft_p99_ms": 464.0, "itl_p99_ms": 300.0,
      "tok_s": 22.0, "accept_length": 2.9}),
    ({"ttft_p99_ms": 400}, STEADY,
     {"rate": 2.0, "sent": 10, "failed": 0, "meets": False, "goodput": 1.8, "ttft_p99_ms": 464.0, "itl_p99_ms": 300.0,
      "tok_s": 22.0, "accept_length": 2.9}),
    # One failed request of 11: within a 10 % budget, not within none.
    ({"ttft_p99_ms": 500, "error_budget": 0.1}, STEADY + [request(None, None, 0, ok=False)],
     {"rate": 2.0, "sent": 11, "failed": 1, "meets": True, "goodput": 2.0, "ttft_p99_ms": 464.0, "itl_p99_ms": 300.0,
      "tok_s": 22.0, "accept_length": 2.9}),
    ({"ttft_p99_ms": 500}, STEADY + [request(None, None, 0, ok=False)],
     {"rate": 2.0, "sent": 11, "failed": 1, "meets": False, "goodput": 2.0, "ttft_p99_ms": 464.0, "itl_p99_ms": 300.0,
      "tok_s": 22.0, "accept_length": 2.9}),
    # Nothing finished: nothing meets, nothing is measured.
    ({"ttft_p99_ms": 500, "error_budget": 0.5}, [request(None, None, 0, ok=False)],
     {"rate": 2.0, "sent": 1, "failed": 1, "meets": False, "goodput": 0.0, "ttft_p99_ms": None, "itl_p99_ms": None,
      "tok_s": 0.0, "accept_length": None}),
])
def test_step(slo, records, expected):
    assert step(2.0, records, 5.0, slo) == expected


def steps(*said):
    return [{"rate": rate, "meets": meets} for rate, meets in said]


@pytest.mark.parametrize("done, expected", [
    # The first step is the first rate, within the bounds.
    ((), 4.0),
    # Up by doubling while the targets are met, to the highest bound.
    (((4.0, True),), 8.0),
    (((4.0, True), (8.0, True)), 16.0),
    (((4.0, True), (8.0, True), (16.0, True)), 20.0),
    (((4.0, True), (8.0, True), (16.0, True), (20.0, True)), None),
    # Down by halving while they are missed, to the lowest; none met at the lowest: done.
    (((4.0, False),), 2.0),
    (((4.0, False), (2.0, False)), 1.0),
    (((4.0, False), (2.0, False), (1.0, False)), 0.5),
    (((4.0, False), (2.0, False), (1.0, False), (0.5, False)), None),
    # Then the geometric middle of the bracket, until it is within 10 %.
    (((4.0, True), (8.0, False)), 5.657),
    (((4.0, True), (8.0, False), (5.657, False)), 4.757),
    (((4.0, True), (8.0, False), (5.657, False), (4.757, True)), 5.188),
    (((4.0, True), (8.0, False), (5.657, False), (4.757, True), (5.188, True)), None),
    # A lower rate that missed (a blip) does not bracket a higher one that met.
    (((4.0, True), (2.0, False), (8.0, False)), 5.657),
])
def test_next_rate(done, expected):
    assert next_rate(steps(*done), 4.0, [0.5, 20.0], max_steps=8) == expected


def test_next_rate_stops_when_the_steps_are_spent_and_starts_within_the_bounds():
    assert next_rate(steps((4.0, True), (8.0, False)), 4.0, [0.5, 20.0], max_steps=2) is None
    assert next_rate([], 40.0, [0.5, 20.0], max_steps=2) == 20.0
    assert next_rate([], 0.1, [0.5, 20.0], max_steps=2) == 0.5


def test_best_is_the_most_goodput_that_met_the_targets():
    said = [{"rate": 4.0, "meets": True, "goodput": 3.9}, {"rate": 5.2, "meets": True, "goodput": 5.0},
            {"rate": 5.7, "meets": False, "goodput": 5.5}]
    assert best(said)["rate"] == 5.2
    assert best(said[2:]) is None


def row(variant, goodput, ttft, itl, tok_s, meets=True):
    return {"variant": variant, "goodput": goodput, "ttft_p99_ms": ttft, "itl_p99_ms": itl, "tok_s": tok_s, "meets": meets}


@pytest.mark.parametrize("rows, flags", [
    ([row("nextn", 5.0, 900, 40, 600), row("dflash", 6.0, 800, 30, 700)], [False, True]),
    # A trade: more goodput, a worse p99 - both stay.
    ([row("nextn", 5.0, 900, 40, 600), row("ddtree", 6.0, 1200, 30, 900)], [True, True]),
    # Equal in every figure: neither dominates.
    ([row("nextn", 5.0, 900, 40, 600), row("dflash", 5.0, 900, 40, 600)], [True, True]),
    # A row with no measurement is not on the front, and dominates nothing.
    ([row("nextn", 5.0, 900, 40, 600), row("ddtree", None, None, None, None, meets=False)], [True, True]),
])
def test_pareto(rows, flags):
    assert [r["pareto"] for r in pareto(rows)] == flags


@pytest.mark.parametrize("rows, slo, throughput, differ", [
    # The fastest misses the targets: the SLO winner is another.
    ([row("nextn", 5.0, 900, 40, 600), row("ddtree", 7.0, 3000, 30, 900, meets=False), row("dflash", 6.0, 800, 35, 700)],
     "dflash", "ddtree", True),
    ([row("nextn", 5.0, 900, 40, 600), row("dflash", 6.0, 800, 35, 700)], "dflash", "dflash", False),
    # A tie in goodput goes to the lower inter-token p99.
    ([row("nextn", 6.0, 900, 40, 600), row("dflash", 6.0, 800, 35, 500)], "dflash", "nextn", True),
    ([row("nextn", 5.0, 900, 40, 600, meets=False)], None, "nextn", False),
    ([], None, None, False),
])
def test_winners(rows, slo, throughput, differ):
    said = winners(rows)
    assert (said["slo"] or {}).get("variant") == slo
    assert (said["throughput"] or {}).get("variant") == throughput
    assert said["differ"] is differ
