"""Which address sglang_facts probes: the one deployed.json records for the running server."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.sglang.plugins.modules.sglang_facts import recorded_url

DEFAULT = "http://127.0.0.1:30000/health"

CASES = [
    # (deployed.json, expected URL)
    (None, DEFAULT),
    ({}, DEFAULT),
    ({"variant": "nextn"}, DEFAULT),
    ({"server_args": {"host": "127.0.0.1", "port": 30000}}, DEFAULT),
    ({"server_args": {"host": "127.0.0.1", "port": 30001}}, "http://127.0.0.1:30001/health"),
    ({"server_args": {"host": "0.0.0.0", "port": 8000}}, "http://0.0.0.0:8000/health"),
    ({"server_args": {"port": 8000}}, "http://127.0.0.1:8000/health"),
    ({"server_args": {"host": "::1", "port": 8000}}, "http://[::1]:8000/health"),
    ({"server_args": {"host": "127.0.0.1", "port": None}}, DEFAULT),
]


@pytest.mark.parametrize("deployed, expected", CASES)
def test_the_running_server_is_probed_where_it_was_deployed(deployed, expected):
    assert recorded_url(DEFAULT, deployed) == expected


def test_scheme_and_path_are_kept():
    assert recorded_url("https://127.0.0.1:1/health_generate?x=1", {"server_args": {"host": "h", "port": 2}}) \
        == "https://h:2/health_generate?x=1"
