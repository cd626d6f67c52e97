"""sglang_bench's requests (data tables): the shipped prompts or a workload's own requests, the
count, the warm-up and when each is due, and a workload's bad request named by its index."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils.sglang_bench import PROMPTS
from ansible_collections.inferops.sglang.plugins.modules.sglang_bench import requests_of

PARAMS = {"prompts": None, "workload": None, "requests": None, "max_new_tokens": 128, "warmup": 2, "rate": None,
          "seed": 0}


def params(**given):
    return dict(PARAMS, **given)


def test_the_shipped_prompts_cycle_to_sixteen_in_a_closed_loop():
    (items, warm, moments, said), problem = requests_of(params())
    assert problem is None and moments is None
    assert items == [(prompt, 128) for prompt in PROMPTS] and warm == items[:2]
    assert said == {"max_new_tokens": 128, "prompts": 16}


@pytest.mark.parametrize("given, count, moments", [
    # Every request of the workload once, in a closed loop.
    ({}, 3, None),
    # Cycled to a count.
    ({"requests": 5}, 5, None),
    # At a rate: a Poisson process from 0.
    ({"rate": 2.0}, 3, "poisson"),
])
def test_a_workloads_own_requests(given, count, moments):
    workload = [{"prompt": "def f(): pass", "max_new_tokens": 8, "kind": "code"},
                {"input_len": 6, "max_new_tokens": 16, "kind": "chat"}, {"input_len": 2, "output_len": 4}]
    (items, warm, due, said), problem = requests_of(params(workload=workload, **given))
    assert problem is None
    assert items[:3] == [("def f(): pass", 8), ("Tell me: w00 w01 w02", 16), ("Tell me: w00", 4)]
    assert len(items) == count and warm == items[:2]
    assert said["requests"] == 3 and said["kinds"] == {"code": 1, "chat": 1, "-": 1}
    if moments is None:
        assert due is None
    else:
        assert len(due) == count and due[0] == 0.0 and due == sorted(due)


def test_a_workloads_own_arrivals_are_kept_without_a_rate():
    workload = [{"input_len": 4, "max_new_tokens": 4, "arrival": t} for t in (5.0, 5.5, 7.0)]
    (items, warm, due, said), problem = requests_of(params(workload=workload))
    assert problem is None and due == [0.0, 0.5, 2.0] and said["arrival_rate"] == 1.0
    assert requests_of(params(workload=workload, requests=2))[0][2] == [0.0, 0.5]
    assert requests_of(params(workload=workload, requests=4)) == (
        None, "requests (4) is more than the workload's 3: a workload with arrivals is sent once, in its own order")


@pytest.mark.parametrize("workload, said", [
    ([{"input_len": 4}, {"prompt": "x", "max_new_tokens": 0}],
     "workload[0]: give max_new_tokens (the answer's length in tokens); "
     "workload[1]: max_new_tokens must be a whole number of at least 1, not 0"),
    ([], "workload holds no request"),
    ([{"conversations": [{"value": "alone"}]}], "workload holds no request"),
])
def test_a_workloads_bad_requests_are_named_by_index(workload, said):
    assert requests_of(params(workload=workload)) == (None, said)


def test_an_empty_prompt_is_refused():
    assert requests_of(params(prompts=["fine", " "])) == (None, "prompts must not be empty")
