# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The deploy records an SGLang host keeps under its state folder (/etc/sglang), and the
service account and folders a deploy expects. Pure Python (no Ansible imports).

- known-good/: the unit, env and secrets of the last service proven healthy, and meta.json
  (its deploy record). Replaced as a whole: a new snapshot is staged in known-good.new/, then
  known-good/ becomes known-good.prev/ and known-good.new/ becomes known-good/. A host that
  stops between those two renames keeps a complete snapshot in known-good.prev/, which every
  reader here takes, and the next snapshot or restore puts back first.
- deployed.json: the record of what runs, written once the service is proven healthy.
- rolled-back/<config id>.json: configurations that were rolled back (not retried unless the
  record says `retry`: the configuration was not to blame).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import grp
import hashlib
import json
import os
import pwd
import shutil
import stat
import tempfile

KNOWN_GOOD = "known-good"
META = "meta.json"
DEPLOYED = "deployed.json"
ROLLED_BACK = "rolled-back"
# The files a known-good snapshot of our own unit must hold (an adopted one names its own).
OWN_FILES = ("unit", "sglang.env")


def read_json(path):
    """A JSON record, or None when it is missing or unreadable."""
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def model_configs(paths):
    """Each model folder's parsed config.json (None for a folder without a readable one)."""
    return dict((path, read_json(os.path.join(path, "config.json"))) for path in paths)


def sha1_of(path):
    """SHA-1 of a file's bytes, or None when it is not a regular file."""
    if not os.path.isfile(path):
        return None
    digest = hashlib.sha1()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 16), b""):
            digest.update(block)
    return digest.hexdigest()


def dump_json(record):
    return json.dumps(record, indent=4, sort_keys=True) + "\n"


def modified_since(paths, since):
    """The files among `paths` modified after `since` (epoch seconds): written after the
    service's main process started, so it does not run them yet. None: nothing runs."""
    if since is None:
        return []
    changed = []
    for path in paths:
        try:
            if os.stat(path).st_mtime > since:
                changed.append(path)
        except OSError:
            pass
    return changed


def known_good_dir(state_dir):
    """The complete known-good snapshot's folder, or None when there is none."""
    for name in (KNOWN_GOOD, KNOWN_GOOD + ".prev"):
        path = os.path.join(state_dir, name)
        if os.path.isfile(os.path.join(path, META)):
            return path
    return None


def known_good_dir_any(state_dir):
    """The known-good folder that holds anything at all (a broken one included), or None."""
    for name in (KNOWN_GOOD, KNOWN_GOOD + ".prev"):
        path = os.path.join(state_dir, name)
        if os.path.isdir(path) and os.listdir(path):
            return path
    return None


def known_good(state_dir):
    """(record, {file name: sha1}) of the known-good snapshot; (None, {}) when there is none
    or its meta.json does not parse (known_good_problem() says which)."""
    folder = known_good_dir(state_dir)
    if folder is None:
        return None, {}
    names = sorted(n for n in os.listdir(folder) if n != META)
    return read_json(os.path.join(folder, META)), dict((n, sha1_of(os.path.join(folder, n))) for n in names)


def expected_files(record, unit):
    """{stored name: sha1 or None} a known-good's record says it keeps: the hashes it wrote
    (since 0.3.0), else, for an older record, the names it must hold (hashes unknown)."""
    if isinstance(record.get("files"), dict):
        return dict(record["files"])
    adopted = record.get("adopted")
    if adopted:
        return dict((f.get("name"), f.get("sha1")) for f in adopted.get("files") or ())
    names = [unit, "sglang.env"] + (["secrets.yaml"] if record.get("has_secrets") else [])
    return dict((name, None) for name in names)


def known_good_problem(state_dir, unit):
    """Why the known-good snapshot cannot be trusted, said with what is missing or wrong; None
    when it is complete and true, or when there is none at all (no_known_good says that)."""
    folder = known_good_dir_any(state_dir)
    if folder is None:
        return None
    meta = os.path.join(folder, META)
    if not os.path.isfile(meta):
        return "incomplete: %s has no %s (its deploy record)" % (folder, META)
    record = read_json(meta)
    if not isinstance(record, dict):
        return "corrupt: %s does not parse as a deploy record" % meta
    missing, wrong = [], []
    for name, digest in sorted(expected_files(record, unit).items()):
        have = sha1_of(os.path.join(folder, name))
        if have is None:
            missing.append(name)
        elif digest is not None and have != digest:
            wrong.append(name)
    said = (["missing " + ", ".join(missing)] if missing else []) + \
        (["changed since the snapshot: " + ", ".join(wrong)] if wrong else [])
    if not said:
        return None
    return "%s: %s in %s" % ("incomplete" if missing else "corrupt", "; ".join(said), folder)


def _recover(state_dir):
    """Finish what a snapshot interrupted between its renames left: the complete known-good
    goes back to known-good/, half-staged and superseded copies go."""
    base = os.path.join(state_dir, KNOWN_GOOD)
    if not os.path.isdir(base) and os.path.isdir(base + ".prev"):
        os.rename(base + ".prev", base)
    for leftover in (base + ".new", base + ".prev"):
        shutil.rmtree(leftover, ignore_errors=True)


def _write_file(path, data, mode, uid, gid):
    """Write bytes atomically (a temporary file in the same folder, then rename)."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".inferops-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chown(tmp, uid, gid)
        os.chmod(tmp, mode)
        os.rename(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _same_file(path, data, mode, uid, gid):
    try:
        st = os.stat(path)
        with open(path, "rb") as fh:
            return fh.read() == data and stat.S_IMODE(st.st_mode) == mode and (st.st_uid, st.st_gid) == (uid, gid)
    except OSError:
        return False


def put_file(path, data, mode=0o644, uid=0, gid=0, check=False):
    """Make `path` hold `data` with that mode and owner; True when it had to change."""
    if _same_file(path, data, mode, uid, gid):
        return False
    if not check:
        _write_file(path, data, mode, uid, gid)
    return True


def stored_names(files):
    """The name each file is kept under in the snapshot: its base name, numbered when two
    files share one (an adopted unit's drop-in and environment file may)."""
    names, taken = [], set([META])
    for number, path in enumerate(files):
        name = os.path.basename(path)
        if name in taken:
            name = "%d-%s" % (number, name)
        taken.add(name)
        names.append(name)
    return names


def snapshot_known_good(state_dir, files, record, gid, check=False):
    """Make `files` (the running unit, env, secrets; or an adopted unit's files) and `record`
    the known-good snapshot, all at once. True when the snapshot changed."""
    wanted = dict((name, _read_bytes(f)) for name, f in zip(stored_names(files), files))
    # meta.json names every file it keeps with its hash: a restore checks them before trusting them.
    record = dict(record, files=dict((name, hashlib.sha1(data).hexdigest()) for name, data in wanted.items()))
    wanted[META] = dump_json(record).encode("utf-8")
    folder = known_good_dir(state_dir)
    if folder is not None and _folder_holds(folder, wanted):
        return False
    if check:
        return True
    _recover(state_dir)
    base = os.path.join(state_dir, KNOWN_GOOD)
    stage = base + ".new"
    os.mkdir(stage, 0o750)
    os.chown(stage, 0, gid)
    for name, data in wanted.items():
        _write_file(os.path.join(stage, name), data, 0o644 if name == META else 0o640, 0, gid)
    if os.path.isdir(base):
        os.rename(base, base + ".prev")
    os.rename(stage, base)
    shutil.rmtree(base + ".prev", ignore_errors=True)
    return True


def _read_bytes(path):
    with open(path, "rb") as fh:
        return fh.read()


def _folder_holds(folder, wanted):
    present = set(os.listdir(folder))
    if present != set(wanted):
        return False
    return all(_read_bytes(os.path.join(folder, name)) == data for name, data in wanted.items())


def restore_known_good(state_dir, targets, check=False):
    """Put the known-good snapshot's files back where the service reads them, and its
    record back as deployed.json. `targets`: (file name, destination, mode, uid, gid);
    a target the snapshot does not hold is left alone (a known-good without secrets).
    Returns (record or None when there is no snapshot, destinations that changed)."""
    folder = known_good_dir(state_dir)
    if folder is None:
        return None, []
    if not check:
        _recover(state_dir)
        folder = known_good_dir(state_dir)
    record = read_json(os.path.join(folder, META))
    changed = []
    for name, dest, mode, uid, gid in targets:
        source = os.path.join(folder, name)
        if os.path.isfile(source) and put_file(dest, _read_bytes(source), mode, uid, gid, check):
            changed.append(dest)
    deployed = os.path.join(state_dir, DEPLOYED)
    if put_file(deployed, dump_json(record).encode("utf-8"), 0o644, 0, 0, check):
        changed.append(deployed)
    return record, changed


def service_files(unit_dir, unit, state_dir, gid):
    """(config key, path, mode, uid, gid) of the files the service reads."""
    return [("unit", os.path.join(unit_dir, unit), 0o644, 0, 0),
            ("env", os.path.join(state_dir, "sglang.env"), 0o640, 0, gid),
            ("secrets", os.path.join(state_dir, "secrets.yaml"), 0o640, 0, gid)]


def restore_entries(unit_dir, unit, state_dir, gid, record):
    """(kind, stored name, path, mode, uid, gid) of each file the known-good puts back: an
    adopted unit's own files where they were, with their modes and owners; else our unit,
    env and (with a known-good that had one) secrets."""
    adopted = (record or {}).get("adopted")
    if adopted:
        return [(f["kind"], f["name"], f["path"], int(str(f["mode"]), 8), int(f["uid"]), int(f["gid"]))
                for f in adopted["files"]]
    return [(name, os.path.basename(path), path, mode, uid, file_gid)
            for name, path, mode, uid, file_gid in service_files(unit_dir, unit, state_dir, gid)
            if name != "secrets" or (record or {}).get("has_secrets")]


def rolled_back_path(state_dir, config_id):
    return os.path.join(state_dir, ROLLED_BACK, config_id + ".json")


def _user(name):
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return None
    try:
        group = grp.getgrgid(entry.pw_gid).gr_name
    except KeyError:
        group = str(entry.pw_gid)
    return {"group": group, "home": entry.pw_dir, "shell": entry.pw_shell}


def _group_exists(name):
    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


def _owner_names(st):
    def name(lookup, ident, attr):
        try:
            return getattr(lookup(ident), attr)
        except KeyError:
            return str(ident)
    return name(pwd.getpwuid, st.st_uid, "pw_name"), name(grp.getgrgid, st.st_gid, "gr_name")


def observe_layout(wanted):
    """What the host has of the wanted layout: the account (None when missing), whether the
    group exists, and each folder's mode and owner (None when missing or not a folder)."""
    dirs = {}
    for entry in wanted.get("dirs") or []:
        try:
            st = os.stat(entry["path"])
        except OSError:
            st = None
        if st is None or not stat.S_ISDIR(st.st_mode):
            dirs[entry["path"]] = None
            continue
        owner, group = _owner_names(st)
        dirs[entry["path"]] = {"mode": "%04o" % stat.S_IMODE(st.st_mode), "owner": owner, "group": group}
    return {"user": _user(wanted["user"]) if wanted.get("user") else None,
            "group": _group_exists(wanted["group"]) if wanted.get("group") else None, "dirs": dirs}


def layout_drift(wanted, observed):
    """What differs between the wanted service account and folders and what the host has,
    one readable line per difference; empty when the host already has exactly that."""
    drift = []
    if wanted.get("group") and not observed["group"]:
        drift.append("group %s: missing" % wanted["group"])
    if wanted.get("user"):
        have = observed["user"]
        if have is None:
            drift.append("user %s: missing" % wanted["user"])
        else:
            for key in ("group", "home", "shell"):
                if wanted.get(key) is not None and have[key] != wanted[key]:
                    drift.append("user %s: %s %s, want %s" % (wanted["user"], key, have[key], wanted[key]))
    for entry in wanted.get("dirs") or []:
        have = observed["dirs"].get(entry["path"])
        if have is None:
            drift.append("%s: missing" % entry["path"])
            continue
        for key in ("mode", "owner", "group"):
            if entry.get(key) is not None and have[key] != str(entry[key]):
                drift.append("%s: %s %s, want %s" % (entry["path"], key, have[key], entry[key]))
    return drift
