# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pure parts of the serving benchmark: the shipped prompt set, request bodies for
SGLang's native /generate and its OpenAI-compatible /v1/chat/completions, the parsing of
their (streamed) answers, and the summary statistics."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

# A fixed prompt set, so two measurements of two variants load the server the same way.
# Mixed lengths and topics; speculative decoding's accept length depends on the text.
PROMPTS = (
    "Explain how a KV cache speeds up autoregressive decoding in a transformer.",
    "Write a Python function that merges two sorted lists into one sorted list.",
    "Summarise the causes of the 1929 stock market crash in five bullet points.",
    "What is the difference between TCP and UDP? Give one use case for each.",
    "Translate into French: The server restarted twice before it became healthy.",
    "List the planets of the solar system with one fact about each.",
    "Write a haiku about a GPU running out of memory.",
    "Describe speculative decoding to a software engineer who knows nothing about ML.",
    "Give a step-by-step recipe for a simple tomato soup.",
    "Write a SQL query that returns the ten customers with the highest total order value.",
    "Explain what systemd's Restart=on-failure does and when it is a bad idea.",
    "Compare tensor parallelism and pipeline parallelism for serving a 27B model.",
    "Write a short story, about a hundred words, about a lighthouse keeper.",
    "What are the trade-offs of a larger batch size when serving a language model?",
    "Explain the central limit theorem with a concrete example.",
    "Write a bash one-liner that prints the five largest files under /var/log.",
)

APIS = ("generate", "chat")


def auth_headers(headers, api_key):
    """The request headers with SGLang's bearer token, when there is one."""
    merged = dict(headers or {})
    if api_key:
        merged["Authorization"] = "Bearer " + api_key
    return merged


def request_body(api, prompt, max_new_tokens, stream, model="default"):
    """One request, greedy and with EOS ignored so every request makes the same number of
    tokens and two runs (two variants) are comparable."""
    if api == "generate":
        return {"text": prompt, "stream": stream,
                "sampling_params": {"max_new_tokens": max_new_tokens, "temperature": 0, "ignore_eos": True}}
    body = {"model": model, "messages": [{"role": "user", "content": prompt}], "max_tokens": max_new_tokens,
            "temperature": 0, "ignore_eos": True, "stream": stream}
    if stream:
        body["stream_options"] = {"include_usage": True}
    return body


def endpoint(api):
    return "/generate" if api == "generate" else "/v1/chat/completions"


def sse_payload(line):
    """The JSON of one server-sent event line, None for blank lines, comments and the final
    `[DONE]`."""
    if isinstance(line, bytes):
        line = line.decode("utf-8", "replace")
    line = line.strip()
    if not line.startswith("data:"):
        return None
    data = line[5:].strip()
    if not data or data == "[DONE]":
        return None
    return json.loads(data)


def chunk_tokens(api, payload, seen):
    """(completion tokens so far, accept length or None) after one streamed chunk or one
    whole answer; `seen` is the count before it (chat chunks carry one delta each)."""
    if api == "generate":
        meta = payload.get("meta_info") or {}
        tokens = meta.get("completion_tokens")
        if tokens is None:
            tokens = len(payload.get("output_ids") or ()) or seen
        return tokens, accept_length(meta)
    usage = payload.get("usage") or {}
    if usage.get("completion_tokens") is not None:
        return usage["completion_tokens"], None
    choices = payload.get("choices") or [{}]
    content = (choices[0].get("delta") or choices[0].get("message") or {}).get("content")
    return (seen + 1 if content else seen), None


def accept_length(meta):
    """SGLang's mean speculative accept length: tokens per verify step."""
    if meta.get("spec_accept_length") is not None:
        return float(meta["spec_accept_length"])
    if meta.get("spec_verify_ct"):
        return float(meta.get("completion_tokens", 0)) / meta["spec_verify_ct"]
    return None


def percentile(values, pct):
    """Linear-interpolated percentile (numpy's default); None for no values."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = (len(ordered) - 1) * pct / 100.0
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def rounded(value, digits=4):
    return None if value is None else round(value, digits)


def summarize(records, wall):
    """The benchmark's figures from per-request records: dicts with `ok`, `tokens`, `ttft`,
    `itl` (list of gaps between chunks), `latency`, `accept_length`, `error`."""
    done = [r for r in records if r["ok"]]
    failed = [r for r in records if not r["ok"]]
    tokens = sum(r["tokens"] for r in done)
    gaps = [gap for r in done for gap in r["itl"]]
    ttfts = [r["ttft"] for r in done if r["ttft"] is not None]
    accepts = [r["accept_length"] for r in done if r["accept_length"] is not None]
    return {
        "completed": len(done), "errors": len(failed),
        "error_samples": sorted(set(r["error"] for r in failed))[:5],
        "output_tokens": tokens, "duration": rounded(wall, 3),
        "output_tokens_per_s": rounded(tokens / wall, 2) if wall > 0 else None,
        "requests_per_s": rounded(len(done) / wall, 3) if wall > 0 else None,
        "ttft_p50": rounded(percentile(ttfts, 50)), "ttft_p95": rounded(percentile(ttfts, 95)),
        "itl_p50": rounded(percentile(gaps, 50)), "itl_p95": rounded(percentile(gaps, 95)),
        "latency_p50": rounded(percentile([r["latency"] for r in done], 50)),
        "accept_length": rounded(sum(accepts) / len(accepts), 3) if accepts else None,
    }


def ratio(candidate, baseline):
    """candidate / baseline output tokens per second, or None when either is missing."""
    new = (candidate or {}).get("output_tokens_per_s")
    old = (baseline or {}).get("output_tokens_per_s")
    if not new or not old:
        return None
    return round(float(new) / float(old), 3)


# The performance gate's verdicts. A deploy is rolled back on the FAILING ones; everything
# else that decides on a verdict imports these names instead of spelling them again.
MEASURED, NO_BASELINE, KEPT = "measured", "no_baseline", "kept"
BENCH_FAILED, SLOWER = "bench_failed", "slower_than_baseline"
FAILING_VERDICTS = (BENCH_FAILED, SLOWER)
VERDICTS = (MEASURED, NO_BASELINE, KEPT) + FAILING_VERDICTS


def same_workload(recorded, workload):
    """A recorded figure compares only when it was measured with this workload (the prompt
    count the module adds to its workload is not a setting)."""
    kept = dict((k, v) for k, v in ((recorded or {}).get("workload") or {}).items() if k != "prompts")
    return kept == dict(workload or {})


def recorded_baseline(deployed, workload):
    """The speed recorded with the running service's deploy, when it compares; else None."""
    perf = (deployed or {}).get("perf")
    return perf if perf and same_workload(perf, workload) else None


def settle_baseline(run, recorded, variant, measured_at):
    """The baseline a new variant is compared with: this run's measurement of the running
    service (`run`, sglang_bench's result, or None when it was not measured), else the
    recorded figure. Returns {baseline, error, record}: `record` is what the known-good
    snapshot keeps (only a fresh measurement is recorded)."""
    run = run or {}
    measured = run.get("summary") is not None and not run.get("msg")
    if measured:
        baseline = dict(run["summary"], source="measured", variant=variant)
    elif recorded:
        baseline = dict(recorded, source="recorded", variant=variant)
    else:
        baseline = None
    record = {"perf": dict(run["summary"], measured_at=measured_at)} if measured else {}
    return {"baseline": baseline, "error": run.get("msg") or "", "record": record}


def verdict(enabled, run, min_ratio):
    """The gate's verdict on sglang_bench's result for the new service."""
    if not enabled:
        return MEASURED
    if (run or {}).get("msg"):
        return BENCH_FAILED
    if run.get("ratio") is None:
        return NO_BASELINE
    return SLOWER if float(run["ratio"]) < float(min_ratio) else KEPT


def judge(gate, run, baseline, variant):
    """The performance gate's result for the report and the diagnosis: `gate` is the
    settings (enabled, min_ratio, workload), `run` sglang_bench's result for the new
    service (None when it was not measured), `baseline` what settle_baseline returned."""
    if run is None:
        return None
    baseline = baseline or {}
    return {
        "enabled": gate["enabled"], "min_ratio": gate["min_ratio"], "workload": gate["workload"],
        "variant": variant.upper(), "new": run.get("summary"), "baseline": baseline.get("baseline"),
        "baseline_error": baseline.get("error") or "", "ratio": run.get("ratio"),
        "error": run.get("msg") or "", "verdict": verdict(gate["enabled"], run, gate["min_ratio"]),
    }
