"""The host's deploy records (module_utils/host_state.py) on a real folder: the known-good
snapshot replaced all at once, restored file by file, found and put back after a snapshot
that stopped between its two renames; and the service-layout comparison as a data table."""
from __future__ import annotations

import json
import os

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import host_state
from ansible_collections.inferops.sglang.plugins.module_utils.host_state import (
    known_good, known_good_dir, layout_drift, put_file, restore_known_good, snapshot_known_good,
)

GID = os.getgid()


def bare(record):
    """A known-good record without the file hashes a snapshot adds to it."""
    return dict((k, v) for k, v in (record or {}).items() if k != "files")


def running(tmp_path, unit="ExecStart=/opt/a/bin/python -m sglang.launch_server\n", env="A=1\n"):
    """The files of a running service, as the deploy hands them to a snapshot."""
    files = {"sglang.service": unit, "sglang.env": env}
    for name, text in files.items():
        (tmp_path / "run").mkdir(exist_ok=True)
        (tmp_path / "run" / name).write_text(text)
    return [str(tmp_path / "run" / name) for name in files]


@pytest.fixture
def state(tmp_path):
    folder = tmp_path / "etc-sglang"
    folder.mkdir()
    return folder


def test_a_snapshot_holds_the_files_and_the_record(tmp_path, state):
    assert snapshot_known_good(str(state), running(tmp_path), {"variant": "nextn"}, GID) is True
    record, files = known_good(str(state))
    assert bare(record) == {"variant": "nextn"} and sorted(files) == ["sglang.env", "sglang.service"]
    assert record["files"] == files, "meta.json names each file it keeps with its hash"
    assert (state / "known-good" / "sglang.service").read_text().startswith("ExecStart=/opt/a/")
    assert oct((state / "known-good" / "sglang.env").stat().st_mode & 0o777) == "0o640"
    assert sorted(os.listdir(state)) == ["known-good"], "no staging or previous copy left behind"


def test_the_same_snapshot_again_changes_nothing_and_check_mode_writes_nothing(tmp_path, state):
    files = running(tmp_path)
    snapshot_known_good(str(state), files, {"variant": "nextn"}, GID)
    before = (state / "known-good").stat().st_ino
    assert snapshot_known_good(str(state), files, {"variant": "nextn"}, GID) is False
    assert (state / "known-good").stat().st_ino == before
    assert snapshot_known_good(str(state), files, {"variant": "ddtree"}, GID, check=True) is True
    assert bare(known_good(str(state))[0]) == {"variant": "nextn"}


def test_a_new_snapshot_replaces_the_old_one_whole(tmp_path, state):
    snapshot_known_good(str(state), running(tmp_path), {"variant": "nextn"}, GID)
    snapshot_known_good(str(state), running(tmp_path, unit="ExecStart=/opt/b\n")[:1], {"variant": "dflash"}, GID)
    record, files = known_good(str(state))
    assert bare(record) == {"variant": "dflash"} and list(files) == ["sglang.service"], "no file of the older snapshot left"


def interrupted_between_renames(tmp_path, state):
    """What a host that stopped after `known-good -> known-good.prev` and before
    `known-good.new -> known-good` holds: the old snapshot in .prev, the new one staged."""
    snapshot_known_good(str(state), running(tmp_path), {"variant": "nextn"}, GID)
    os.rename(state / "known-good", state / "known-good.prev")
    (state / "known-good.new").mkdir()
    (state / "known-good.new" / "sglang.service").write_text("half written")


def test_an_interrupted_snapshot_still_has_a_complete_known_good(tmp_path, state):
    interrupted_between_renames(tmp_path, state)
    assert known_good_dir(str(state)) == str(state / "known-good.prev")
    assert bare(known_good(str(state))[0]) == {"variant": "nextn"}


def test_the_next_snapshot_puts_the_interrupted_one_right_first(tmp_path, state):
    interrupted_between_renames(tmp_path, state)
    snapshot_known_good(str(state), running(tmp_path, unit="ExecStart=/opt/c\n"), {"variant": "ddtree"}, GID)
    assert sorted(os.listdir(state)) == ["known-good"]
    assert bare(known_good(str(state))[0]) == {"variant": "ddtree"}


def test_restore_puts_the_files_back_and_the_record_as_deployed_json(tmp_path, state):
    snapshot_known_good(str(state), running(tmp_path), {"variant": "nextn", "release": "/opt/a"}, GID)
    unit = tmp_path / "systemd" / "sglang.service"
    unit.parent.mkdir()
    unit.write_text("ExecStart=/opt/broken\n")
    targets = [("sglang.service", str(unit), 0o644, 0, GID), ("sglang.env", str(state / "sglang.env"), 0o640, 0, GID),
               ("secrets.yaml", str(state / "secrets.yaml"), 0o640, 0, GID)]
    would_change = [str(unit), str(state / "sglang.env"), str(state / "deployed.json")]
    assert restore_known_good(str(state), targets, check=True)[1] == would_change
    assert unit.read_text() == "ExecStart=/opt/broken\n", "check mode writes nothing"
    record, changed = restore_known_good(str(state), targets)
    assert bare(record) == {"variant": "nextn", "release": "/opt/a"} and len(changed) == 3
    assert unit.read_text().startswith("ExecStart=/opt/a/")
    assert json.loads((state / "deployed.json").read_text()) == record
    assert not (state / "secrets.yaml").exists(), "a file the snapshot does not hold is left alone"
    assert restore_known_good(str(state), targets) == (record, []), "restoring again changes nothing"


def test_restore_after_an_interrupted_snapshot_uses_the_complete_one(tmp_path, state):
    interrupted_between_renames(tmp_path, state)
    dest = tmp_path / "sglang.service"
    record, _changed = restore_known_good(str(state), [("sglang.service", str(dest), 0o644, 0, GID)])
    assert bare(record) == {"variant": "nextn"} and dest.read_text().startswith("ExecStart=/opt/a/")
    assert sorted(os.listdir(state)) == ["deployed.json", "known-good"]


@pytest.mark.parametrize("files, names", [
    (["/etc/systemd/system/sglang.service", "/etc/sglang/sglang.env"], ["sglang.service", "sglang.env"]),
    (["/etc/systemd/system/q.service.d/override.conf", "/etc/q/override.conf"], ["override.conf", "1-override.conf"]),
    (["/etc/q/meta.json"], ["0-meta.json"]),
], ids=["base names", "two files of one name", "a file named like the record"])
def test_stored_names(files, names):
    assert host_state.stored_names(files) == names


def test_an_adopted_units_files_come_back_where_they_were_with_their_modes(tmp_path, state):
    unit, env = tmp_path / "sglang-qwen.service", tmp_path / "default" / "qwen"
    env.parent.mkdir()
    unit.write_text("[Service]\nEnvironmentFile=%s\nExecStart=/opt/v/bin/python -m sglang.launch_server\n" % env)
    env.write_bytes(b"HF_TOKEN=x\n\x00odd bytes kept\n")
    os.chmod(env, 0o600)
    before = {unit: unit.read_bytes(), env: env.read_bytes()}
    snapshot_known_good(str(state), [str(unit), str(env)], {"adopted": {"unit": "sglang-qwen.service"}}, GID)
    unit.write_text("edited by hand later\n")
    env.unlink()
    targets = [("sglang-qwen.service", str(unit), 0o644, os.getuid(), GID), ("qwen", str(env), 0o600, os.getuid(), GID)]
    _record, changed = restore_known_good(str(state), targets)
    assert {unit: unit.read_bytes(), env: env.read_bytes()} == before and str(env) in changed
    assert oct(env.stat().st_mode & 0o777) == "0o600"


def test_no_known_good_restores_nothing(tmp_path, state):
    assert restore_known_good(str(state), [("sglang.service", str(tmp_path / "u"), 0o644, 0, GID)]) == (None, [])
    assert known_good(str(state)) == (None, {})


def test_put_file_writes_only_what_differs(tmp_path):
    path = str(tmp_path / "deployed.json")
    assert put_file(path, b"{}", 0o644, 0, GID) is True
    assert put_file(path, b"{}", 0o644, 0, GID) is False
    assert put_file(path, b"{}", 0o600, 0, GID) is True, "a mode change is a change"
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"


WANTED = {"user": "sglang", "group": "sglang", "home": "/var/lib/sglang", "shell": "/usr/sbin/nologin",
          "dirs": [{"path": "/etc/sglang", "owner": "root", "group": "sglang", "mode": "0750"}]}
GOOD_USER = {"group": "sglang", "home": "/var/lib/sglang", "shell": "/usr/sbin/nologin"}
GOOD_DIR = {"mode": "0750", "owner": "root", "group": "sglang"}

LAYOUTS = [
    # (id, observed, expected drift)
    ("all there", {"user": GOOD_USER, "group": True, "dirs": {"/etc/sglang": GOOD_DIR}}, []),
    ("first deploy", {"user": None, "group": False, "dirs": {"/etc/sglang": None}},
     ["group sglang: missing", "user sglang: missing", "/etc/sglang: missing"]),
    ("someone opened the state folder", {"user": GOOD_USER, "group": True,
                                         "dirs": {"/etc/sglang": dict(GOOD_DIR, mode="0755")}},
     ["/etc/sglang: mode 0755, want 0750"]),
    ("user with a login shell in another group", {"user": dict(GOOD_USER, shell="/bin/bash", group="users"),
                                                  "group": True, "dirs": {"/etc/sglang": GOOD_DIR}},
     ["user sglang: group users, want sglang", "user sglang: shell /bin/bash, want /usr/sbin/nologin"]),
    ("folder owned by the service user", {"user": GOOD_USER, "group": True,
                                          "dirs": {"/etc/sglang": dict(GOOD_DIR, owner="sglang")}},
     ["/etc/sglang: owner sglang, want root"]),
]


@pytest.mark.parametrize("observed, expected", [c[1:] for c in LAYOUTS], ids=[c[0] for c in LAYOUTS])
def test_layout_drift(observed, expected):
    assert layout_drift(WANTED, observed) == expected


def test_observe_layout_reads_this_machine(tmp_path):
    folder = tmp_path / "state"
    folder.mkdir(mode=0o750)
    folder.chmod(0o750)
    root = host_state.pwd.getpwuid(0).pw_name
    observed = host_state.observe_layout({"user": root, "dirs": [{"path": str(folder)}, {"path": str(tmp_path / "no")}]})
    assert observed["user"]["home"] == host_state.pwd.getpwuid(0).pw_dir
    assert observed["dirs"][str(folder)]["mode"] == "0750" and observed["dirs"][str(tmp_path / "no")] is None


def test_model_configs_parses_each_folders_config_and_names_one_without(tmp_path):
    with_config, without = tmp_path / "m", tmp_path / "draft"
    with_config.mkdir()
    without.mkdir()
    (with_config / "config.json").write_text(json.dumps({"model_type": "qwen3_next"}))
    assert host_state.model_configs([str(with_config), str(without)]) == {
        str(with_config): {"model_type": "qwen3_next"}, str(without): None}
