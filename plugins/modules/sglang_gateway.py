#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_gateway
short_description: Take an SGLang worker out of the SGLang Model Gateway's rotation and drain it, or put it back
version_added: "0.1.0"
description:
  - Talks to the SGLang Model Gateway (C(smg), successor of C(sglang-router)) through its worker API.
  - O(state=absent) removes the worker from the gateway's rotation (C(DELETE /workers/{id})), then waits
    until the worker has no request in flight, as the worker itself says (SGLang's C(GET /v1/loads)), at
    most O(drain_timeout) seconds. The gateway's own drain waits a fixed few seconds; this waits for the
    requests. Past the timeout RV(cut) says how many requests a restart now would cut.
  - O(state=present) adds the worker (C(POST /workers)) and waits until the gateway routes to it (its
    entry C(ready) and healthy), at most O(timeout) seconds, failing with the last state the gateway showed.
  - Runs on the controller or any host that reaches both the gateway and the worker.
author:
  - inferops maintainers (@inferops)
options:
  url:
    description: The gateway's base URL (its worker API), for example C(http://198.18.1.1:31000).
    type: str
    required: true
  worker_url:
    description: The worker's URL as the gateway knows it, for example C(http://198.18.1.3:30000).
    type: str
    required: true
  state:
    description: V(absent) (out of rotation, drained) or V(present) (in rotation).
    type: str
    choices: [absent, present]
    required: true
  drain_timeout:
    description: With O(state=absent), seconds to wait at most for the worker's requests in flight to finish.
    type: float
    default: 120
  timeout:
    description: Seconds to wait at most for the gateway to drop or route to the worker.
    type: float
    default: 60
  api_key:
    description: The gateway's admin key (sent as a bearer token), when it has one.
    type: str
  worker_api_key:
    description: The worker's C(--api-key), for its C(/v1/loads).
    type: str
  validate_certs:
    description: Verify TLS certificates.
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    description: Reads the gateway and says what would change; changes nothing.
seealso:
  - module: inferops.sglang.sglang_health
"""

EXAMPLES = r"""
- name: Out of the gateway's rotation, requests in flight finished
  inferops.sglang.sglang_gateway:
    url: http://198.18.1.1:31000
    worker_url: http://198.18.1.3:30000
    state: absent
    drain_timeout: 120
  delegate_to: localhost

- name: Back into rotation once healthy
  inferops.sglang.sglang_gateway:
    url: http://198.18.1.1:31000
    worker_url: http://198.18.1.3:30000
    state: present
  delegate_to: localhost
"""

RETURN = r"""
ansible_facts:
  description:
    - C(sglang_rotation), whether this worker is in the gateway's rotation after the task (not in check
      mode). A rollback takes out only a worker that is in, and puts back one that is out.
  returned: success, not in check mode
  type: dict
  sample: {sglang_rotation: {worker_url: "http://198.18.1.3:30000", in_rotation: false}}
  version_added: 0.3.0
worker:
  description: The gateway's entry for the worker at the end (null when it has none).
  returned: always
  type: dict
  sample: {id: 01a23496-6de9-7142-b5c2-6fcf3cd99e74, url: "http://198.18.1.3:30000", is_healthy: true, status: ready}
in_flight:
  description: With O(state=absent), the worker's requests in flight at the last look (null when it did not answer).
  returned: always
  type: int
  sample: 0
cut:
  description:
    - With O(state=absent), requests still in flight when O(drain_timeout) ran out (0 when drained).
    - Null when the worker never said what it had in flight (for example no C(/v1/loads), or it wants an API key);
      the drain then waited the whole O(drain_timeout), and RV(msg) gives the worker's answer.
  returned: always
  type: int
  sample: 0
drained_in:
  description: With O(state=absent), seconds from the removal until nothing was in flight.
  returned: always
  type: float
  sample: 1.8
msg:
  description: What was done.
  returned: always
  type: str
  sample: "http://198.18.1.3:30000: out of rotation, 0 requests in flight after 1.8 s"
elapsed:
  description: Seconds the module ran.
  returned: always
  type: float
  sample: 2.1
"""

import json
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.urls import open_url
from ansible_collections.inferops.sglang.plugins.module_utils.gateway import (
    ALREADY, NOT_ROUTED, STILL_DRAINED, drain_message, error_text, find_worker, in_flight, in_rotation, put_back,
)

BACKOFF = (0.25, 0.5, 1.0)
UNAUTHORIZED_HINT = " (the worker wants its --api-key: set worker_api_key)"


class Gateway:
    def __init__(self, module):
        self.module, self.params, self.started = module, module.params, time.monotonic()

    def elapsed(self):
        return round(time.monotonic() - self.started, 3)

    def fail(self, msg, **extra):
        self.module.fail_json(msg=msg, elapsed=self.elapsed(), **extra)

    def call(self, method, url, body=None, key=None, allowed=(200, 201, 202, 204)):
        """(status, parsed body); fails with the gateway's own error on anything else."""
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = "Bearer " + key
        try:
            resp = open_url(url, method=method, data=json.dumps(body) if body is not None else None,
                            headers=headers, validate_certs=self.params["validate_certs"], timeout=10)
            status, text = resp.getcode(), resp.read()
        except HTTPError as exc:
            status, text = exc.code, exc.read()
        except (URLError, OSError, ValueError) as exc:
            self.fail("%s %s: cannot reach it: %s" % (method, url, getattr(exc, "reason", exc)))
        try:
            parsed = json.loads(text) if text else None
        except ValueError:
            parsed = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        if status not in allowed:
            self.fail("%s %s: the gateway said %s" % (method, url, error_text(status, parsed)), status=status)
        return status, parsed

    def entry(self):
        _status, listing = self.call("GET", self.params["url"].rstrip("/") + "/workers", key=self.params["api_key"])
        return find_worker(listing, self.params["worker_url"])

    def worker_in_flight(self):
        """(requests the worker says it has in flight, why it said nothing); 0 when nothing
        listens there (nothing can be in flight), None with the evidence when it did not say."""
        url = self.params["worker_url"].rstrip("/") + "/v1/loads?include=core"
        headers = {"Authorization": "Bearer " + self.params["worker_api_key"]} if self.params["worker_api_key"] else {}
        try:
            resp = open_url(url, headers=headers, validate_certs=self.params["validate_certs"], timeout=5)
            count = in_flight(json.loads(resp.read()))
            return count, None if count is not None else "GET %s: no per-rank loads in the answer" % url
        except HTTPError as exc:
            return None, "GET %s: HTTP %s%s" % (url, exc.code, UNAUTHORIZED_HINT if exc.code in (401, 403) else "")
        except (URLError, OSError, ValueError) as exc:
            reason = str(getattr(exc, "reason", exc))
            return (0, None) if "refused" in reason.lower() else (None, "GET %s: %s" % (url, reason))

    def wait(self, done, seconds):
        looks = 0
        deadline = time.monotonic() + seconds
        while True:
            value = done()
            if value or time.monotonic() >= deadline:
                return value
            time.sleep(BACKOFF[min(looks, len(BACKOFF) - 1)])
            looks += 1

    def absent(self):
        worker = self.entry()
        result = dict(changed=worker is not None, worker=worker, in_flight=None, cut=0, drained_in=0.0)
        if self.module.check_mode:
            result["msg"] = "%s: would be taken out of rotation and drained" % self.params["worker_url"]
            return result
        if worker is not None and worker.get("status") != "draining":
            self.call("DELETE", "%s/workers/%s" % (self.params["url"].rstrip("/"), worker["id"]), key=self.params["api_key"])
        removed_at = time.monotonic()
        looks = []

        def drained():
            looks.append(self.worker_in_flight())
            return looks[-1][0] == 0
        self.wait(drained, self.params["drain_timeout"])
        count, unknown = looks[-1]
        result.update(in_flight=count, cut=count, drained_in=round(time.monotonic() - removed_at, 3))
        result["worker"] = self.entry()
        result["msg"] = drain_message(self.params["worker_url"], count, unknown, result["drained_in"],
                                      self.params["drain_timeout"])
        return result

    def add_worker(self):
        """POST /workers; a refusal fails the module with the gateway's own error (so None)."""
        body = {"url": self.params["worker_url"]}
        if self.params["worker_api_key"]:
            body["api_key"] = self.params["worker_api_key"]
        self.call("POST", self.params["url"].rstrip("/") + "/workers", body, key=self.params["api_key"])

    def present(self):
        worker = self.entry()
        if in_rotation(worker):
            return dict(changed=False, worker=worker, in_flight=None, cut=0, drained_in=0.0,
                        msg="%s: in rotation already" % self.params["worker_url"])
        if self.module.check_mode:
            return dict(changed=True, worker=worker, in_flight=None, cut=0, drained_in=0.0,
                        msg="%s: would be put back into rotation" % self.params["worker_url"])
        outcome, last = put_back(self.entry, self.add_worker, lambda done: self.wait(done, self.params["timeout"]),
                                 first=worker)
        if outcome == STILL_DRAINED:
            self.fail("%s: the gateway %s still drains its earlier entry after %s s; last seen: %s"
                      % (self.params["worker_url"], self.params["url"], self.params["timeout"], last), worker=last)
        if outcome == NOT_ROUTED:
            self.fail("%s: added to the gateway %s, but it did not route to it within %s s; last seen: %s"
                      % (self.params["worker_url"], self.params["url"], self.params["timeout"], last), worker=last)
        return dict(changed=outcome != ALREADY, worker=last, in_flight=None, cut=0, drained_in=0.0,
                    msg="%s: %s" % (self.params["worker_url"],
                                    "in rotation already" if outcome == ALREADY else "back in rotation"))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type="str", required=True),
            worker_url=dict(type="str", required=True),
            state=dict(type="str", choices=["absent", "present"], required=True),
            drain_timeout=dict(type="float", default=120),
            timeout=dict(type="float", default=60),
            api_key=dict(type="str", no_log=True),
            worker_api_key=dict(type="str", no_log=True),
            validate_certs=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    gateway = Gateway(module)
    result = gateway.absent() if module.params["state"] == "absent" else gateway.present()
    if not module.check_mode:
        # Public, so a later rollback (the role's handler, rollback.yml) knows whether this run
        # already took the worker out, and puts back only what it took out.
        result["ansible_facts"] = {"sglang_rotation": {"worker_url": module.params["worker_url"],
                                                       "in_rotation": module.params["state"] == "present"}}
    module.exit_json(elapsed=gateway.elapsed(), **result)


if __name__ == "__main__":
    main()
