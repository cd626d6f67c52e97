"""The playbooks against the lab, as an operator runs them: a kept DDTree deploy, idempotence,
check mode, the deploy lock, a patch that does not apply, the git source, rollback.yml and bad
input. (The seed story is the fault matrix's first rows, and its detection time test_sglang_health's.)"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from tests.integration.ansible_run import BIN, REPO, run_playbook
from tests.integration.deploying import REPORTS, STATE, UNIT, deploy, healthy, invocation, recap, report
from tests.integration.labhost import labctl


def test_ct200_ddtree_is_kept_idempotent_and_check_mode_changes_nothing(fresh, ct200):
    assert deploy("deploy_nextn", ct200).returncode == 0
    kept = deploy("deploy_ddtree", ct200)
    assert kept.returncode == 0, kept.stdout[-3000:]
    assert report(ct200)["outcome"] == "deployed" and "--speculative-algorithm DDTREE" in ct200.run(["cat", UNIT]).stdout
    assert json.loads(ct200.run(["cat", "/etc/sglang/known-good/meta.json"]).stdout)["variant"] == "nextn"
    runs_as_its_own_user_with_the_class_envelope_and_never_shows_the_key(ct200, "blackwell")

    before = invocation(ct200)
    again = deploy("deploy_ddtree", ct200)
    assert again.returncode == 0 and recap(again, ct200)["changed"] == "0", again.stdout[-2000:]
    assert invocation(ct200) == before and report(ct200)["outcome"] == "unchanged"

    unit, last = ct200.run(["cat", UNIT]).stdout, report(ct200)
    check = run_playbook("playbooks/deploy.yml", limit="ct200", extra_vars={"sglang_variant": "dflash"},
                         check_diff=True)
    assert check.returncode == 0, check.stdout[-3000:]
    # What the deploy would do has a report of its own; the last deploy's stays the host's latest.
    assert report(ct200) == last and (REPORTS / "ct200" / "check.json").is_file()
    diff = check.stdout.splitlines()
    assert any(l.startswith("-ExecStart=") and "DDTREE" in l for l in diff), check.stdout[-3000:]
    assert any(l.startswith("+ExecStart=") and "--speculative-algorithm DFLASH" in l for l in diff)
    assert ct200.run(["cat", UNIT]).stdout == unit and invocation(ct200) == before


API_KEY = "lab-api-key-not-secret"   # inventory/lab/group_vars/sglang_hosts.yml
FLAGS = {"tp_size": "--tp-size", "mem_fraction_static": "--mem-fraction-static", "context_length": "--context-length",
         "max_running_requests": "--max-running-requests", "chunked_prefill_size": "--chunked-prefill-size",
         "cuda_graph_max_bs_decode": "--cuda-graph-max-bs-decode", "attention_backend": "--attention-backend"}


def runs_as_its_own_user_with_the_class_envelope_and_never_shows_the_key(host, cls):
    """The service's main process runs as the service user with the class's production envelope
    (the lab's inventory has production's); the API key is in no unit and no process's arguments,
    and its secrets file is root's and the service group's only."""
    envelope = yaml.safe_load((REPO / "inventory" / "production" / "group_vars" / ("%s.yml" % cls)).read_text())[
        "sglang_envelope"]
    unit = host.run(["cat", UNIT]).stdout
    exec_start = next(line for line in unit.splitlines() if line.startswith("ExecStart="))
    for key, value in envelope.items():
        assert "%s %s" % (FLAGS[key], value) in exec_start, (key, exec_start)
    shown = host.show("sglang.service", "User", "MainPID")
    assert shown["User"] == "sglang", shown
    assert host.run(["ps", "-o", "user=", "-p", shown["MainPID"]]).stdout.strip() == "sglang"
    assert API_KEY not in unit and API_KEY not in host.run(["ps", "-eo", "args"]).stdout
    assert host.run(["stat", "-c", "%a %U %G", STATE + "secrets.yaml"]).stdout.split() == ["640", "root", "sglang"]


def sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def plant_lock(host, pid, run_id=None, age=0, path="/run/inferops-sglang/deploy.lock"):
    host.put(path, json.dumps({
        "controller": os.uname().nodename, "user": "alice", "pid": pid, "playbook": "deploy_ddtree.yml",
        "run_id": run_id or "%s:%d:x" % (os.uname().nodename, pid), "since": "2026-11-30T18:00:00Z",
        "taken": time.time() - age}))


def test_second_deploy_on_a_locked_host_is_refused_at_once(fresh, ct129):
    holder = subprocess.Popen(["sleep", "120"])
    try:
        with open("/proc/%d/stat" % holder.pid) as fh:
            start = fh.read().rsplit(")", 1)[1].split()[19]
        plant_lock(ct129, holder.pid, run_id="%s:%d:%s" % (os.uname().nodename, holder.pid, start))
        started = time.monotonic()
        proc = deploy("deploy_nextn", ct129)
        assert proc.returncode != 0 and time.monotonic() - started < 30
        assert "ct129 is locked by another deploy: alice@" in proc.stdout
        assert "pid %d" % holder.pid in proc.stdout and "Wait for it to finish" in proc.stdout
        broken = deploy("deploy_nextn", ct129, sglang_break_lock=True)
        assert broken.returncode != 0 and "not breaking a live lock" in broken.stdout
        assert "alice" in ct129.run(["cat", "/run/inferops-sglang/deploy.lock"]).stdout, "a live lock stays"
    finally:
        holder.kill()
        holder.wait()


def test_rollback_takes_the_deploys_lock_at_its_custom_path(fresh, ct129):
    # (Nothing deployed: the lock is the rollback's first step, and without it the rollback would
    # fail on the missing known-good instead.)
    custom = "/run/inferops-sglang/custom.lock"
    holder = subprocess.Popen(["sleep", "120"])
    try:
        with open("/proc/%d/stat" % holder.pid) as fh:
            start = fh.read().rsplit(")", 1)[1].split()[19]
        plant_lock(ct129, holder.pid, run_id="%s:%d:%s" % (os.uname().nodename, holder.pid, start), path=custom)
        proc = run_playbook("playbooks/rollback.yml", limit="ct129", extra_vars={"sglang_lock_path": custom})
        assert proc.returncode != 0 and "ct129 is locked by another deploy: alice@" in proc.stdout, proc.stdout[-2000:]
    finally:
        holder.kill()
        holder.wait()


def test_stale_lock_is_named_and_broken_only_when_asked(fresh, ct129):
    dead = subprocess.Popen(["true"])
    dead.wait()
    plant_lock(ct129, dead.pid)
    proc = deploy("deploy_nextn", ct129)
    assert proc.returncode != 0 and "the lock is stale" in proc.stdout
    ok = deploy("deploy_nextn", ct129, sglang_break_lock=True)
    assert ok.returncode == 0, ok.stdout[-3000:]
    assert ct129.run("test -e /run/inferops-sglang/deploy.lock", check=False).returncode == 1, "released"


def test_patch_that_does_not_apply_changes_nothing(fresh, ct129, tmp_path):
    assert deploy("deploy_nextn", ct129).returncode == 0
    before, releases = invocation(ct129), ct129.run("ls /opt/sglang/releases").stdout
    bad = tmp_path / "0003-does-not-apply.patch"
    bad.write_text("--- a/sglang/srt/server_args.py\n+++ b/sglang/srt/server_args.py\n@@ -1,3 +1,3 @@\n"
                   "-this line is not in server_args.py\n+so this hunk is rejected\n context\n context\n")
    sha = sha256(bad)
    series = [{"file": str(p), "sha256": sha256(p)}
              for p in sorted((REPO / "files" / "patches" / "sglang-0.5.23-ddtree").glob("*.patch"))]
    proc = deploy("deploy_nextn", ct129, sglang_build_patches=series + [{"file": str(bad), "sha256": sha}])
    assert proc.returncode != 0
    assert "PATCH FAILED: 002-0003-does-not-apply.patch" in proc.stdout, proc.stdout[-3000:]
    assert "Hunk #1 FAILED" in proc.stdout and "rejected hunks" in proc.stdout
    assert ct129.run("ls /opt/sglang/releases").stdout == releases, "no half-built release left"
    assert invocation(ct129) == before and healthy(ct129)

    wrong = deploy("deploy_nextn", ct129, sglang_build_patches=[{"file": str(bad), "sha256": "0" * 64}])
    assert wrong.returncode != 0 and "has sha256 %s, not the listed" % sha in wrong.stdout


def make_git_source(host):
    host.run(
        "rm -rf /srv/git /tmp/sglang-src && mkdir -p /tmp/sglang-src/python/sglang && cd /tmp/sglang-src && "
        "printf '[build-system]\\nrequires=[\"setuptools\"]\\nbuild-backend=\"setuptools.build_meta\"\\n"
        "[project]\\nname=\"sglang\"\\nversion=\"0.5.23\"\\n' > python/pyproject.toml && "
        "echo '__version__ = \"0.5.23\"' > python/sglang/__init__.py && git init -q -b main && "
        "git -c user.email=a@b -c user.name=lab add -A && git -c user.email=a@b -c user.name=lab commit -qm v && "
        "git tag v0.5.23 && git clone -q --bare /tmp/sglang-src /srv/git/sglang.git")


GIT_BUILD = {"sglang_build_source": "git", "sglang_build_git_url": "file:///srv/git/sglang.git",
             "sglang_build_git_ref": "v0.5.23", "sglang_build_patches": [], "sglang_build_extra_packages": [],
             "sglang_build_pip_args": ["--no-index"]}


def test_git_source_from_a_local_bare_repository(fresh, ct129, tmp_path):
    make_git_source(ct129)
    playbook = tmp_path / "build.yml"
    playbook.write_text("- hosts: ct129\n  gather_facts: false\n  roles:\n    - role: inferops.sglang.sglang_build\n")
    proc = run_playbook(str(playbook), extra_vars={
        "sglang_build_source": "git", "sglang_build_git_url": "file:///srv/git/sglang.git",
        "sglang_build_git_ref": "v0.5.23", "sglang_build_patches": [], "sglang_build_extra_packages": [],
        "sglang_build_pip_args": ["--no-index"], "sglang_build_keep": 5})
    assert proc.returncode == 0, proc.stdout[-3000:]
    commit = ct129.run(["git", "ls-remote", "file:///srv/git/sglang.git", "v0.5.23"]).stdout.split()[0]
    found = ct129.run("grep -l '\"commit\": \"%s\"' /opt/sglang/releases/*/.release.json" % commit).stdout.split()
    assert len(found) == 1, "one release, named for the resolved commit"
    release = found[0].rsplit("/", 1)[0]
    rel = json.loads(ct129.run(["cat", found[0]]).stdout)
    assert rel["source"] == "git" and rel["patches"] == [] and rel["install"]["git"]["commit"] == commit
    assert ct129.run([release + "/bin/python", "-c",
                      "import sglang; print(sglang.__version__)"]).stdout.strip() == "0.5.23"
    again = run_playbook(str(playbook), extra_vars={
        "sglang_build_source": "git", "sglang_build_git_url": "file:///srv/git/sglang.git",
        "sglang_build_git_ref": "v0.5.23", "sglang_build_patches": [], "sglang_build_extra_packages": [],
        "sglang_build_pip_args": ["--no-index"], "sglang_build_keep": 5})
    assert again.returncode == 0 and recap(again, ct129)["changed"] == "0", "re-running a build is a no-op"
    # A new commit on the ref is another release (the ref is resolved, not trusted by name).
    ct129.run("cd /tmp/sglang-src && echo '# next' >> python/sglang/__init__.py && git -c user.email=a@b "
              "-c user.name=lab commit -qam next && git tag -f v0.5.23 >/dev/null && "
              "git push -q --force /srv/git/sglang.git refs/tags/v0.5.23")
    moved = run_playbook(str(playbook), extra_vars={
        "sglang_build_source": "git", "sglang_build_git_url": "file:///srv/git/sglang.git",
        "sglang_build_git_ref": "v0.5.23", "sglang_build_patches": [], "sglang_build_extra_packages": [],
        "sglang_build_pip_args": ["--no-index"], "sglang_build_keep": 5})
    assert moved.returncode == 0 and recap(moved, ct129)["changed"] != "0", moved.stdout[-2000:]
    new = ct129.run(["git", "ls-remote", "file:///srv/git/sglang.git", "v0.5.23"]).stdout.split()[0]
    assert new != commit
    assert len(ct129.run("grep -l '\"commit\": \"%s\"' /opt/sglang/releases/*/.release.json" % new).stdout.split()) == 1


def test_rollback_playbook_is_a_no_op_on_a_healthy_known_good_and_restores_otherwise(fresh, ct129):
    assert deploy("deploy_nextn", ct129).returncode == 0
    # A manual bad deploy: someone edits the unit by hand to a variant that cannot fit.
    assert deploy("deploy_ddtree", ct129).returncode != 0       # makes NEXTN the known-good
    ct129.run("sed -i 's/--speculative-algorithm NEXTN/--speculative-algorithm DDTREE --speculative-draft-model-path "
              "\\/models\\/Qwen3.6-27B-DFlash --speculative-ddtree-budget 64/; s/--speculative-num-draft-tokens 4/"
              "--speculative-num-draft-tokens 16/' /etc/systemd/system/sglang.service && systemctl daemon-reload && "
              "systemctl restart sglang.service")
    ct129.wait_for(lambda: not healthy(ct129), 20, what="the bad unit to be unhealthy")
    proc = run_playbook("playbooks/rollback.yml", limit="ct129")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "ct129: rolled back to NEXTN: healthy in" in proc.stdout and healthy(ct129)
    assert ct129.run(["cat", UNIT]).stdout == ct129.run(["cat", "/etc/sglang/known-good/sglang.service"]).stdout
    # The record of what runs is the known-good's, and the unit starts at boot.
    deployed = json.loads(ct129.run(["cat", STATE + "deployed.json"]).stdout)
    assert deployed["variant"] == "nextn" and deployed == json.loads(ct129.run(["cat", STATE + "known-good/meta.json"]).stdout)
    assert ct129.run(["systemctl", "is-enabled", "sglang.service"]).stdout.strip() == "enabled"

    before = invocation(ct129)
    again = run_playbook("playbooks/rollback.yml", limit="ct129")
    assert again.returncode == 0 and recap(again, ct129)["changed"] == "0"
    assert "already serves, healthy: left alone" in again.stdout and invocation(ct129) == before


def test_rollback_without_known_good_says_so(fresh, ct129):
    proc = run_playbook("playbooks/rollback.yml", limit="ct129")
    assert proc.returncode != 0 and "NO KNOWN-GOOD SERVICE" in proc.stdout


@pytest.mark.parametrize("extra, words", [
    ({"sglang_variant": "medusa"}, "unknown variant medusa (have nextn, dflash, ddtree): set sglang_variant"),
    ({"sglang_envelope_overrides": {"mem_fraction_static": 1.5}},
     "sglang_envelope_overrides.mem_fraction_static: 1.5 must be between 0 and 1 (exclusive)"),
    ({"sglang_envelope_overrides": {"mem_fraction_static": "high"}},
     "nothing was changed: sglang_envelope_overrides.mem_fraction_static: 'high' is not a number; write a fraction"),
    ({"sglang_envelope_overrides": {"context_length": -4096}},
     "sglang_envelope_overrides.context_length: -4096 must be at least 1."),
    ({"sglang_envelope_overrides": {"context_length": "32k", "tp_size": 1.5}},
     "context_length: '32k' is not a whole number; write 32768 (32k = 32 x 1024); "
     "sglang_envelope_overrides.tp_size: 1.5 is not a whole number"),
    ({"sglang_envelope_overrides": ["context_length", 32768]},
     "sglang_envelope_overrides must be a mapping of SGLang field names to values (got a list)"),
    # A value through a variant or the extra arguments is checked as the envelope's; a newline never
    # reaches ExecStart= (systemd would refuse the unit after the host was touched).
    ({"sglang_service_variants": {"nextn": {"speculative_algorithm": "NEXTN", "mem_fraction_static": 1.7}}},
     "sglang_service_variants.nextn.mem_fraction_static: 1.7 must be between 0 and 1 (exclusive)"),
    ({"sglang_envelope_overrides": {"mem_fraction_static": "0.85\n"}},
     "sglang_envelope_overrides.mem_fraction_static: '0.85\\n' carries a control character"),
    ({"sglang_service_extra_args": {"served_model_name": "q\nExecStartPre=/bin/false"}},
     "sglang_service_extra_args.served_model_name: 'q\\nExecStartPre=/bin/false' carries a control character"),
    # The host's guard is armed before the first file of the switch is written: an arm that fails
    # (its inputs out of range) leaves no unit behind.
    ({"sglang_guard_margin": -2000}, "sglang.service guard: deadline must be a positive number of seconds"),
    ({"sglang_guard_grace": 60}, "grace must be more than 0 and at most 15 seconds, got 60.0; nothing was changed"),
    ({"sglang_envelope_overrides": {"tp_size": 4}}, "at least tp_size=4 of them"),
    ({"sglang_variant": "dflash", "sglang_draft_model_path": ""}, "dflash needs a draft model"),
    # A class of the user's own is accepted, and checked against its own cards.
    ({"sglang_host_class": "h100", "sglang_gpu_model": "NVIDIA H100 80GB HBM3"},
     "ct129 (class h100) has 2x NVIDIA RTX A6000; the class needs NVIDIA H100 80GB HBM3"),
    ({"sglang_envelope_overrides": {"mem_fraction_static": 0.5}}, "the envelope cannot fit: needs at least"),
    ({"sglang_envelope_overrides": {"attention_backend": "trtllm_mha"}}, "attention_backend=trtllm_mha needs compute"),
])
def test_bad_input_fails_before_anything_changes(fresh, ct129, extra, words):
    proc = deploy("deploy", ct129, **extra)
    assert proc.returncode != 0 and words in " ".join(proc.stdout.split()), proc.stdout[-3000:]
    assert ct129.run("test -e /etc/systemd/system/sglang.service", check=False).returncode == 1
    assert ct129.run("test -e /run/inferops-sglang/deploy.lock", check=False).returncode == 1


def test_a_gpu_tenant_stops_the_deploy_until_it_is_released(fresh, ct200, tenants):
    """Another process holding 60000 MiB on each of ct200's GPUs: the preflight names it
    (PID, unit, memory) and changes nothing; once it is gone the deploy goes on."""
    pid = tenants(ct200, "0,1,2,3,4,5,6,7", 60000)
    proc = deploy("deploy_nextn", ct200)
    said = " ".join(proc.stdout.split())
    assert proc.returncode != 0 and "PID %d (" % pid in said and "GPU 0 (60000 MiB), GPU 1 (60000 MiB)" in said, said[-3000:]
    assert "unit inferops-tenant-" in said and "does not own. Stop it (systemctl stop inferops-tenant-" in said
    assert "Nothing was changed" in said
    assert ct200.run("test -e %s" % UNIT, check=False).returncode == 1
    assert ct200.run("test -e /run/inferops-sglang/deploy.lock", check=False).returncode == 1
    labctl("release", "ct200")
    again = deploy("deploy_nextn", ct200)
    assert again.returncode == 0 and report(ct200)["outcome"] == "deployed", again.stdout[-3000:]


def test_status_playbook(fresh, ct200, tmp_path):
    # The deploy writes its report where sglang_report_dir says, and status reads the same place.
    where = {"sglang_report_dir": str(tmp_path / "elsewhere")}
    assert deploy("deploy_nextn", ct200, **where).returncode == 0
    assert (tmp_path / "elsewhere" / "ct200" / "latest.json").exists()
    proc = run_playbook("playbooks/status.yml", limit="ct200", extra_vars=where)
    assert proc.returncode == 0
    assert "ct200: NEXTN from 0.5.23-" in " ".join(proc.stdout.split()) and "healthy (active/running)" in proc.stdout
    assert "last deploy: deployed" in " ".join(proc.stdout.split())
    assert "NEXTN deployed, healthy in" in proc.stdout, "the last diagnosis, whole"


def test_failed_deploy_without_known_good_says_so_and_leaves_the_unit_stopped(fresh, ct129):
    proc = deploy("deploy_ddtree", ct129)
    assert proc.returncode != 0
    assert "NO KNOWN-GOOD SERVICE EXISTED" in proc.stdout and report(ct129)["outcome"] == "rolled_back"
    props = ct129.show("sglang.service", "ActiveState", "SubState")
    assert props["ActiveState"] in ("inactive", "failed"), props
    time.sleep(12)   # longer than RestartSec: a crash loop would have restarted it by now
    assert ct129.show("sglang.service", "NRestarts", "ActiveState")["ActiveState"] in ("inactive", "failed")


def test_playbooks_run_from_the_built_collection(fresh, ct200, tmp_path):
    # Away from the checkout and its ansible.cfg: the installed collection alone must be enough
    # (from the checkout, ansible-galaxy would find the collection "already installed").
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tmp_path / "collections"),
               ANSIBLE_CONFIG=str(tmp_path / "ansible.cfg"), INFEROPS_REPORT_DIR=str(tmp_path / "reports"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_CONNECTION_PLUGINS=str(REPO / "lab" / "plugins" / "connection"))

    def run(*argv):
        return subprocess.run([str(BIN / argv[0]), *argv[1:]], cwd=tmp_path, env=env, capture_output=True,
                              text=True, check=False)

    build = run("ansible-galaxy", "collection", "build", str(REPO), "--output-path", str(tmp_path))
    assert build.returncode == 0, build.stdout + build.stderr
    tarball = next(tmp_path.glob("inferops-sglang-*.tar.gz"))
    install = run("ansible-galaxy", "collection", "install", "--offline", "--force", str(tarball),
                  "-p", str(tmp_path / "collections"))
    assert install.returncode == 0, install.stdout + install.stderr
    installed = tmp_path / "collections" / "ansible_collections" / "inferops" / "sglang"
    assert (installed / "playbooks" / "deploy_ddtree.yml").exists()
    assert not (installed / "lab").exists() and not (installed / "tests").exists(), "build_ignore keeps them out"
    proc = run("ansible-playbook", "-i", str(REPO / "inventory" / "lab"), "inferops.sglang.deploy_ddtree", "-l", "ct200")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "DDTREE deployed, healthy" in (tmp_path / "reports" / "ct200" / "latest.txt").read_text()


def test_old_releases_are_pruned_but_never_the_known_good_or_running_one(fresh, ct129, tmp_path):
    make_git_source(ct129)
    ct129.run("rm -rf /opt/sglang/releases/0.5.9* /opt/sglang/releases/.build-*")
    playbook = tmp_path / "build.yml"
    playbook.write_text("- hosts: ct129\n  gather_facts: false\n  roles:\n    - role: inferops.sglang.sglang_build\n")
    built = {}
    # keep 1: each build keeps the newest release and those in use; four builds (a build is
    # the slow part) prune the one that is neither, 0.5.92.
    for version in ("0.5.90", "0.5.91", "0.5.92", "0.5.93"):
        proc = run_playbook(str(playbook), extra_vars=dict(GIT_BUILD, sglang_build_version=version, sglang_build_keep=1))
        assert proc.returncode == 0, proc.stdout[-3000:]
        built[version] = newest_release(ct129, version)
        # The release ids are the role's to choose: mark the two first ones as in use once built.
        if version == "0.5.90":
            ct129.put("/etc/sglang/known-good/meta.json", json.dumps({"release": built["0.5.90"]}))
        if version == "0.5.91":
            ct129.put("/etc/sglang/deployed.json", json.dumps({"release": built["0.5.91"]}))
        time.sleep(1.1)   # distinct mtimes: "newest" is by the release folder's time
    left = {f"/opt/sglang/releases/{r}" for r in ct129.run("ls /opt/sglang/releases").stdout.split()}
    ours = {r for r in left if r.startswith("/opt/sglang/releases/0.5.9")}
    assert ours == {built[v] for v in ("0.5.90", "0.5.91", "0.5.93")}, left


def newest_release(host, version) -> str:
    out = host.run(f"ls -td /opt/sglang/releases/{version}-*").stdout.split()
    assert out, f"no release folder for {version}"
    return out[0]


# The plan made again with the lock held: it reads the host again (its result's `read`) only
# when another run released the lock after the first read.
REREAD = "Plan again with the lock held (the host is read again only when another run released it since)"


def task_results(proc, host) -> dict:
    # A role's task is named "<role> : <name>"; the last of a name wins, over every play
    # (deploy.yml sorts the hosts into phases first).
    return {t["task"]["name"].split(" : ")[-1]: t["hosts"][host.name]
            for play in json.loads(proc.stdout)["plays"] for t in play["tasks"] if host.name in t["hosts"]}


def test_a_deploy_reads_the_host_again_only_when_another_run_finished_on_it_since(fresh, ct200):
    assert deploy("deploy_nextn", ct200).returncode == 0
    # A run that released the lock after this deploy read the host (its release time is later).
    ct200.run("touch -d '+1 hour' /run/inferops-sglang/deploy.lock.released")
    # (progress lines would interleave with the JSON output)
    quiet = {"sglang_service_health_progress_interval": 0}
    proc = run_playbook("playbooks/deploy.yml", limit="ct200", extra_vars=dict(quiet, sglang_variant="dflash"),
                        json_output=True)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert task_results(proc, ct200)[REREAD]["read"] is True, "read again"
    assert report(ct200)["outcome"] == "deployed"
    proc = run_playbook("playbooks/deploy.yml", limit="ct200", extra_vars=dict(quiet, sglang_variant="ddtree"),
                        json_output=True)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert task_results(proc, ct200)[REREAD]["read"] is False, "nothing happened on the host since it was read"
    assert report(ct200)["outcome"] == "deployed"


def test_files_written_after_the_service_started_are_not_converged(fresh, ct200):
    """A deploy stopped between writing the unit and restarting leaves files the running
    process does not run: the next deploy restarts rather than call the host unchanged, and
    does not keep those files as the known-good."""
    assert deploy("deploy_nextn", ct200).returncode == 0
    assert deploy("deploy", ct200, sglang_variant="dflash").returncode == 0
    known_good = ct200.run(["cat", "/etc/sglang/known-good/sglang.service"]).stdout
    before = invocation(ct200)
    time.sleep(1.1)
    ct200.run(["touch", UNIT])     # the bytes are this deploy's; they were written after the start
    again = deploy("deploy", ct200, sglang_variant="dflash")
    assert again.returncode == 0, again.stdout[-3000:]
    assert report(ct200)["outcome"] == "deployed" and invocation(ct200) != before, "restarted, not unchanged"
    assert ct200.run(["cat", "/etc/sglang/known-good/sglang.service"]).stdout == known_good
    settled = deploy("deploy", ct200, sglang_variant="dflash")
    assert settled.returncode == 0 and report(ct200)["outcome"] == "unchanged"


OWN_CHECK = """
- name: Deploy DDTree, then keep it only if our own check passes
  hosts: sglang_hosts
  gather_facts: false
  become: true
  roles:
    - role: inferops.sglang.sglang_service
      vars:
        sglang_service_variant: ddtree
  tasks:
    - name: Run our evaluation against the new server (it does not pass)
      ansible.builtin.command: test -e /nonexistent/evaluation-passed
      register: evaluation
      changed_when: evaluation.rc != 0
      failed_when: false
      notify: inferops.sglang rollback
"""


def test_a_check_of_your_own_rolls_the_host_back_through_the_roles_handler(fresh, ct200, tmp_path):
    """The deploy guide's example: the role whole keeps DDTree, then a check of the user's own
    notifies `inferops.sglang rollback`; the role's one restore path brings NEXTN back, healthy."""
    assert deploy("deploy_nextn", ct200).returncode == 0
    play = tmp_path / "own_check.yml"
    play.write_text(OWN_CHECK)
    proc = run_playbook(str(play), limit="ct200")
    assert proc.returncode == 0, proc.stdout[-3000:]
    said = " ".join(proc.stdout.split())
    assert "RUNNING HANDLER [inferops.sglang.sglang_service : Roll back to the known-good service]" in said, said[-3000:]
    assert "ct200: rolled back to NEXTN: healthy in" in said
    assert "--speculative-algorithm NEXTN" in ct200.run(["cat", UNIT]).stdout and healthy(ct200)
    assert json.loads(ct200.run(["cat", "/etc/sglang/deployed.json"]).stdout)["variant"] == "nextn"
    assert ct200.run("test -e /etc/sglang/pending.json", check=False).returncode == 1, "nothing left pending"
