"""After sglang_service's preflight alone (run twice) on both classes, and once against the
wrong class on the A6000 host (converge.yml asserts its message): nothing was written, and no
deploy lock is held (the preflight alone takes none; the deploy holds it around the preflight)."""
from __future__ import annotations

import pytest

LOCK = "/run/inferops-sglang/deploy.lock"


@pytest.fixture(params=["a6000", "blackwell"])
def host(request):
    return request.getfixturevalue(request.param)


def test_no_lock_is_held(host):
    assert not host.file(LOCK).exists


def test_the_preflight_changed_nothing(host):
    for path in ("/etc/systemd/system/sglang.service", "/etc/sglang", "/opt/sglang", "/var/lib/sglang",
                 LOCK + ".released"):
        assert not host.file(path).exists, path
    assert host.run("id sglang").rc != 0, "no service account: that is the deploy's job"
