"""sglang_link's probe on real sockets (loopback): an answer of any kind is a path; an own
address is one this host can bind."""
from __future__ import annotations

import socket

import pytest

from ansible_collections.inferops.sglang.plugins.modules import sglang_link


def group(addr, face=False):
    return {"name": "g", "nodes": ["a", "b"], "node_rank": 0 if face else 1, "face": face, "rank0": "a",
            "dist_init_addr": addr}


@pytest.fixture
def listener():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    yield sock.getsockname()[1]
    sock.close()


def free_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def test_the_store_listening_is_a_path(listener):
    said = sglang_link.probe(group("127.0.0.1:%d" % listener, face=True), 2)
    assert said == {"reached": True, "listening": True, "local": True, "error": None}


def test_a_refusal_is_a_path_too():
    said = sglang_link.probe(group("127.0.0.1:%d" % free_port()), 2)
    assert said == {"reached": True, "listening": False, "local": None, "error": None}


def test_an_address_of_another_host_is_not_rank_0s_own():
    family, sockaddr = sglang_link.resolve("198.18.0.11:29500")
    assert sglang_link.own_address(family, sockaddr) is False
    assert sglang_link.own_address(*sglang_link.resolve("127.0.0.1:29500")) is True


def test_an_address_that_does_not_parse_is_not_reached():
    said = sglang_link.probe(group("127.0.0.1:notaport"), 2)
    assert said["reached"] is False and said["error"].startswith("cannot resolve it")
