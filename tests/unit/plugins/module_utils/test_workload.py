"""A user's workload file read as SGLang's serving benchmark reads it (data tables): JSON Lines
and ShareGPT, the estimate of a text's tokens, and each refusal naming the line and field to
change without a byte of the user's prompts."""
from __future__ import annotations

import json

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils.workload import (
    WorkloadError, prompt_of, read, schedule, summary, tokens_of,
)

SECRET = "the user's private prompt"


def lines(*rows):
    return "\n".join(row if isinstance(row, str) else json.dumps(row) for row in rows)


def conversation(question, answer, key="value"):
    return {"conversations": [{"from": "human", key: question}, {"from": "gpt", key: answer}]}


@pytest.mark.parametrize("text, expected", [
    ("", 1), ("abcd", 1), ("abcde", 2), ("x" * 400, 100),
])
def test_tokens_of(text, expected):
    assert tokens_of(text) == expected


@pytest.mark.parametrize("text, expected", [
    # A prompt's text, its length estimated.
    (lines({"prompt": "x" * 40, "max_new_tokens": 64}),
     [{"prompt": "x" * 40, "input_len": 10, "max_new_tokens": 64, "arrival": None, "kind": ""}]),
    # A length only (the tune makes the prompt), the benchmark's name for the answer's length.
    (lines({"input_len": 2048, "output_len": 16, "kind": "code"}),
     [{"prompt": None, "input_len": 2048, "max_new_tokens": 16, "arrival": None, "kind": "code"}]),
    # Blank lines are nothing; arrivals put the requests in order.
    (lines({"input_len": 8, "max_new_tokens": 4, "arrival": 2.5}, "", "   ",
           {"input_len": 9, "max_new_tokens": 4, "arrival": 0}),
     [{"prompt": None, "input_len": 9, "max_new_tokens": 4, "arrival": 0.0, "kind": ""},
      {"prompt": None, "input_len": 8, "max_new_tokens": 4, "arrival": 2.5, "kind": ""}]),
    # A conversation a line (custom.py's layout, value or content): the answer's length is its text's.
    (lines(conversation("q" * 20, "a" * 80, key="content")),
     [{"prompt": "q" * 20, "input_len": 5, "max_new_tokens": 20, "arrival": None, "kind": ""}]),
    # A conversation too short, or with an answer under 2 tokens, is left out as the benchmark leaves it.
    (lines({"conversations": [{"value": "alone"}]}, conversation("q", "a"), conversation("q" * 8, "a" * 8)),
     [{"prompt": "q" * 8, "input_len": 2, "max_new_tokens": 2, "arrival": None, "kind": ""}]),
    # ShareGPT: one array of conversations; an answer's length may be given.
    (json.dumps([conversation("q" * 12, "a" * 400), dict(conversation("w", "b" * 40), max_new_tokens=7)]),
     [{"prompt": "q" * 12, "input_len": 3, "max_new_tokens": 100, "arrival": None, "kind": ""},
      {"prompt": "w", "input_len": 1, "max_new_tokens": 7, "arrival": None, "kind": ""}]),
    (lines({"input_len": 8, "max_new_tokens": 4}).encode(),
     [{"prompt": None, "input_len": 8, "max_new_tokens": 4, "arrival": None, "kind": ""}]),
])
def test_read(text, expected):
    assert read(text, "traffic.jsonl") == expected


@pytest.mark.parametrize("text, said", [
    (lines({"prompt": SECRET, "max_new_tokens": 4}, SECRET + " {"),
     "traffic.jsonl cannot be read: line 2: not JSON (Expecting value at column 1)"),
    (lines(3, {"prompt": SECRET, "max_new_tokens": 4}), "line 1: a request is a JSON object, not a number"),
    # (A file that starts with "[" is a ShareGPT array.)
    (json.dumps([SECRET]), "entry 0: a request is a JSON object, not a text"),
    (lines({"prompt": SECRET, "input_len": 3, "max_new_tokens": 4}),
     "line 1: give prompt (its text) or input_len (its length in tokens), one of them"),
    (lines({"max_new_tokens": 4}), "line 1: give prompt (its text) or input_len"),
    (lines({"prompt": "", "max_new_tokens": 4}), "line 1: prompt must be a text that is not empty, not a text"),
    (lines({"prompt": 7, "max_new_tokens": 4}), "line 1: prompt must be a text that is not empty, not a number"),
    (lines({"input_len": 0.5, "max_new_tokens": 4}), "line 1: input_len must be a whole number of at least 1, not 0.5"),
    (lines({"input_len": True, "max_new_tokens": 4}), "not a true/false"),
    (lines({"prompt": SECRET}), "line 1: give max_new_tokens (the answer's length in tokens)"),
    (lines({"prompt": SECRET, "max_new_tokens": SECRET}), "max_new_tokens must be a whole number of at least 1, not a text"),
    (lines({"prompt": SECRET, "max_new_tokens": 4, "arrival": -1}),
     "line 1: arrival must be seconds from the start (a number of at least 0), not -1"),
    (lines({"prompt": SECRET, "max_new_tokens": 4, "kind": 3}), "line 1: kind must be a word such as code or chat, not 3"),
    (lines({"prompt": SECRET, "max_new_tokens": 4, "temperature": 0}),
     "line 1: unknown field temperature (the fields: prompt, input_len, max_new_tokens"),
    (lines({"conversations": SECRET}), "line 1: conversations must be a list of turns"),
    (lines({"conversations": [{"value": SECRET}, {"from": "gpt"}]}),
     "line 1: each of the first two turns needs its text in value or content"),
    (lines({"input_len": 8, "max_new_tokens": 4, "arrival": 1}, {"input_len": 8, "max_new_tokens": 4}),
     "traffic.jsonl: 1 of 2 requests have an arrival: give every request one, or none"),
    (lines(*[{"prompt": SECRET} for dummy in range(7)]), "line 5: give max_new_tokens (the answer's length in tokens); and 2 more"),
    ("", "traffic.jsonl holds no request: write one JSON object a line"),
    (lines(conversation("q", "a")), "traffic.jsonl holds no request"),
    ("[" + SECRET, "traffic.jsonl starts as a JSON array but is not JSON (Expecting value at line 1, column 2)"),
    (json.dumps({"conversations": []}).replace("{", "[{", 1).replace("}", "}]", 1)[:-1], "is not JSON"),
    (b"\xff\xfe" + SECRET.encode(), "traffic.jsonl is not UTF-8 text (byte 0): save it as UTF-8"),
])
def test_read_refuses_by_line_and_field_without_the_users_text(text, said):
    with pytest.raises(WorkloadError) as caught:
        read(text, "traffic.jsonl")
    assert said in str(caught.value)
    assert SECRET not in str(caught.value)


def test_read_refuses_a_file_over_the_limit_before_parsing_it():
    with pytest.raises(WorkloadError, match=r"traffic.jsonl is 42 bytes, above the limit of 40: sample it"):
        read(lines({"input_len": 8, "max_new_tokens": 4}) + " " * 5, "traffic.jsonl", limit=40)


def test_summary():
    requests = read(lines(*[{"input_len": n, "max_new_tokens": 2 * n, "arrival": n / 2, "kind": kind}
                            for n, kind in ((1, "code"), (3, "chat"), (5, "code"), (7, ""))]), "t")
    assert summary(requests) == {
        "requests": 4, "input_len_p50": 5, "input_len_max": 7, "max_new_tokens_p50": 10, "max_new_tokens_max": 14,
        "kinds": {"code": 2, "chat": 1, "-": 1}, "arrival_rate": 1.0,
    }
    assert summary(read(lines({"input_len": 1, "max_new_tokens": 1}), "t"))["arrival_rate"] is None


@pytest.mark.parametrize("request_, expected", [
    ({"prompt": "as the user wrote it", "input_len": 5, "kind": "code"}, "as the user wrote it"),
    ({"prompt": None, "input_len": 6, "kind": "chat"}, "Tell me: w00 w01 w02"),
    ({"prompt": None, "input_len": 6, "kind": "code"}, "Write a python function: w00 w01 w02"),
    ({"prompt": None, "input_len": 1, "kind": ""}, "Tell me: w00"),
])
def test_prompt_of(request_, expected):
    assert prompt_of(request_) == expected


def timed(*moments):
    return [{"arrival": moment} for moment in moments]


@pytest.mark.parametrize("requests, rate, expected", [
    # No arrivals, no rate: a closed loop.
    ([{"arrival": None}] * 3, None, None),
    # The user's own arrivals, from the first.
    (timed(10.0, 10.5, 12.0), None, [0.0, 0.5, 2.0]),
    # Scaled to a mean of 4 a second (the user's: 1 a second): its bursts kept.
    (timed(10.0, 10.5, 12.0), 4.0, [0.0, 0.125, 0.5]),
    # All at one moment: nothing to scale.
    (timed(3.0, 3.0), 4.0, [0.0, 0.0]),
])
def test_schedule(requests, rate, expected):
    assert schedule(requests, rate) == expected


def test_a_poisson_schedule_keeps_its_rate_and_its_moments_for_a_seed():
    requests = [{"arrival": None}] * 2001
    moments = schedule(requests, 5.0, seed=7)
    assert moments[0] == 0.0 and moments == sorted(moments)
    assert 2000 / moments[-1] == pytest.approx(5.0, rel=0.1)
    assert schedule(requests, 5.0, seed=7) == moments
    assert schedule(requests, 5.0, seed=8) != moments
