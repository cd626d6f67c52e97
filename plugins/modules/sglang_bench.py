#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_bench
short_description: Measure a running SGLang server's serving speed with a fixed workload
version_added: "0.1.0"
description:
  - Sends a fixed, shipped prompt set to the SGLang server on the host, through SGLang's
    native C(/generate) or its OpenAI-compatible C(/v1/chat/completions), streamed or not,
    with O(concurrency) requests in flight, after O(warmup) requests that are not counted.
  - Every request is greedy with EOS ignored, so each makes exactly O(max_new_tokens)
    tokens and two measurements (two variants) are comparable.
  - Returns output tokens per second, requests per second, time to first token and
    inter-token latency (p50, p95), errors, and the speculative accept length from SGLang's
    C(meta_info) when the server reports it.
  - With O(baseline) (an earlier result of this module), also returns the ratio of the two
    output token rates; the C(sglang_service) role's performance gate uses it.
  - With O(workload) or O(workload_file) it sends a user's own traffic instead (each request its
    own prompt and answer length), and with O(rate) it sends open-loop, at that many requests a
    second (the workload's own arrivals scaled to it, else a Poisson process), as SGLang's
    C(bench_serving) sends. With O(slo) it also returns the step's goodput under latency targets
    (RV(step)), as SGLang's benchmark counts it.
  - Fails when more than O(max_errors) requests fail, with the server's own error.
  - Changes nothing on the host.
author:
  - inferops maintainers (@inferops)
extends_documentation_fragment:
  - inferops.sglang.sglang_http
options:
  url:
    description:
      - The server's base URL.
    type: str
    default: http://127.0.0.1:30000
  api:
    description:
      - V(generate) is SGLang's native C(/generate) (its C(meta_info) carries the accept
        length); V(chat) is C(/v1/chat/completions).
    type: str
    choices: [generate, chat]
    default: generate
  stream:
    description:
      - Stream the answers. Time to first token and inter-token latency need it.
    type: bool
    default: true
  requests:
    description:
      - Measured requests (the prompt set, or the workload, is cycled).
      - 16 when not set, or with O(workload) every request of it once.
      - A workload with arrivals is sent once, in its own order, so at most its own count.
    type: int
  concurrency:
    description:
      - Requests in flight at once.
      - With O(rate), the most in flight at once. A request due while that many are in flight
        waits for one to end, and its times count from when it was due (its user waits too).
    type: int
    default: 4
  rate:
    description:
      - Requests a second, sent open-loop (each when it is due, whatever is in flight).
      - Without it, each request goes as soon as one of O(concurrency) is free (a closed loop),
        or with O(workload)'s own arrivals when it has them.
    type: float
  seed:
    description:
      - The seed of the Poisson arrivals at O(rate); two steps with one seed send at the same moments.
    type: int
    default: 0
  workload:
    description:
      - The requests to send, as C(inferops.sglang) reads a workload file (each C(prompt) or
        C(input_len), C(max_new_tokens), optionally C(arrival) and C(kind)).
      - Mutually exclusive with O(prompts) and O(workload_file).
    type: list
    elements: dict
  workload_file:
    description:
      - A file on the controller with the requests to send, one JSON object a line (C(prompt) or
        C(input_len), C(max_new_tokens) or C(output_len), optionally C(arrival) in seconds and
        C(kind)), or a ShareGPT file (one JSON array of conversations), as SGLang's own
        benchmark reads them. At most 64 MiB.
      - Read and checked on the controller before any request is sent; a line that does not
        parse is named with its field, never printed.
      - Mutually exclusive with O(prompts) and O(workload).
    type: path
  slo:
    description:
      - Latency targets in milliseconds, C(ttft_p99_ms) and C(itl_p99_ms) (either or both), and
        C(error_budget), the fraction of requests that may fail (0 unless given).
      - With them the result has RV(step), the step's goodput and whether it met them.
    type: dict
  max_new_tokens:
    description:
      - Output tokens per request.
    type: int
    default: 128
  warmup:
    description:
      - Requests sent and waited for before the measurement starts; not counted.
    type: int
    default: 2
  model:
    description:
      - The C(model) field of chat requests (SGLang serves one model and accepts its served name).
    type: str
    default: default
  prompts:
    description:
      - Prompts to use instead of the shipped set.
    type: list
    elements: str
  request_timeout:
    description:
      - Seconds one request may take.
    type: float
    default: 300
  max_errors:
    description:
      - How many failed requests are tolerated before the task fails.
    type: int
    default: 0
  baseline:
    description:
      - An earlier result of this module (at least its RV(output_tokens_per_s)) to compare with.
    type: dict
attributes:
  check_mode:
    support: full
    description: Sends no requests in check mode; returns C(skipped_in_check_mode).
  diff_mode:
    support: none
    description: Changes nothing, so there is no diff.
notes:
  - The load is what one controller-side operator would send to judge a variant, not a
    capacity test; use SGLang's C(bench_serving) for that.
seealso:
  - module: inferops.sglang.sglang_health
"""

EXAMPLES = r"""
- name: Measure the running server
  inferops.sglang.sglang_bench:
    requests: 16
    concurrency: 4
    max_new_tokens: 128
    api_key: "{{ sglang_api_key }}"
  register: known_good_speed

- name: Measure the new variant against it
  inferops.sglang.sglang_bench:
    requests: 16
    concurrency: 4
    max_new_tokens: 128
    api_key: "{{ sglang_api_key }}"
    baseline: "{{ known_good_speed }}"
  register: candidate_speed

- name: Refuse a slower variant
  ansible.builtin.assert:
    that: candidate_speed.ratio >= 1.0
    fail_msg: "{{ candidate_speed.output_tokens_per_s }} tok/s is {{ candidate_speed.ratio }}x the known-good"

- name: One load step of the user's own traffic at 6 requests a second, against latency targets
  inferops.sglang.sglang_bench:
    workload_file: files/traffic.jsonl
    rate: 6
    concurrency: 64
    slo: {ttft_p99_ms: 2000, itl_p99_ms: 60}
  register: load_step
- name: Say whether it met them
  ansible.builtin.debug:
    msg: "goodput {{ load_step.step.goodput }} req/s, p99 TTFT {{ load_step.step.ttft_p99_ms }} ms, met: {{ load_step.step.meets }}"
- name: Chat completions without streaming (no TTFT figures)
  inferops.sglang.sglang_bench:
    api: chat
    stream: false
    requests: 8
"""

RETURN = r"""
output_tokens_per_s:
  description: Output tokens of all measured requests divided by the measurement's wall time.
  returned: success
  type: float
  sample: 743.2
requests_per_s:
  description: Completed measured requests per second.
  returned: success
  type: float
  sample: 5.81
ttft_p50:
  description: Median seconds from sending a request to its first token (streaming only).
  returned: success
  type: float
  sample: 0.0062
ttft_p95:
  description: 95th percentile of the time to first token, seconds.
  returned: success
  type: float
  sample: 0.0101
itl_p50:
  description: Median seconds between two streamed chunks of one request.
  returned: success
  type: float
  sample: 0.0054
itl_p95:
  description: 95th percentile of the inter-token latency, seconds.
  returned: success
  type: float
  sample: 0.0061
latency_p50:
  description: Median seconds of a whole request.
  returned: success
  type: float
  sample: 0.69
accept_length:
  description: Mean speculative accept length (tokens per verify step) from C(meta_info); null without speculative decoding or with O(api=chat).
  returned: success
  type: float
  sample: 6.4
completed:
  description: Measured requests that succeeded.
  returned: success
  type: int
  sample: 16
errors:
  description: Measured requests that failed.
  returned: when requests were sent
  type: int
  sample: 0
error_samples:
  description: Up to five distinct errors, as the server gave them.
  returned: when requests were sent
  type: list
  elements: str
  sample: ["HTTP 503 from /generate: The server is not ready."]
output_tokens:
  description: Output tokens of the measured requests.
  returned: success
  type: int
  sample: 2048
duration:
  description: Wall time of the measured requests, seconds.
  returned: success
  type: float
  sample: 2.756
ratio:
  description: RV(output_tokens_per_s) divided by O(baseline)'s; null without a baseline.
  returned: always
  type: float
  sample: 1.24
workload:
  description:
    - What was sent (api, stream, requests, concurrency, max_new_tokens, warmup, prompt count), and
      the rate and seed when O(rate) is set; with a workload, its summary (sizes, kinds, its own arrival rate) instead
      of one max_new_tokens.
  returned: always
  type: dict
  sample: {api: generate, stream: true, requests: 16, concurrency: 4, max_new_tokens: 128, warmup: 2, prompts: 16}
step:
  description:
    - With O(slo), the step against the targets - C(rate), C(sent), C(failed), C(meets) (the p99s
      within the targets and the failures within the budget), C(goodput) (requests that met every
      target, a second), C(ttft_p99_ms), C(itl_p99_ms), C(tok_s) and C(accept_length).
  returned: when O(slo) is set and requests were sent
  type: dict
  sample: {rate: 6.0, sent: 120, failed: 0, meets: true, goodput: 5.8, ttft_p99_ms: 1840.2, itl_p99_ms: 41.3,
           tok_s: 702.4, accept_length: 5.2}
summary:
  description: The figures worth keeping (tokens/s, requests/s, latencies, accept length, counts, workload), for records and reports.
  returned: success
  type: dict
  sample: {output_tokens_per_s: 743.2, requests_per_s: 5.81, accept_length: 6.4, errors: 0}
warmup_errors:
  description: Warm-up requests that failed (not counted in RV(errors)).
  returned: success
  type: int
  sample: 0
elapsed:
  description: Seconds the module ran, warm-up included.
  returned: always
  type: float
  sample: 3.9
"""

import json
import ssl
import threading
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.six.moves.http_client import HTTPConnection, HTTPException, HTTPSConnection
from ansible.module_utils.six.moves.urllib.parse import urlsplit
from ansible_collections.inferops.sglang.plugins.module_utils import goodput, workload as traffic
from ansible_collections.inferops.sglang.plugins.module_utils.sglang_bench import (
    APIS, PROMPTS, auth_headers, chunk_tokens, endpoint, ratio, request_body, sse_payload, summarize,
)


SUMMARY_KEYS = ("output_tokens_per_s", "requests_per_s", "ttft_p50", "ttft_p95", "itl_p50", "itl_p95",
                "latency_p50", "accept_length", "completed", "errors", "workload")


def error_text(status, reason, raw):
    """SGLang's error message from an error body ({"error": {"message"}}, {"detail"} or text)."""
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        body = raw.decode("utf-8", "replace").strip()[:200] if raw else None
    if isinstance(body, dict):
        err = body.get("error")
        body = (err.get("message") if isinstance(err, dict) else err) or body.get("detail")
    return "HTTP %d: %s" % (status, body or reason)


class Client:
    """The load generator. Plain http.client with one connection per request: open_url builds
    a TLS context on every call (about 20 ms), which would count as the server's latency."""

    def __init__(self, params):
        self.params = params
        parts = urlsplit(params["url"].rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("url must be http(s)://host[:port], got %r" % params["url"])
        self.scheme, self.netloc = parts.scheme, parts.netloc
        self.path = parts.path + endpoint(params["api"])
        self.url = "%s://%s%s" % (parts.scheme, parts.netloc, self.path)
        self.headers = auth_headers(params["headers"], params["api_key"])
        self.headers["Content-Type"] = "application/json"
        self.context = None
        if parts.scheme == "https":
            self.context = ssl.create_default_context()
            if not params["validate_certs"]:
                self.context.check_hostname = False
                self.context.verify_mode = ssl.CERT_NONE

    def connect(self):
        timeout = self.params["request_timeout"]
        if self.scheme == "https":
            return HTTPSConnection(self.netloc, timeout=timeout, context=self.context)
        return HTTPConnection(self.netloc, timeout=timeout)

    def one(self, item, due=None):
        """Send one request, an item (prompt, max_new_tokens), and time it from when it was due
        (now, unless given); never raises."""
        params, api = self.params, self.params["api"]
        body = json.dumps(request_body(api, item[0], item[1], params["stream"], params["model"]))
        record = {"ok": False, "tokens": 0, "ttft": None, "itl": [], "latency": None, "accept_length": None,
                  "error": None}
        started = time.monotonic() if due is None else due
        conn = self.connect()
        try:
            conn.request("POST", self.path, body=body.encode("utf-8"), headers=self.headers)
            resp = conn.getresponse()
            if resp.status >= 400:
                record["error"] = "%s from %s" % (error_text(resp.status, resp.reason, resp.read()), endpoint(api))
                return record
            if params["stream"]:
                self.read_stream(resp, record, started)
            else:
                record["tokens"], record["accept_length"] = chunk_tokens(api, json.loads(resp.read()), 0)
        except (HTTPException, OSError, ValueError) as exc:
            record["error"] = "%s: %s" % (endpoint(api), exc)
            return record
        finally:
            conn.close()
        record["latency"] = time.monotonic() - started
        record["ok"] = record["tokens"] > 0
        if not record["ok"]:
            record["error"] = "%s answered without any output tokens" % endpoint(api)
        return record

    def read_stream(self, resp, record, started):
        api, last = self.params["api"], None
        for line in resp:
            payload = sse_payload(line)
            if payload is None:
                continue
            if "error" in payload:
                raise ValueError(payload["error"].get("message", payload["error"])
                                 if isinstance(payload["error"], dict) else payload["error"])
            tokens, accept = chunk_tokens(api, payload, record["tokens"])
            if tokens > record["tokens"]:
                now = time.monotonic()
                if last is None:
                    record["ttft"] = now - started
                else:
                    record["itl"].append(now - last)
                last = now
                record["tokens"] = tokens
            if accept is not None:
                record["accept_length"] = accept

    def run(self, items, concurrency):
        """Send the items with `concurrency` in flight; the records and the wall time."""
        records, lock, queue = [], threading.Lock(), list(items)

        def worker():
            while True:
                with lock:
                    if not queue:
                        return
                    item = queue.pop(0)
                record = self.one(item)
                with lock:
                    records.append(record)

        started = time.monotonic()
        threads = [threading.Thread(target=worker) for dummy in range(max(1, min(concurrency, len(items))))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return records, time.monotonic() - started

    def run_at(self, items, moments, concurrency):
        """Send each item when it is due (`moments`, seconds from now), whatever is in flight, at
        most `concurrency` at once; the records and the wall time."""
        records, lock, slots, threads = [], threading.Lock(), threading.BoundedSemaphore(concurrency), []

        def send(item, due):
            try:
                record = self.one(item, due)
            finally:
                slots.release()
            with lock:
                records.append(record)

        started = time.monotonic()
        for item, moment in zip(items, moments):
            due = started + moment
            if due > time.monotonic():
                time.sleep(due - time.monotonic())
            slots.acquire()
            threads.append(threading.Thread(target=send, args=(item, due)))
            threads[-1].start()
        for thread in threads:
            thread.join()
        return records, time.monotonic() - started


def requests_of(params):
    """The requests to send, each (prompt, max_new_tokens, due moment or None), the warm-up's and
    what the result says of them; or a problem to fail with."""
    if params["workload"] is None:
        prompts = params["prompts"] or list(PROMPTS)
        if not all(prompt.strip() for prompt in prompts):
            return None, "prompts must not be empty"
        asked = [{"prompt": prompt, "max_new_tokens": params["max_new_tokens"], "arrival": None} for prompt in prompts]
        said = {"max_new_tokens": params["max_new_tokens"], "prompts": len(prompts)}
    else:
        asked, problems = [], []
        for index, entry in enumerate(params["workload"]):
            request, problem = traffic.request_of(entry)
            if problem:
                problems.append("workload[%d]: %s" % (index, problem))
            elif request:
                asked.append(request)
        if problems or not asked:
            return None, "; ".join(problems[:traffic.MAX_PROBLEMS]) or "workload holds no request"
        said = traffic.summary(asked)
    count = params["requests"] or (len(asked) if params["workload"] is not None else 16)
    if asked[0]["arrival"] is not None and count > len(asked):
        # (Cycled, the user's own times would run backwards at each new round.)
        return None, "requests (%d) is more than the workload's %d: a workload with arrivals is sent once, " \
            "in its own order" % (count, len(asked))
    chosen = [asked[i % len(asked)] for i in range(count)]
    items = [(traffic.prompt_of(request), request["max_new_tokens"]) for request in chosen]
    warm = [items[i % len(items)] for i in range(params["warmup"])]
    moments = traffic.schedule(chosen, params["rate"], params["seed"])
    return (items, warm, moments, said), None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type="str", default="http://127.0.0.1:30000"),
            api=dict(type="str", choices=list(APIS), default="generate"),
            stream=dict(type="bool", default=True),
            requests=dict(type="int"),
            concurrency=dict(type="int", default=4),
            rate=dict(type="float"),
            seed=dict(type="int", default=0),
            workload=dict(type="list", elements="dict"),
            workload_file=dict(type="path"),
            slo=dict(type="dict"),
            max_new_tokens=dict(type="int", default=128, no_log=False),
            warmup=dict(type="int", default=2),
            model=dict(type="str", default="default"),
            prompts=dict(type="list", elements="str"),
            api_key=dict(type="str", no_log=True),
            headers=dict(type="dict", default={}),
            validate_certs=dict(type="bool", default=True),
            request_timeout=dict(type="float", default=300),
            max_errors=dict(type="int", default=0),
            baseline=dict(type="dict"),
        ),
        mutually_exclusive=[("prompts", "workload", "workload_file")],
        supports_check_mode=True,
    )
    params, started = module.params, time.monotonic()
    # (What a recorded baseline is compared by: a setting left out stays out, rate and seed too.)
    workload = {"api": params["api"], "stream": params["stream"], "requests": params["requests"],
                "concurrency": params["concurrency"], "warmup": params["warmup"]}
    if params["rate"] is not None:
        workload.update(rate=params["rate"], seed=params["seed"])
    base = dict(changed=False, workload=workload, ratio=None)
    if params["workload_file"]:
        module.fail_json(msg="workload_file is read on the controller by the sglang_bench action: call the module "
                         "as inferops.sglang.sglang_bench, not through a plain module run", elapsed=0.0, **base)
    problems = ["%s must be at least 1" % name for name in ("requests", "concurrency", "max_new_tokens")
                if params[name] is not None and params[name] < 1]
    problems += ["warmup must be at least 0"] if params["warmup"] < 0 else []
    problems += ["rate must be above 0 requests a second"] if params["rate"] is not None and params["rate"] <= 0 else []
    problems += goodput.slo_problems(params["slo"], "slo") if params["slo"] is not None else []
    sending, problem = requests_of(params) if not problems else (None, None)
    problems += [problem] if problem else []
    if problems:
        module.fail_json(msg="; ".join(problems), elapsed=0.0, **base)
    items, warm, moments, said = sending
    workload.update(said, requests=len(items))
    if module.check_mode:
        module.exit_json(skipped_in_check_mode=True, elapsed=0.0, **base)

    try:
        client = Client(params)
    except ValueError as exc:
        module.fail_json(msg=str(exc), elapsed=0.0, **base)
    warm, dummy = client.run(warm, params["concurrency"])
    if moments is None:
        measured, wall = client.run(items, params["concurrency"])
    else:
        measured, wall = client.run_at(items, moments, params["concurrency"])
    result = summarize(measured, wall)
    result.update(changed=False, workload=workload)
    if params["slo"] is not None:
        result["step"] = goodput.step(params["rate"], measured, wall, params["slo"])
    result["ratio"] = ratio(result, params["baseline"])
    result["warmup_errors"] = sum(1 for r in warm if not r["ok"])
    result["elapsed"] = round(time.monotonic() - started, 3)
    result["summary"] = dict((key, result[key]) for key in SUMMARY_KEYS)
    if result["errors"] > params["max_errors"]:
        module.fail_json(msg="%s: %d of %d requests failed (at most %d allowed): %s" % (
            client.url, result["errors"], len(items), params["max_errors"],
            "; ".join(result["error_samples"])), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
