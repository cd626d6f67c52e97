"""After gpu_preflight alone (run twice) on both classes, and once against the wrong class on
the A6000 host (converge.yml asserts its message): nothing but the lock's release mark was
written, and the lock is free for the next deploy."""
from __future__ import annotations

import pytest

LOCK = "/run/inferops-sglang/deploy.lock"


@pytest.fixture(params=["a6000", "blackwell"])
def host(request):
    return request.getfixturevalue(request.param)


def test_the_lock_was_taken_and_released(host):
    assert not host.file(LOCK).exists
    assert host.file(LOCK + ".released").is_file, "releasing marks the time for the next run's read"


def test_the_preflight_changed_nothing_else(host):
    for path in ("/etc/systemd/system/sglang.service", "/etc/sglang", "/opt/sglang", "/var/lib/sglang"):
        assert not host.file(path).exists, path
    assert host.run("id sglang").rc != 0, "no service account yet: that is the service role's job"
