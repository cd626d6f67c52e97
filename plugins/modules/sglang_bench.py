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
      - Measured requests (the prompt set is cycled).
    type: int
    default: 16
  concurrency:
    description:
      - Requests in flight at once.
    type: int
    default: 4
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
  description: What was sent (api, stream, requests, concurrency, max_new_tokens, warmup, prompt count).
  returned: always
  type: dict
  sample: {api: generate, stream: true, requests: 16, concurrency: 4, max_new_tokens: 128, warmup: 2, prompts: 16}
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

    def one(self, prompt):
        """Send one request and time it; never raises."""
        params, api = self.params, self.params["api"]
        body = json.dumps(request_body(api, prompt, params["max_new_tokens"], params["stream"], params["model"]))
        record = {"ok": False, "tokens": 0, "ttft": None, "itl": [], "latency": None, "accept_length": None,
                  "error": None}
        started = time.monotonic()
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

    def run(self, prompts, concurrency):
        """Send the prompts with `concurrency` in flight; the records and the wall time."""
        records, lock, queue = [], threading.Lock(), list(prompts)

        def worker():
            while True:
                with lock:
                    if not queue:
                        return
                    prompt = queue.pop(0)
                record = self.one(prompt)
                with lock:
                    records.append(record)

        started = time.monotonic()
        threads = [threading.Thread(target=worker) for dummy in range(max(1, min(concurrency, len(prompts))))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return records, time.monotonic() - started


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type="str", default="http://127.0.0.1:30000"),
            api=dict(type="str", choices=list(APIS), default="generate"),
            stream=dict(type="bool", default=True),
            requests=dict(type="int", default=16),
            concurrency=dict(type="int", default=4),
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
        supports_check_mode=True,
    )
    params, started = module.params, time.monotonic()
    prompts = params["prompts"] or list(PROMPTS)
    workload = {"api": params["api"], "stream": params["stream"], "requests": params["requests"],
                "concurrency": params["concurrency"], "max_new_tokens": params["max_new_tokens"],
                "warmup": params["warmup"], "prompts": len(prompts)}
    base = dict(changed=False, workload=workload, ratio=None)
    bad = [name for name in ("requests", "concurrency", "max_new_tokens") if params[name] < 1]
    if bad or params["warmup"] < 0 or not all(p.strip() for p in prompts):
        module.fail_json(msg="requests, concurrency and max_new_tokens must be at least 1, warmup at least 0 and "
                         "prompts not empty (got %s)" % workload, elapsed=0.0, **base)
    if module.check_mode:
        module.exit_json(skipped_in_check_mode=True, elapsed=0.0, **base)

    try:
        client = Client(params)
    except ValueError as exc:
        module.fail_json(msg=str(exc), elapsed=0.0, **base)
    warm, dummy = client.run([prompts[i % len(prompts)] for i in range(params["warmup"])], params["concurrency"])
    measured, wall = client.run([prompts[i % len(prompts)] for i in range(params["requests"])],
                                params["concurrency"])
    result = summarize(measured, wall)
    result.update(changed=False, workload=workload)
    result["ratio"] = ratio(result, params["baseline"])
    result["warmup_errors"] = sum(1 for r in warm if not r["ok"])
    result["elapsed"] = round(time.monotonic() - started, 3)
    result["summary"] = dict((key, result[key]) for key in SUMMARY_KEYS)
    if result["errors"] > params["max_errors"]:
        module.fail_json(msg="%s: %d of %d requests failed (at most %d allowed): %s" % (
            client.url, result["errors"], params["requests"], params["max_errors"],
            "; ".join(result["error_samples"])), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
