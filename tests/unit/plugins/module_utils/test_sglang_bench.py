"""The serving benchmark's pure parts: SSE parsing, token counting from SGLang's answers,
percentiles and the summary (data tables)."""
from __future__ import annotations

import json

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils.sglang_bench import (
    PROMPTS, accept_length, auth_headers, chunk_tokens, percentile, ratio, request_body, sse_payload, summarize,
)

GEN_CHUNK = {"text": " a b", "output_ids": [1, 2],
             "meta_info": {"completion_tokens": 2, "spec_verify_ct": 1, "spec_accept_length": 2.0}}


@pytest.mark.parametrize("line, expected", [
    (b"data: " + json.dumps(GEN_CHUNK).encode() + b"\n", GEN_CHUNK),
    ("data:{\"a\": 1}", {"a": 1}),
    (b"data: [DONE]\n", None),
    (b"\n", None),
    (b": keep-alive\n", None),
    (b"event: ping\n", None),
])
def test_sse_payload(line, expected):
    assert sse_payload(line) == expected


def test_sse_payload_rejects_broken_json():
    with pytest.raises(ValueError):
        sse_payload(b"data: {not json\n")


@pytest.mark.parametrize("api, payload, seen, expected", [
    ("generate", GEN_CHUNK, 0, (2, 2.0)),
    ("generate", {"output_ids": [1, 2, 3], "meta_info": {}}, 0, (3, None)),
    ("generate", {"meta_info": {"completion_tokens": 12, "spec_verify_ct": 3}}, 0, (12, 4.0)),
    ("chat", {"choices": [{"delta": {"content": " x"}}]}, 4, (5, None)),
    ("chat", {"choices": [{"delta": {}, "finish_reason": "length"}]}, 5, (5, None)),
    ("chat", {"choices": [], "usage": {"completion_tokens": 64}}, 63, (64, None)),
    ("chat", {"choices": [{"message": {"content": "whole"}}], "usage": {"completion_tokens": 9}}, 0, (9, None)),
])
def test_chunk_tokens(api, payload, seen, expected):
    assert chunk_tokens(api, payload, seen) == expected


@pytest.mark.parametrize("meta, expected", [
    ({}, None),
    ({"spec_accept_length": 6.4}, 6.4),
    ({"completion_tokens": 10, "spec_verify_ct": 4}, 2.5),
    ({"completion_tokens": 10, "spec_verify_ct": 0}, None),
])
def test_accept_length(meta, expected):
    assert accept_length(meta) == expected


@pytest.mark.parametrize("values, pct, expected", [
    ([3.0], 95, 3.0),
    ([1, 2, 3, 4], 50, 2.5),
    ([4, 1, 3, 2], 0, 1),
    ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 95, 9.55),
])
def test_percentile(values, pct, expected):
    assert percentile(values, pct) == pytest.approx(expected)


def test_percentile_of_nothing():
    assert percentile([], 50) is None


def record(ok=True, tokens=100, ttft=0.01, itl=(0.005, 0.006), latency=0.5, accept=None, error=None):
    return {"ok": ok, "tokens": tokens, "ttft": ttft, "itl": list(itl), "latency": latency, "accept_length": accept,
            "error": error}


def test_summarize_counts_only_completed_requests():
    records = [record(accept=6.0), record(tokens=50, accept=5.0, ttft=0.03),
               record(ok=False, tokens=0, ttft=None, itl=(), latency=None, error="HTTP 500: boom from /generate"),
               record(ok=False, tokens=0, ttft=None, itl=(), latency=None, error="HTTP 500: boom from /generate")]
    out = summarize(records, 2.0)
    assert out["completed"] == 2 and out["errors"] == 2
    assert out["error_samples"] == ["HTTP 500: boom from /generate"]
    assert out["output_tokens"] == 150 and out["output_tokens_per_s"] == 75.0 and out["requests_per_s"] == 1.0
    assert out["ttft_p50"] == 0.02 and out["accept_length"] == 5.5
    assert out["itl_p50"] == 0.0055


def test_summarize_with_nothing_completed():
    out = summarize([record(ok=False, tokens=0, error="x")], 1.0)
    assert out["output_tokens_per_s"] == 0.0 and out["ttft_p50"] is None and out["accept_length"] is None


@pytest.mark.parametrize("new, old, expected", [
    ({"output_tokens_per_s": 186.0}, {"output_tokens_per_s": 150.0}, 1.24),
    ({"output_tokens_per_s": 42.2}, {"output_tokens_per_s": 62.0}, 0.681),
    ({"output_tokens_per_s": 42.2}, None, None),
    ({"output_tokens_per_s": 42.2}, {}, None),
    ({"output_tokens_per_s": 0.0}, {"output_tokens_per_s": 62.0}, None),
])
def test_ratio(new, old, expected):
    assert ratio(new, old) == expected


@pytest.mark.parametrize("api, stream, path, tokens_key", [
    ("generate", True, "sampling_params", "max_new_tokens"),
    ("chat", True, None, "max_tokens"),
    ("chat", False, None, "max_tokens"),
])
def test_request_body_is_greedy_and_fixed_length(api, stream, path, tokens_key):
    body = request_body(api, PROMPTS[0], 64, stream)
    params = body[path] if path else body
    assert params[tokens_key] == 64 and params["temperature"] == 0 and params["ignore_eos"] is True
    assert body["stream"] is stream
    assert ("stream_options" in body) is (api == "chat" and stream)


def test_auth_headers_do_not_change_the_callers_dict():
    extra = {"X-Trace": "1"}
    assert auth_headers(extra, "k") == {"X-Trace": "1", "Authorization": "Bearer k"}
    assert extra == {"X-Trace": "1"} and auth_headers(None, None) == {}


def test_prompt_set_is_fixed_and_distinct():
    assert len(PROMPTS) == 16 and len(set(PROMPTS)) == 16
