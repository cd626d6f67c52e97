"""Server-argument dicts to argv and to systemd's ExecStart quoting."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils.server_args import (
    ServerArgsError, exec_start, systemd_quote, to_argv,
)


@pytest.mark.parametrize("args, argv", [
    ({"tp_size": 2, "mem_fraction_static": 0.88}, ["--mem-fraction-static", "0.88", "--tp-size", "2"]),
    ({"disable_radix_cache": True, "enable_metrics": False}, ["--disable-radix-cache"]),
    ({"cuda_graph_bs_decode": [1, 2, 4]}, ["--cuda-graph-bs-decode", "1", "2", "4"]),
    ({"api_key": None, "host": "127.0.0.1"}, ["--host", "127.0.0.1"]),
    ({}, []),
])
def test_to_argv(args, argv):
    assert to_argv(args) == argv


@pytest.mark.parametrize("args", [{"Mem-Fraction": 1}, {"tp_size": {"a": 1}}, {"": 1}])
def test_bad_keys_and_values(args):
    with pytest.raises(ServerArgsError):
        to_argv(args)


@pytest.mark.parametrize("word, quoted", [
    ("--tp-size", "--tp-size"),
    ("50%", "50%%"),
    ("$HOME", "$$HOME"),
    ('{"rope_scaling": null}', '"{\\"rope_scaling\\": null}"'),
    ("a b", '"a b"'),
])
def test_systemd_quote(word, quoted):
    assert systemd_quote(word) == quoted


def test_exec_start_joins():
    assert exec_start(["/x/python", "-m", "sglang.launch_server", "--tp-size", "2"]) == \
        "/x/python -m sglang.launch_server --tp-size 2"
