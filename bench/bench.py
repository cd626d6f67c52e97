"""make bench: measure what the collection promises, on the lab. Prints one table and
writes it to bench/results.md with the date, the machine's core count and the commands.

Rows: failure detection (journal's "Failed with result" to sglang_health's verdict, beside a
naive `uri` + `until` loop with `delay: 5`), rollback overhead, the idempotent re-run beside an
empty, a ping and a `/health`-only play, fleet deploys to 1-16 hosts and a rolling deploy that
stops at a failure, the controller gone (the host's guard restores the known-good alone), the
start-up of a TP=8 server (each start-up fault's detection beside the timeout it replaces), and
journal classification of 10k/100k/1M-line invocations (seconds and
peak memory of the reader on the host), the gateway rollout, the tune (tune.yml on a
canary per class behind the gateway, under load, beside an exhaustive grid over the same bounds),
the watch after the gates (each late failure to its restore) and its clean soak (10 minutes under
load through smg). `python bench/bench.py ROW...`
measures only those rows and puts them into bench/results.md in place of the earlier run's,
under a line that says which rows, when and by which command.
"""
from __future__ import annotations

import datetime
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "collections"))
# The bench's fixed clock, whatever the tests' clock in the environment: its figures
# compare across runs only with the same stand-in timings and settle window.
os.environ.update(INFEROPS_LAB_TIMINGS=str(REPO / "lab" / "sim_defaults.json"), INFEROPS_LAB_SETTLE="7",
                  INFEROPS_LAB_PREFIX="inferops-")
from tests.integration.ansible_run import BIN, kill_run, process_tree, run_module, run_playbook  # noqa: E402
from lab.labctl import RESET_SERVICE  # noqa: E402
from tests.integration.gateway_lab import Load, all_ready, gateway, group_inventory, host_inventory, workers  # noqa: E402
from tests.integration.labhost import LabHost, labctl, podman  # noqa: E402
from tests.integration.deploying import (  # noqa: E402
    cut_after_first_200, start_other_language_traffic, stop_traffic, watch_restored,
)
from ansible_collections.inferops.sglang.plugins.module_utils import service_config, tune  # noqa: E402

REPS = int(os.environ.get("BENCH_REPS", "5"))
FLEET_REPS = int(os.environ.get("BENCH_FLEET_REPS", "3"))
# A quicker look at some fleet sizes (the full run, and bench/results.md, measure all four).
FLEET_SIZES = [int(n) for n in os.environ.get("BENCH_FLEET_SIZES", "1,4,8,16").split(",")]
HOST = LabHost("ct200")


def copy_module_utils(host):
    """The collection's module_utils on the host, importable under their collection path."""
    base = "/opt/bench/ansible_collections/inferops/sglang/plugins/module_utils"
    for rel in ("ansible_collections", "ansible_collections/inferops", "ansible_collections/inferops/sglang",
                "ansible_collections/inferops/sglang/plugins", "ansible_collections/inferops/sglang/plugins/module_utils"):
        host.put("/opt/bench/%s/__init__.py" % rel, "")
    for path in (REPO / "plugins" / "module_utils").glob("*.py"):
        host.put("%s/%s" % (base, path.name), path.read_text())
    host.put("/opt/bench/journal_read.py", (REPO / "bench" / "journal_read.py").read_text())


def generator_unit(host, name, lines, error_at):
    """A unit whose one invocation logs `lines` SGLang-like lines, the OOM line at `error_at`."""
    script = ("import sys\nw=sys.stdout.write\n"
              "for i in range(%d):\n"
              "    w('RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\\n' if i == %d "
              "else '[2026-11-30 10:00:00 TP0] Decode batch. #running-req: 16, #token: %%d, gen throughput (token/s): 81.2\\n' %% i)\n"
              "sys.exit(1)\n") % (lines, error_at)
    host.put("/opt/bench/%s.py" % name, script)
    host.put("/etc/systemd/system/%s.service" % name,
             "[Service]\nExecStart=/usr/bin/python3 /opt/bench/%s.py\n" % name)
    host.run("systemctl daemon-reload; systemctl reset-failed %s 2>/dev/null; systemctl start %s" % (name, name))
    host.wait_for(lambda: host.show(name + ".service", "ActiveState")["ActiveState"] == "failed",
                  600, interval=0.5, what=name)
    host.run("journalctl --sync")
    return host.show(name + ".service", "InvocationID", "ExecMainPID")


def bench_journal():
    copy_module_utils(HOST)
    rows = []
    for lines in (10_000, 100_000, 1_000_000):
        props = generator_unit(HOST, "bench-journal", lines, error_at=50)
        runs = []
        for rep in range(REPS):  # noqa: B007
            out = HOST.run(["python3", "/opt/bench/journal_read.py", "/opt/bench", props["InvocationID"],
                            "bench-journal.service", props["ExecMainPID"]]).stdout
            runs.append(json.loads(out))
        assert all(r["cause"] == "kv_pool_oom" and r["lines"] >= lines for r in runs), runs
        rows.append({"lines": lines, "seconds": statistics.median(r["seconds"] for r in runs),
                     "journalctl_seconds": statistics.median(r["journalctl_seconds"] for r in runs),
                     "reader_rss": max(r["reader_peak_rss_mib"] for r in runs),
                     "journalctl_rss": max(r["journalctl_peak_rss_mib"] for r in runs)})
    return rows


def failed_with_result_time(host, unit):
    out = host.run(["journalctl", "-u", unit, "-o", "short-unix", "--no-pager"]).stdout
    return float([l for l in out.splitlines() if "Failed with result" in l][-1].split()[0])


def start_failing(host, kind):
    faults = {"oom_kill": "memory_pool", "oom_kill_target": "launcher"} if kind == "oom_kill" else {}
    host.put("/etc/inferops-lab/faults.json", json.dumps(faults))
    # ct200's DDTree envelope at 0.45 leaves the KV pool no room (the memory model's kv-pool OOM).
    fraction = "0.85" if kind == "oom_kill" else "0.45"
    argv = ("--model-path /models/Qwen3.6-27B --tp-size 8 --mem-fraction-static %s --context-length 131072 "
            "--max-running-requests 64 --port 30009 --speculative-algorithm DDTREE --speculative-draft-model-path "
            "/models/Qwen3.6-27B-DFlash --speculative-num-draft-tokens 16" % fraction)
    host.put("/etc/systemd/system/bench-fail.service", (
        "[Service]\nEnvironment=PYTHONPATH=/opt/inferops-lab\nExecStart=/usr/bin/python3 -m sglang_sim %s\n" % argv))
    host.run("systemctl daemon-reload; systemctl reset-failed bench-fail 2>/dev/null; systemctl start bench-fail")


def bench_detection():
    rows = []
    for kind in ("kv_pool_oom", "oom_kill"):
        ours, naive = [], []
        for rep in range(REPS):  # noqa: B007
            start_failing(HOST, kind)
            res = run_module("ct200", "inferops.sglang.sglang_health",
                             {"unit": "bench-fail.service", "url": "http://127.0.0.1:30009/health", "timeout": 120,
                              "fail_on_unhealthy": False, "progress_interval": 0})
            ours.append(res["observed_at"] - failed_with_result_time(HOST, "bench-fail.service"))
        start_failing(HOST, kind)
        started = time.time()
        proc = naive_wait(retries=12)
        naive.append(time.time() - started)
        HOST.run("rm -f /etc/inferops-lab/faults.json")
        rows.append({"kind": kind, "median": statistics.median(ours), "max": max(ours), "naive": naive[0],
                     "naive_rc": proc.returncode})
    return rows


# The bench's stall floor: several times the stand-in's longest phase on its fixed clock (2 s).
BENCH_STALL_S = 10
STARTUP_FAULTS = [
    ("a rank that dies alone (NCCL error on TP5)", {"rank_error": {"rank": 5, "error": "nccl"}}, "nccl_error"),
    ("a stall in NCCL init", {"stall": "init_parallel"}, "stalled"),
    ("a stall in the weight load", {"stall": "load_weights"}, "stalled"),
    ("a stall in graph capture", {"stall": "cuda_graph"}, "stalled"),
    ("a start that hangs for ever (a rank hung in the warm-up)", {"rank_hang": {"rank": 6, "after_forwards": 0}},
     "stalled"),
]


def start_tree(host, faults):
    """ct200's NEXTN-sized server (TP=8: eight ranks, a detokenizer) under a bench unit."""
    host.put("/etc/inferops-lab/faults.json", json.dumps(faults))
    argv = ("--model-path /models/Qwen3.6-27B --tp-size 8 --mem-fraction-static 0.85 --context-length 131072 "
            "--max-running-requests 64 --port 30009")
    host.put("/etc/systemd/system/bench-tree.service", (
        "[Service]\nEnvironment=PYTHONPATH=/opt/inferops-lab\nExecStart=/usr/bin/python3 -m sglang_sim %s\n" % argv))
    host.run("systemctl daemon-reload; systemctl reset-failed bench-tree 2>/dev/null; systemctl restart bench-tree")


def gate_tree(known_good=None):
    args = {"unit": "bench-tree.service", "url": "http://127.0.0.1:30009/health", "timeout": 1800,
            "stall": BENCH_STALL_S, "fail_on_unhealthy": False, "progress_interval": 0}
    if known_good:
        args["known_good_timeline"] = known_good
    return run_module("ct200", "inferops.sglang.sglang_health", args)


def bench_startup():
    """The gate on a start as a TP=8 server makes it: detection of each start-up fault (from
    the restart to the verdict), beside the fixed timeout it replaces; the known-good's start
    (its timeline sets the limits); then what the rank processes hold comes back on a stop."""
    start_tree(HOST, {})
    healthy = gate_tree()
    assert healthy["state"] == "healthy", healthy["reason"]
    known_good = healthy["timeline"]
    rows = []
    for name, faults, cause in STARTUP_FAULTS:
        runs = []
        for rep in range(min(REPS, 3)):  # noqa: B007
            start_tree(HOST, faults)
            res = gate_tree(known_good)
            assert res["state"] == "failed" and res["cause"] == cause, (name, res["cause"], res["reason"])
            runs.append(res["observed_at"] - main_started_at(HOST, "bench-tree.service"))
        rows.append({"name": name, "median": statistics.median(runs), "max": max(runs), "cause": cause,
                     "rank": res.get("rank"), "limit": (res.get("stall") or {}).get("limit")})
    HOST.run("rm -f /etc/inferops-lab/faults.json")
    start_tree(HOST, {})
    assert gate_tree()["state"] == "healthy"
    stopped = time.time()
    HOST.run("systemctl stop bench-tree")
    released = run_module("ct200", "inferops.sglang.gpu_released", {"unit": "bench-tree.service", "timeout": 60})
    assert released["released"], released
    return {"known_good": known_good, "rows": rows, "release": time.time() - stopped}


def naive_wait(retries):
    """How most playbooks wait: uri + until, delay 5. It cannot see the unit at all."""
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as fh:
        fh.write("- hosts: ct200\n  gather_facts: false\n  tasks:\n"
                 "    - ansible.builtin.uri: {url: 'http://127.0.0.1:30009/health'}\n"
                 "      register: r\n      until: r.status == 200\n      retries: %d\n      delay: 5\n" % retries)
    try:
        return run_playbook(fh.name)
    finally:
        os.unlink(fh.name)


# --- deploy-path rows: the playbooks as an operator runs them ------------------------------

def reset_to_nextn(hosts, **extra):
    """Hosts serving NEXTN from a clean state (releases are kept: they are not what is measured)."""
    for host in hosts:
        host.run(RESET_SERVICE)
    proc = playbook("playbooks/deploy_nextn.yml", [h.name for h in hosts], sglang_serial=0, **extra)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]


SSH_INVENTORY = REPO / "build" / "bench-ssh-inventory.yml"


def reach_over_ssh():
    """The running lab hosts, reached the way an operator reaches production: SSH with
    ControlPersist and pipelining (`labctl inventory --ssh`), not one podman exec per task."""
    SSH_INVENTORY.parent.mkdir(parents=True, exist_ok=True)
    SSH_INVENTORY.write_text(labctl("inventory", "--ssh").stdout)


def playbook_cmd(path, names, inventory=None, **extra_vars):
    """The ansible-playbook command line. `inventory`: one more source, for the hosts' own variables."""
    # The SSH inventory comes last so that its connection settings win over the lab's default.
    cmd = [str(BIN / "ansible-playbook"), "-i", str(REPO / "inventory" / "lab"),
           *(["-i", str(inventory)] if inventory else []), "-i", str(SSH_INVENTORY), path,
           "-l", ",".join(names), "-f", str(max(5, len(names)))]
    return cmd + (["-e", json.dumps(extra_vars)] if extra_vars else [])


FORK_TIME = REPO / "build" / "bench-fork-time.json"


def playbook(path, names, inventory=None, **extra_vars):
    """One ansible-playbook run, timed from outside (the operator's wall clock), with the time
    its workers (forks) lived (bench/callback_plugins/fork_time.py)."""
    cmd = playbook_cmd(path, names, inventory, **extra_vars)
    hosts_before = hosts_cpu(names)
    FORK_TIME.unlink(missing_ok=True)
    started, cpu_before, usage_before = time.monotonic(), machine_cpu(), resource.getrusage(resource.RUSAGE_CHILDREN)
    with subprocess.Popen(cmd, cwd=REPO, env=deploy_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as child:
        peak = PeakMemory(child.pid)
        out, err = child.communicate()
        peak.stop()
    proc = subprocess.CompletedProcess(cmd, child.returncode, out, err)
    proc.wall = time.monotonic() - started
    proc.forks = json.loads(FORK_TIME.read_text()) if FORK_TIME.exists() else None
    proc.peak_mib = peak.mib
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    # The controller's own CPU (ansible-playbook, its workers, their ssh clients), the hosts' own
    # (their containers' cgroups) and how busy the whole machine was: the lab's hosts share these
    # cores with the controller, where production hosts bring their own.
    proc.controller_cpu = (usage.ru_utime - usage_before.ru_utime) + (usage.ru_stime - usage_before.ru_stime)
    proc.hosts_cpu = hosts_cpu(names) - hosts_before
    busy, total = (after - before for after, before in zip(machine_cpu(), cpu_before))
    proc.machine_busy = busy / total if total else 0.0
    return proc


class PeakMemory(threading.Thread):
    """The peak of the memory a process and its descendants use together (their PSS: the forks
    share their parent's pages until they write them), sampled every quarter second."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.mib, self.done = pid, 0.0, threading.Event()
        self.start()

    def stop(self):
        self.done.set()
        self.join()

    def run(self):
        while not self.done.wait(0.25):
            self.mib = max(self.mib, sum(pss_kib(pid) for pid in process_tree(self.pid)) / 1024)


def pss_kib(pid):
    try:
        with open("/proc/%d/smaps_rollup" % pid) as fh:
            return next((int(line.split()[1]) for line in fh if line.startswith("Pss:")), 0)
    except OSError:
        return 0


_CGROUP_STAT = {}


def hosts_cpu(names):
    """CPU seconds the named lab hosts' containers used so far (cgroup v2 or the hybrid layout)."""
    total = 0.0
    for name in names:
        if name not in _CGROUP_STAT:
            cid = podman("container", "inspect", "-f", "{{.Id}}", LabHost(name).container).stdout.strip()
            candidates = ["/sys/fs/cgroup/unified/libpod_parent/libpod-%s/cpu.stat" % cid,
                          "/sys/fs/cgroup/machine.slice/libpod-%s.scope/cpu.stat" % cid]
            _CGROUP_STAT[name] = next((c for c in candidates if os.path.exists(c)), None)
        if _CGROUP_STAT[name]:
            with open(_CGROUP_STAT[name]) as fh:
                total += int(fh.readline().split()[1]) / 1e6
    return total


def machine_cpu():
    """(busy, total) jiffies of all cores, from /proc/stat."""
    with open("/proc/stat") as fh:
        fields = [int(v) for v in fh.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def deploy_env():
    return dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
                ANSIBLE_CALLBACK_PLUGINS=str(REPO / "bench" / "callback_plugins"), INFEROPS_FORK_TIME=str(FORK_TIME),
                ANSIBLE_CALLBACKS_ENABLED="inferops.sglang.fleet_summary,inferops.sglang.interrupt,fork_time",
                CONTAINERS_CONF=str(REPO / "lab" / "containers.conf"),
                INFEROPS_WHEELHOUSE=str(REPO / "build" / "wheelhouse"),
                INFEROPS_REPORT_DIR=str(REPO / "build" / "bench-reports"))


def bench_report(name):
    return json.loads((REPO / "build" / "bench-reports" / name / "latest.json").read_text())


def main_started_at(host, unit):
    """When systemd started the unit's main process (epoch seconds, to the microsecond)."""
    out = host.run(["systemctl", "show", "-P", "ExecMainStartTimestamp", "--timestamp=us+utc", unit]).stdout.strip()
    return datetime.datetime.strptime(out, "%a %Y-%m-%d %H:%M:%S.%f UTC").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def plain_restart_to_healthy(host):
    """NEXTN's own start-up: from systemd starting the process to sglang_health's healthy
    verdict (no settle). The module's own `elapsed` would miss the time before it started."""
    host.run("systemctl restart sglang.service")
    res = run_module(host.name, "inferops.sglang.sglang_health",
                     {"unit": "sglang.service", "timeout": 120, "progress_interval": 0})
    assert res["state"] == "healthy", res
    return res["observed_at"] - main_started_at(host, "sglang.service")


def bench_rollback():
    """From the failed gate (kv-pool OOM) to NEXTN healthy, minus NEXTN's own start-up."""
    host = LabHost("ct129")
    reset_to_nextn([host])
    totals, startups = [], []
    for rep in range(REPS):  # noqa: B007
        proc = playbook("playbooks/deploy_ddtree.yml", ["ct129"], sglang_retry_rolled_back=True)
        rep_ = bench_report("ct129")
        assert proc.returncode != 0 and rep_["outcome"] == "rolled_back" and rep_["cause"] == "kv_pool_oom", rep_
        totals.append(rep_["rollback"]["observed_at"] - rep_["health"]["observed_at"])
        startups.append(plain_restart_to_healthy(host))
    overheads = [t - s for t, s in zip(totals, startups)]
    return {"total": statistics.median(totals), "startup": statistics.median(startups),
            "overhead": statistics.median(overheads), "max": max(overheads)}


def invocation(host):
    return host.show("sglang.service", "InvocationID")["InvocationID"]


# The guard row's gate: health timeout 30 s, settle 7 s, margin 15 s (production: 1800, 20, 300).
GUARD_GATE = {"sglang_service_health_timeout": 30, "sglang_guard_margin": 15, "sglang_retry_rolled_back": True}


def poll(predicate, timeout, interval=0.1):
    """Wait until predicate() is true (a hang guard, not a measurement), and when it became so."""
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise TimeoutError("bench: a condition did not hold within %d s" % timeout)
        time.sleep(interval)
    return time.time()


def guard_ended(host):
    """The host's guard ended the switch (pending.json gone, its result written) and NEXTN answers 200."""
    return host.run("test -e /etc/sglang/guard.json -a ! -e /etc/sglang/pending.json", check=False).returncode == 0 \
        and host.run("python3 -c \"import urllib.request as u; u.urlopen('http://127.0.0.1:30000/health', "
                     "timeout=2)\"", check=False).returncode == 0


# The moment of the kill: 1 s into the health gate, or the moment the controller handed its
# rollback's restore to the host (pending.json's phase restore).
IN_THE_GATE = "test -e /etc/sglang/pending.json && grep -q DDTREE /etc/systemd/system/sglang.service"
IN_THE_ROLLBACK = "grep -q '\"phase\": \"restore\"' /etc/sglang/pending.json"


def killed_mid_gate(host, faults, moment=IN_THE_GATE):
    """One deploy_ddtree.yml on `host` with `faults`, its controller killed 1 s into the health
    gate (or as `moment` says): the seconds until NEXTN serves healthy again, to the guard's
    deadline, and its restore."""
    host.run("rm -f /etc/sglang/guard.json /run/inferops-sglang/deploy.lock")
    host.put("/etc/inferops-lab/faults.json", json.dumps(faults))
    proc = subprocess.Popen(playbook_cmd("playbooks/deploy_ddtree.yml", [host.name], **GUARD_GATE), cwd=REPO,
                            env=deploy_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    poll(lambda: host.run(moment, check=False).returncode == 0, 300)
    if moment == IN_THE_GATE:
        time.sleep(1)   # into the gate: the scenario, not a wait for a condition
    killed = time.time()
    kill_run(proc.pid)
    proc.wait()
    back = poll(lambda: guard_ended(host), 600)
    result = json.loads(host.run(["cat", "/etc/sglang/guard.json"]).stdout)
    assert result["healthy"] and result["restored"] == "nextn", result
    host.run("rm -f /etc/inferops-lab/faults.json")
    return {"total": back - killed, "to_deadline": result["pending"]["deadline"] - killed, "restore": result["seconds"],
            "production_deadline": 1800 + 20 + 300 + (result["pending"]["armed_at"] - killed),
            # (Before the one restore, a rollback's arm waited for leftovers + health + settle + margin.)
            "rollback_deadline": 60 + GUARD_GATE["sglang_service_health_timeout"] + 7 + GUARD_GATE["sglang_guard_margin"]}


def bench_guard():
    """SIGKILL of the whole controller 1 s into DDTREE's health gate: the time until NEXTN serves
    healthy again, restored by the host alone - when DDTREE only starts slowly (nobody confirms
    it: the guard's deadline), and when DDTREE fails (the host's follower, after the grace)."""
    host = LabHost("ct200")
    reset_to_nextn([host])
    out = {}
    crashes = {"crash_after_ready_s": 0.2, "only_algorithm": "DDTREE"}
    for kind, faults, moment in (("slow", {"slow_start_s": 600, "only_algorithm": "DDTREE"}, IN_THE_GATE),
                                 ("fails", crashes, IN_THE_GATE), ("rollback", crashes, IN_THE_ROLLBACK)):
        runs = [killed_mid_gate(host, faults, moment) for _rep in range(min(REPS, 3))]
        out[kind] = {key: statistics.median(r[key] for r in runs) for key in runs[0]} | {
            "max": max(r["total"] for r in runs)}
    return out


# The watch row's late failures, each set off by a file once DDTREE is confirmed and watched: a
# crash (an illegal memory access on rank 0), and rank 0's scheduler hung behind a live HTTP
# server (SGLang's own health timeout 3 s here, as the integration row; production's is 20 s).
LATE = "/etc/inferops-lab/crash-now"
WATCH_INTERVAL = 2
# Each row: its name, the host's faults, the deploy's extra variables, its goal, and how its failure
# is set off (None: the LATE file). Each row's goal for naming it: a state that cannot serve within two probes; a scheduler that no
# longer answers after the watch's 3 failed generations in a row (no single blip restores), each
# SGLang's own health timeout (3 s here), its handler's 1 s, and the interval.
QUICK_HEALTH = {"sglang_service_timeout_stop_sec": 10, "sglang_service_environment": {
    "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "SGLANG_HEALTH_CHECK_TIMEOUT": "3"}}
WATCH_ROWS = (
    ("a crash after the settle window", {"crash_when_file": LATE, "only_algorithm": "DDTREE"}, {},
     "named within 2 probes (%d s)" % (2 * WATCH_INTERVAL), None),
    ("a dead scheduler behind a live HTTP server", {"rank_hang": {"rank": 0, "when_file": LATE},
                                                    "only_algorithm": "DDTREE"}, QUICK_HEALTH,
     "named after 3 failed generations in a row, each 3 s + 1 s + the %d s interval (%d s)"
     % (WATCH_INTERVAL, 3 * (3 + 1 + WATCH_INTERVAL)), None),
    # (The main process's event loop stops: no request is answered, nothing is logged. A probe
    # waits SGLang's own health timeout and the watch's 5 s margin before it calls it failed.)
    ("a health request that hangs (the main process's event loop stopped)",
     {"tokenizer_hang": {"when_file": LATE}, "only_algorithm": "DDTREE"}, QUICK_HEALTH,
     "named after 3 generations with no answer in a row, each 3 s + the 5 s margin + the %d s interval (%d s)"
     % (WATCH_INTERVAL, 3 * (3 + 5 + WATCH_INTERVAL)), None),
    # (Rank 3 dies at the next forward once the file exists - the next probe's generation - and
    # SGLang's subprocess watchdog, a look each second, ends the server: then two probes.)
    ("a rank that dies late (torch's NCCL watchdog on rank 3)",
     {"rank_dies": {"rank": 3, "when_file": LATE}, "only_algorithm": "DDTREE"}, {},
     "named within 3 probes and the subprocess watchdog's 1 s (%d s)" % (3 * WATCH_INTERVAL + 1), None),
    # (The traffic turns to another language: DDTREE's drafter accepts little of it. A speed
    # breach is held for its window - here 6 s, production's 300 s - before it restores.)
    ("an accept length that falls with the traffic (another language)", {"only_algorithm": "DDTREE"},
     {"sglang_service_extra_args": {"enable_metrics": True}, "sglang_watch_limits": {"speed_window": 6}},
     "the speed window (6 s) and a probe on each side of it (%d s)" % (6 + 2 * WATCH_INTERVAL),
     start_other_language_traffic),
)


def watched_failure(host, faults, extra, trigger=None):
    """DDTREE deployed and watched (a probe each WATCH_INTERVAL s), then its late failure (the
    LATE file, or `trigger(host)`): the seconds from the failure to the watch naming it, and to
    NEXTN healthy again."""
    host.run("rm -f /etc/sglang/guard.json " + LATE)
    host.put("/etc/inferops-lab/faults.json", json.dumps(faults))
    proc = playbook("playbooks/deploy_ddtree.yml", [host.name], sglang_watch_duration=600,
                    sglang_watch_interval=WATCH_INTERVAL, sglang_retry_rolled_back=True, **extra)
    assert proc.returncode == 0, proc.stdout[-2000:]
    failed = time.time()
    if trigger:
        trigger(host)
    else:
        host.put(LATE, "")
    try:
        poll(lambda: watch_restored(host), 300)
    finally:
        stop_traffic(host)
    result = watch_restored(host)
    assert result["healthy"], result
    host.run("rm -f /etc/inferops-lab/faults.json " + LATE)
    return {"named": result["time"] - failed, "back": result["time"] + result["seconds"] - failed,
            "restore": result["seconds"], "cause": result["breach"]["cause"]}


def bench_watch():
    """Each late failure of WATCH_ROWS on a watched DDTREE: failure to named, and to NEXTN healthy;
    then a peer node that dies in a server group (group_watch_failure)."""
    host = LabHost("ct200")
    out = []
    for name, faults, extra, goal, trigger in WATCH_ROWS:
        reset_to_nextn([host])
        runs = [watched_failure(host, faults, extra, trigger) for _rep in range(min(REPS, 3))]
        out.append(watch_row(name, goal, runs))
    hosts, plain = group_on_nextn()
    runs = [group_watch_failure(hosts, plain) for _rep in range(min(REPS, 3))]
    out.append(watch_row("a peer node that dies in a server group (its processes killed)",
                         "named within 2 probes (%d s)" % (2 * WATCH_INTERVAL), runs))
    return out


def watch_row(name, goal, runs):
    """A watch row's medians over its runs, and the longest time to healthy."""
    return {"name": name, "goal": goal, "cause": runs[0]["cause"], "max": max(r["back"] for r in runs)} | {
        key: statistics.median(r[key] for r in runs) for key in ("named", "back", "restore")}


def group_on_nextn():
    """The bench's server group (GROUP_NODES) on NEXTN, its known-good: (its hosts, its inventory)."""
    names = list(GROUP_NODES)
    labctl("up", *("%s:%s" % kv for kv in GROUP_NODES.items()))
    reach_over_ssh()
    hosts = [LabHost(n) for n in names]
    placed = dict((n, (labctl("address", n).stdout.strip(), GROUP_NODES[n])) for n in names)
    plain = Path(tempfile.mkdtemp(prefix="bench-group-watch-")) / "group.yml"
    plain.write_text(group_inventory(placed, names, GROUP_NAME))
    for host in hosts:
        host.run(RESET_SERVICE)
    proc = playbook("playbooks/deploy_nextn.yml", names, inventory=plain, sglang_serial=0)
    assert proc.returncode == 0, proc.stdout[-3000:]
    return hosts, plain


def group_watch_failure(hosts, plain):
    """DFLASH on the group, confirmed and watched (a probe each WATCH_INTERVAL s); node 1's server
    dies (its processes killed, as a GPU fallen off the bus leaves them): the seconds from its
    death to the first node's watch naming it, and to the whole group healthy on NEXTN again,
    restored by the hosts alone."""
    for host in hosts:
        host.run("rm -f /etc/sglang/guard.json")
    proc = playbook("playbooks/deploy.yml", [h.name for h in hosts], inventory=plain, sglang_variant="dflash",
                    sglang_serial=0, sglang_canary=False, sglang_perf_gate={"enabled": False},
                    sglang_retry_rolled_back=True, sglang_watch_duration=600, sglang_watch_interval=WATCH_INTERVAL)
    assert proc.returncode == 0, proc.stdout[-2000:]
    poll(lambda: all(watching(h, "dflash") for h in hosts), 60)
    died = time.time()
    hosts[1].run(["systemctl", "kill", "--signal=SIGKILL", "sglang.service"])

    def restored(host):
        out = host.run(["cat", "/etc/sglang/guard.json"], check=False)
        result = json.loads(out.stdout) if out.returncode == 0 else {}
        return result if result.get("reason") == "watch" and result.get("restored") else None
    poll(lambda: all(restored(h) for h in hosts), 300)
    results = [restored(h) for h in hosts]
    assert all(r["healthy"] for r in results), results
    named = min(r["time"] for r in results)
    back = max(r["time"] + r["seconds"] for r in results)
    return {"named": named - died, "back": back - died, "restore": back - named, "cause": results[0]["breach"]["cause"]}


def watching(host, variant):
    """The host's watch of `variant` runs."""
    out = host.run(["cat", "/etc/sglang/watch.json"], check=False)
    record = json.loads(out.stdout) if out.returncode == 0 else {}
    return not record.get("ended") and record.get("variant") == variant


SOAK_FLEET = {"ct129": "a6000", "ct200": "blackwell"}
SOAK_S = 600


def bench_soak():
    """A clean soak: DDTREE on ct200, confirmed and watched for SOAK_S with production's probe
    interval and limits, the play waiting for the watch (sglang_watch_wait), under the bounded
    load through smg (its retries off: a failed request shows) in front of ct129 (NEXTN) and
    ct200. Goal: 0 restores, 0 failed requests, the watch ends clean."""
    names, hosts, addresses, placed, folder, _plain = fleet_on_nextn(SOAK_FLEET, "bench-soak-")
    with gateway(addresses, folder / "smg.log") as url:
        inventory = folder / "gateway.yml"
        inventory.write_text(host_inventory(placed, gateway=url))
        began = time.time()
        with Load(url, limit=SOAK_S + 600) as load:
            proc = playbook("playbooks/deploy_ddtree.yml", ["ct200"], inventory=inventory, sglang_watch_duration=SOAK_S,
                            sglang_watch_wait=True, sglang_retry_rolled_back=True)
        report = bench_report("ct200")
        guarded = hosts[1].run(["cat", "/etc/sglang/guard.json"], check=False)
        restores = int(guarded.returncode == 0 and json.loads(guarded.stdout).get("reason") == "watch")
        result = {"rc": proc.returncode, "wall": time.time() - began, "sent": load.sent, "failed": load.failed,
                  "errors": load.errors[:3], "latency": load.latencies(), "outcome": report["outcome"],
                  "watch": report.get("watch") or {}, "restores": restores,
                  "back_in_gateway": all_ready(url, len(names))}
    for host in hosts:
        host.run(RESET_SERVICE)
    assert result["rc"] == 0 and result["watch"].get("outcome") == "clean", result
    assert result["failed"] == 0 and result["restores"] == 0 and result["back_in_gateway"], result
    return result


def soak_lines(row):
    return ["| soak: DDTREE watched for %d s (production's probe each 10 s and limits), the play waiting for the "
            "watch, under the bounded load through smg (8 streams, retries off) in front of it and a NEXTN | watch "
            "ended %s (%s); %d requests, %d failed, %d restores; p50 %.2f s, p95 %.2f s; %.0f s in all | goal: 0 "
            "restores, 0 failed requests (no false alarm) |" % (
                SOAK_S, row["watch"]["outcome"], row["watch"].get("said") or "-", row["sent"], row["failed"],
                row["restores"], row["latency"]["p50"], row["latency"]["p95"], row["wall"])]


def watch_lines(rows):
    return ["| the watch after the gates, %s: the failure to the host's watch naming it (%s) and to NEXTN healthy "
            "again, restored by the host alone (a probe each %d s) | median %.1f s to named, %.1f s to healthy (max "
            "%.1f s), %.1f s of it the restore with its settle | goal: %s; before: never (the deploy looked away "
            "after its settle window) |"
            % (row["name"], row["cause"], WATCH_INTERVAL, row["named"], row["back"], row["max"], row["restore"],
               row["goal"]) for row in rows]


# The deploy's own fact gathering: the one sglang_facts call its converged check makes, with
# the same options (the lab's paths), and no other task.
FACTS_PLAY = """- hosts: ct200
  gather_facts: false
  tasks:
    - inferops.sglang.sglang_facts:
        url: http://127.0.0.1:30000/health
        files: [/etc/systemd/system/sglang.service, /etc/sglang/sglang.env, /etc/sglang/secrets.yaml,
                "{{ release }}/.release.json", /usr/local/lib/inferops-sglang/validate_server_args.py]
        config_id: 0000000000000000
        models: [/models/Qwen3.6-27B, /models/Qwen3.6-27B-DFlash]
        layout:
          {user: sglang, group: sglang, home: /var/lib/sglang, shell: /usr/sbin/nologin,
           dirs: [{path: /etc/sglang, owner: root, group: sglang, mode: "0750"},
                  {path: /etc/sglang/rolled-back, owner: root, group: sglang, mode: "0750"},
                  {path: /var/lib/sglang, owner: sglang, group: sglang, mode: "0750"}]}
  vars:
    release: %s
"""


def bench_idempotent():
    """deploy_ddtree.yml on a converged healthy host vs a play with the same fact gathering and
    no other task (the goal's baseline), an empty play, a play that only reaches the host, and
    one that only asks the server's /health once."""
    host = LabHost("ct200")
    reset_to_nextn([host])
    first = playbook("playbooks/deploy_ddtree.yml", ["ct200"])
    assert first.returncode == 0, first.stdout[-3000:]
    before = invocation(host)
    release = json.loads(host.run(["cat", "/etc/sglang/deployed.json"]).stdout)["release"]
    with tempfile.TemporaryDirectory() as tmp:
        plays = {"facts": FACTS_PLAY % release,
                 "ping": "- hosts: ct200\n  gather_facts: false\n  tasks:\n    - ansible.builtin.ping:\n",
                 "empty": "- hosts: ct200\n  gather_facts: false\n  tasks: []\n",
                 "health": "- hosts: ct200\n  gather_facts: false\n  tasks:\n    - ansible.builtin.uri:\n"
                           "        url: http://127.0.0.1:30000/health\n"}
        for name, text in plays.items():
            (Path(tmp) / (name + ".yml")).write_text(text)
        runs = {"deploy": [], **{name: [] for name in plays}}
        for rep in range(REPS):  # noqa: B007
            again = playbook("playbooks/deploy_ddtree.yml", ["ct200"])
            assert again.returncode == 0 and " changed=0 " in again.stdout, again.stdout[-2000:]
            runs["deploy"].append(again.wall)
            for name in plays:
                other = playbook(str(Path(tmp) / (name + ".yml")), ["ct200"])
                assert other.returncode == 0, other.stdout[-2000:]
                runs[name].append(other.wall)
    assert invocation(host) == before, "an idempotent re-run restarted the service"
    return {"first": first.wall, "tasks": tasks_run(again), **{k: statistics.median(v) for k, v in runs.items()}}


def tasks_run(proc):
    """Tasks the host ran or skipped, from the play recap (ok + skipped + failed)."""
    line = next(l for l in proc.stdout.splitlines() if " ok=" in l and " skipped=" in l)
    counts = dict(part.split("=") for part in line.split(":", 1)[1].split())
    return sum(int(counts[k]) for k in ("ok", "skipped", "failed"))


FLEET = ["fleet%02d" % i for i in range(1, 17)]
# The table's rows in order, each kind with how its lines begin (a partial run replaces its own).
ROW_ORDER = {"detection": ("| failure detection,",), "rollback": ("| rollback overhead",),
             "idempotent": ("| idempotent re-run",), "fleet": ("| fleet:", "| rolling deploy"),
             "journal": ("| journal classification",), "gateway": ("| gateway",),
             "guard": ("| the controller gone",), "startup": ("| start-up,",), "tune": ("| tune,",),
             "forks": ("| forks held",), "group": ("| server group",), "watch": ("| the watch after the gates",),
             "soak": ("| soak:",)}
# The rows that are medians of BENCH_REPS runs (the fleet's: BENCH_FLEET_REPS; the others: one run).
REPEATED = {"journal", "detection", "startup", "rollback", "guard", "idempotent", "watch"}
ALL_ROWS = set(ROW_ORDER)
TABLE_HEAD = ["| measurement | result | baseline / goal |", "| --- | --- | --- |"]
GATEWAY_TAIL = "\nThe gateway rollout's fleet summary"
AGAIN = " measured alone"
NOTES = """Notes: lab hosts are podman containers on this machine; the stand-in starts in a fixed ~5 s
(lab/sim_defaults.json) and the deploy gate settles 7 s (inventory/lab). The playbook rows reach
the hosts as production is reached: SSH with ControlPersist and pipelining (`labctl inventory
--ssh`; the hosts have no network, so the one connection per host runs `sshd -i` through podman
exec). Each module run costs its host 0.3-0.4 s of CPU (ansible-core 2.19 compiling and importing
its module_utils from the module's zip); on real hosts that is their own CPU, here every host's
is the controller's two cores, which the fleet rows show as "the host's own" CPU and count in the
CPU-bound floor (all CPU the run used, over the cores). ansible-playbook's own start is ~1 s.
The failure-detection baseline waits on `/health` alone, so it cannot tell a dead unit from a
slow one: it names no cause and ends only when its retries run out. The journal reader streams
`journalctl -o cat` and fetches the timestamped tail separately; journalctl's RSS counts the
journal files it maps, the reader's own stays flat. "journalctl alone" is the same command with
its output discarded, measured before each read: the floor no reader of the journal goes under
(systemd 252 here reads ~8 us an entry), so the ratio is the classifier's own cost. A deploy
gathers no facts but its own: one sglang_facts call (unit, checksums, records, model configs,
service layout, lock, one health probe, which SGLang answers after ~1 s by design: its handler
waits a second for the scheduler's reply). The idempotent row's baseline is that call alone in a play; the re-run adds the checks
on the controller and the report, and ends the host's play. The empty play does not reach the
host at all. The fleet rows deploy without the performance gate: on two shared cores its load
would measure the lab, not the collection.
"""


def bench_fleet():
    """DDTree to 1, 4, 8 and 16 Blackwell hosts at once; then a rolling deploy that stops at a failure."""
    fleet = FLEET[:max(*FLEET_SIZES, 4)]
    labctl("up", *("%s:blackwell" % n for n in fleet))
    reach_over_ssh()
    hosts = [LabHost(n) for n in fleet]
    started = time.monotonic()
    reset_to_nextn(hosts)     # builds the release on every host, once
    setup = time.monotonic() - started
    rows = []
    for size in FLEET_SIZES:
        runs = []
        for rep in range(FLEET_REPS):  # noqa: B007
            names = FLEET[:size]
            # The perf gate's load is the hosts' own work; on two shared cores it would
            # measure the lab, not the collection, so the fleet row deploys without it.
            proc = playbook("playbooks/deploy_ddtree.yml", names, sglang_serial=0, sglang_canary=False,
                            sglang_perf_gate={"enabled": False})
            assert proc.returncode == 0, proc.stdout[-3000:]
            runs.append(proc)
            back = playbook("playbooks/rollback.yml", names)
            assert back.returncode == 0, back.stdout[-3000:]
        rows.append({"hosts": size, "tasks": tasks_run(runs[-1]),
                     **{key: statistics.median(getattr(r, key) for r in runs)
                        for key in ("wall", "controller_cpu", "hosts_cpu", "machine_busy", "peak_mib")}})
    rolling = bench_rolling(hosts[:4])
    labctl("down", *fleet)
    reach_over_ssh()
    return {"setup": setup, "rows": rows, "rolling": rolling}


def bench_rolling(hosts):
    """serial [1, 50%], max_fail_percentage 0, the second host broken: the last batch must not start."""
    names = [h.name for h in hosts]
    hosts[1].put("/etc/inferops-lab/faults.json", json.dumps(
        {"oom_kill": "memory_pool", "oom_kill_target": "scheduler", "only_algorithm": "DDTREE"}))
    untouched = invocation(hosts[3])
    proc = playbook("playbooks/deploy_ddtree.yml", names, sglang_serial=[1, "50%"], sglang_canary=False,
                    sglang_max_fail_percentage=0, sglang_perf_gate={"enabled": False}, sglang_retry_rolled_back=True)
    hosts[1].run("rm -f /etc/inferops-lab/faults.json")
    units = {h.name: h.run(["cat", "/etc/systemd/system/sglang.service"]).stdout for h in hosts}
    healthy = {h.name: h.run("python3 -c \"import urllib.request as u; print(u.urlopen("
                             "'http://127.0.0.1:30000/health', timeout=10).status)\"", check=False).stdout.strip() == "200"
               for h in hosts}
    result = {"rc": proc.returncode, "wall": proc.wall,
              "variants": {n: ("DDTREE" if "DDTREE" in u else "NEXTN") for n, u in units.items()},
              "last_batch_untouched": invocation(hosts[3]) == untouched, "all_healthy": all(healthy.values())}
    assert proc.returncode != 0 and result["last_batch_untouched"] and result["all_healthy"], result
    return result


# The forks row: servers that take a minute to load (the stand-in's weights phase), as a real
# model's do, where today's lab start takes about 5 s.
SLOW_LOAD_S = 57
SLOW_GATE = {"sglang_service_health_stall": 120}
FORKS_HOSTS = 8


def bench_forks():
    """deploy_ddtree.yml to 8 Blackwell hosts at once whose servers take about 60 s to start: the
    time the controller's forks were held, its CPU and the wall time, with every host's wait in
    a fork of its own (sglang_service_wait_forks 0, as every deploy waited before) and with
    the waits read by one fork (the default, 1)."""
    names = FLEET[:FORKS_HOSTS]
    labctl("up", *("%s:blackwell" % n for n in names))
    reach_over_ssh()
    hosts = [LabHost(n) for n in names]
    timings = json.loads((REPO / "lab" / "sim_defaults.json").read_text())
    slow = dict(timings, timings=dict(timings["timings"], load_weights=SLOW_LOAD_S))
    # The stand-in prints nothing while it loads, where SGLang prints each checkpoint shard: the
    # stall floor covers the quiet minute (as it would for a model that loads without a word).
    for host in hosts:
        host.put("/etc/inferops-lab/sim.json", json.dumps(slow))
    reset_to_nextn(hosts, **SLOW_GATE)
    rows = []
    try:
        for wait_forks in (0, 1):
            proc = playbook("playbooks/deploy_ddtree.yml", names, sglang_serial=0, sglang_canary=False,
                            sglang_perf_gate={"enabled": False}, sglang_service_wait_forks=wait_forks, **SLOW_GATE)
            assert proc.returncode == 0, proc.stdout[-3000:]
            rows.append({"wait_forks": wait_forks, "wall": proc.wall, "controller_cpu": proc.controller_cpu,
                         "forks": proc.forks})
            back = playbook("playbooks/rollback.yml", names, sglang_service_wait_forks=wait_forks, **SLOW_GATE)
            assert back.returncode == 0, back.stdout[-3000:]
            rows[-1]["rollback"] = {"wall": back.wall, "forks": back.forks}
    finally:
        for host in hosts:
            host.put("/etc/inferops-lab/sim.json", json.dumps(timings))
        labctl("down", *names)
        reach_over_ssh()
    return rows


def forks_lines(rows):
    lines = []
    for row in rows:
        how = ("every host waits in a fork of its own (`sglang_service_wait_forks: 0`, as before)" if not row["wait_forks"]
               else "the waits read by %d fork at a time (`sglang_service_wait_forks: %d`, the default)"
               % (row["wait_forks"], row["wait_forks"]))
        longest = ", ".join("%s %.0f s" % (name, sec) for name, sec in row["forks"]["longest"][:3])
        lines.append("| forks held: `deploy_ddtree.yml` to %d Blackwell hosts at once whose servers take ~%d s to start, "
                     "%s | forks held %.0f fork-s (longest: %s); wall %.1f s; controller CPU %.1f s (%.2f s per host); "
                     "`rollback.yml` after it: forks held %.0f fork-s, wall %.1f s | %s |" % (
                         FORKS_HOSTS, SLOW_LOAD_S + 3, how, row["forks"]["total"], longest, row["wall"],
                         row["controller_cpu"], row["controller_cpu"] / FORKS_HOSTS, row["rollback"]["forks"]["total"],
                         row["rollback"]["wall"], "before" if not row["wait_forks"] else "%.2fx the forks held before, "
                         "%.2fx the wall time" % (row["forks"]["total"] / rows[0]["forks"]["total"],
                                                  row["wall"] / rows[0]["wall"])))
    return lines


GATEWAY_FLEET = {"ct129": "a6000", "ct130": "a6000", "ct200": "blackwell", "ct201": "blackwell"}
BEFORE_S = 15   # the load's window before the deploy, for the latency it starts from


def rollout(inventory, gateway_url, names, **extra):
    """deploy_ddtree.yml (a canary per class) to the fleet under the bounded load through the
    gateway: the load's figures, the play and each host's report and InvocationID."""
    hosts = [LabHost(n) for n in names]
    before = dict((h.name, invocation(h)) for h in hosts)
    with Load(gateway_url) as load:
        proc = playbook("playbooks/deploy_ddtree.yml", names, inventory=inventory, **extra)
    reports = dict((n, bench_report(n)) for n in names)
    return {"rc": proc.returncode, "wall": proc.wall, "sent": load.sent, "failed": load.failed,
            "errors": load.errors[:3], "latency": load.latencies(), "stdout": proc.stdout,
            "outcomes": dict((n, (r["outcome"], r["cause"])) for n, r in reports.items()),
            "restarted": dict((h.name, invocation(h) != before[h.name]) for h in hosts),
            "back_in_gateway": all_ready(gateway_url, len(names))}


def fleet_on_nextn(fleet, prefix):
    """The hosts of `fleet` ({name: class}) up, on their lab addresses, serving NEXTN from a clean
    state: (names, hosts, addresses, placed, a folder of the run's own, its plain inventory)."""
    names = list(fleet)
    labctl("up", *("%s:%s" % kv for kv in fleet.items()))
    reach_over_ssh()
    hosts = [LabHost(n) for n in names]
    addresses = dict((n, labctl("address", n).stdout.strip()) for n in names)
    placed = dict((n, (addresses[n], fleet[n])) for n in names)
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    plain = folder / "plain.yml"
    plain.write_text(host_inventory(placed))
    for host in hosts:
        host.run(RESET_SERVICE)
    proc = playbook("playbooks/deploy_nextn.yml", names, inventory=plain, sglang_serial=0)
    assert proc.returncode == 0, proc.stdout[-3000:]
    return names, hosts, addresses, placed, folder, plain


def bench_gateway():
    """Four hosts (2 a6000, 2 blackwell) on NEXTN behind the real smg, a bounded load through
    it: deploy_ddtree.yml with the canary and the drain, then the same without the drain."""
    names, hosts, addresses, placed, folder, plain = fleet_on_nextn(GATEWAY_FLEET, "bench-gateway-")
    with gateway(addresses, folder / "smg.log") as url:
        drained = folder / "gateway.yml"
        drained.write_text(host_inventory(placed, gateway=url))
        with Load(url) as load:
            time.sleep(BEFORE_S)
        result = {"before": load.latencies(), "before_sent": load.sent, "before_failed": load.failed}
        result["drain"] = rollout(drained, url, names)
        # Back to NEXTN, out of the load, for the control.
        back = playbook("playbooks/deploy_nextn.yml", ["ct200", "ct201"], inventory=plain, sglang_serial=0)
        assert back.returncode == 0, back.stdout[-3000:]
        result["plain"] = rollout(plain, url, names, sglang_retry_rolled_back=True)
    summary = result["drain"].pop("stdout")
    # (The folder relative to the checkout: the table is committed in bench/results.md.)
    result["summary"] = summary[summary.index("SGLANG FLEET SUMMARY"):].replace(str(REPO) + "/", "").strip().splitlines()
    result["plain"].pop("stdout")
    for host in hosts:
        host.run(RESET_SERVICE)
    labctl("down", "ct130", "ct201")
    reach_over_ssh()
    drain = result["drain"]
    assert drain["failed"] == 0 and drain["back_in_gateway"], drain
    assert drain["outcomes"]["ct129"][0] == "rolled_back" and drain["outcomes"]["ct130"][0] == "skipped", drain
    assert not drain["restarted"]["ct130"] and all(drain["outcomes"][n][0] == "deployed" for n in ("ct200", "ct201"))
    return result


GROUP_NODES = {"grp0": "blackwell", "grp1": "blackwell"}
GROUP_NAME = "grp_bench"


def bench_group():
    """A server over two Blackwell hosts (a server group) and ct200 on its own, both workers of
    the real smg under the gateway row's load: the group switched NEXTN -> DFLASH, the same
    switch on ct200 alone, rollback.yml of the group; then a node that never joins (its launcher
    hangs before its ranks start) caught as a stall, and rank 1's link cut after the start."""
    names = list(GROUP_NODES)
    labctl("up", *("%s:%s" % kv for kv in GROUP_NODES.items()))
    reach_over_ssh()
    hosts = [LabHost(n) for n in names] + [HOST]
    placed = dict((h.name, (labctl("address", h.name).stdout.strip(), GROUP_NODES.get(h.name, "blackwell")))
                  for h in hosts)
    folder = Path(tempfile.mkdtemp(prefix="bench-group-"))
    plain = folder / "plain.yml"
    plain.write_text(group_inventory(placed, names, GROUP_NAME))
    for host in hosts:
        host.run(RESET_SERVICE)
    for limit in (names, [HOST.name]):
        first = playbook("playbooks/deploy_nextn.yml", limit, inventory=plain, sglang_serial=0)
        assert first.returncode == 0, first.stdout[-3000:]
    row = {}
    workers_placed = dict((n, placed[n][0]) for n in (names[0], HOST.name))   # rank 0 and ct200
    with gateway(workers_placed, folder / "smg.log") as url:
        drained = folder / "gateway.yml"
        drained.write_text(group_inventory(placed, names, GROUP_NAME, url))
        for name, limit in (("switch", names), ("one_host", [HOST.name])):
            with Load(url) as load:
                proc = playbook("playbooks/deploy.yml", limit, inventory=drained, sglang_variant="dflash",
                                sglang_serial=0, sglang_canary=False)
            assert proc.returncode == 0, proc.stdout[-3000:]
            row[name] = {"wall": proc.wall, "sent": load.sent, "failed": load.failed, "errors": load.errors[:3],
                         "back_in_gateway": all_ready(url, 2)}
        with Load(url) as load:
            back = playbook("playbooks/rollback.yml", names, inventory=drained)
        assert back.returncode == 0, back.stdout[-3000:]
        row["rollback"] = {"wall": back.wall, "sent": load.sent, "failed": load.failed}
    hosts[1].put("/etc/inferops-lab/faults.json", json.dumps({"stall": "launch", "only_algorithm": "DDTREE"}))
    try:
        missing = playbook("playbooks/deploy.yml", names, inventory=plain, sglang_variant="ddtree", sglang_serial=0,
                           sglang_canary=False, sglang_retry_rolled_back=True)
    finally:
        hosts[1].put("/etc/inferops-lab/faults.json", "{}")
    said = dict((n, bench_report(n)) for n in names)
    face = said[names[0]]
    assert [said[n]["outcome"] for n in names] == ["rolled_back", "rolled_back"], face["diagnosis"]
    row["missing"] = {"wall": missing.wall, "caught": face["health"]["elapsed"], "cause": face["cause"],
                      "named": "%s (rank 1) did not join" % names[1] in " ".join(face["diagnosis"].split()),
                      "stall_floor": 15}
    row["cut"] = link_cut(names, plain)
    for host in hosts:
        host.run(RESET_SERVICE)
    labctl("down", *names)
    reach_over_ssh()
    assert row["switch"]["failed"] == 0 and row["rollback"]["failed"] == 0 and row["missing"]["named"], row
    assert row["cut"]["named"] and row["cut"]["back"], row
    return row


def link_cut(names, inventory):
    """A DFLASH switch of the group whose rank 1 is cut off the lab network once rank 0 answered
    its first 200 (a 12 s settle window, so the cut lands in its first half): how soon rank 0's
    gate loses its health, the causes, and rollback.yml once the link is mended."""
    face = LabHost(names[0])
    proc, after_cut = cut_after_first_200(face, names[1], lambda: playbook(
        "playbooks/deploy.yml", names, inventory=inventory, sglang_variant="dflash", sglang_canary=False,
        sglang_retry_rolled_back=True, sglang_service_health_settle=12))
    try:
        said = dict((n, bench_report(n)) for n in names)
    finally:
        labctl("mend", names[1], check=False)
    back = playbook("playbooks/rollback.yml", names, inventory=inventory)
    health = said[names[0]]["health"]
    return {"after_cut": after_cut, "wall": proc.wall, "caught": health["elapsed"] - (health["healthy_at"] or 0),
            "causes": [said[n]["cause"] for n in names],
            "named": "%s (rank 1) lost its link to rank 0" % names[1] in " ".join(said[names[0]]["diagnosis"].split()),
            "back": back.returncode == 0, "back_wall": back.wall}


def group_lines(row):
    switch, one, missing, cut = row["switch"], row["one_host"], row["missing"], row["cut"]
    return [
        "| server group: `deploy.yml` NEXTN -> DFLASH to one server over 2 Blackwell hosts (tp 16), rank 0 and ct200 "
        "behind the real `smg` under the gateway row's load | %.1f s; sent %d, failed %d; back in the gateway: %s | "
        "the same switch of ct200 alone, same load: %.1f s (sent %d, failed %d); the group takes %.2fx; failed must "
        "be 0 |" % (switch["wall"], switch["sent"], switch["failed"], switch["back_in_gateway"], one["wall"],
                    one["sent"], one["failed"], switch["wall"] / one["wall"]),
        "| server group: `rollback.yml` of the group (back to NEXTN), same load | %.1f s; sent %d, failed %d | "
        "failed must be 0 |" % (row["rollback"]["wall"], row["rollback"]["sent"], row["rollback"]["failed"]),
        "| server group: a node that never joins (its launcher hangs before its ranks start), DDTREE | caught in "
        "%.1f s (stall floor %d s), cause `%s` naming the node: %s; both nodes back on NEXTN, healthy, in %.1f s "
        "in all | before: every rank waits in distributed init until `--dist-timeout` (torch's 600 s when "
        "unset) |" % (missing["caught"], missing["stall_floor"], missing["cause"], missing["named"], missing["wall"]),
        "| server group: rank 1's link cut in the settle window of a DFLASH switch (`labctl cut`, once rank 0 answered "
        "its first 200) | rank 0's gate lost its health %.1f s after its first 200; causes `%s` (rank 0, naming rank "
        "1's link: %s) and `%s` (rank 1); the run ended %.1f s after the cut (the known-good stalls too while the "
        "link is down); mended, `rollback.yml` %.1f s, healthy: %s | before: every rank hangs in its next "
        "collective and only rank 0's health check says so, naming no node |" % (
            cut["caught"], cut["causes"][0], cut["named"], cut["causes"][1], cut["after_cut"], cut["back_wall"],
            cut["back"]),
    ]


TUNE_FLEET = {"ct129": "a6000", "ct130": "a6000", "ct200": "blackwell"}


class Rotation(threading.Thread):
    """Seconds each worker was out of the gateway's rotation, from its list every 0.5 s."""

    def __init__(self, gateway_url, worker_urls):
        super().__init__(daemon=True)
        self.url, self.out, self.done = gateway_url, dict((w, 0.0) for w in worker_urls), threading.Event()

    def run(self):
        last = time.monotonic()
        while not self.done.wait(0.5):
            now = time.monotonic()
            try:
                present = workers(self.url)
            except OSError:
                continue
            for worker in self.out:
                if worker not in present or present[worker] != (True, "ready"):
                    self.out[worker] += now - last
            last = now


def bench_tune():
    """playbooks/tune.yml on the a6000 and Blackwell canaries (ct129, ct200), behind the real smg
    with ct130 (a6000) left serving, under the gateway row's bounded load: per class its tries,
    its wall time and the time its canary was out of rotation; the load's failures; the
    controller's CPU for the whole tune."""
    names, hosts, addresses, placed, folder, plain = fleet_on_nextn(TUNE_FLEET, "bench-tune-")
    untouched = invocation(LabHost("ct130"))
    with gateway(addresses, folder / "smg.log") as url:
        drained = folder / "gateway.yml"
        drained.write_text(host_inventory(placed, gateway=url))
        rotation = Rotation(url, ["http://%s:30000" % addresses[n] for n in ("ct129", "ct200")])
        rotation.start()
        with Load(url) as load:
            proc = playbook("playbooks/tune.yml", names, inventory=drained, sglang_tune_result_dir=str(folder / "tuned"))
        rotation.done.set()
        rotation.join()
        back = all_ready(url, len(names))
    assert proc.returncode == 0, proc.stdout[-3000:]
    restarted = invocation(LabHost("ct130")) != untouched
    classes = {}
    for name, host_class in (("ct129", "a6000"), ("ct200", "blackwell")):
        result = json.loads((folder / "tuned" / ("%s.json" % host_class)).read_text())
        classes[host_class] = {"tries": len(result["attempts"]), "winner": result["winner"], "seconds": result["seconds"],
                               "out": rotation.out["http://%s:30000" % addresses[name]],
                               "rows": [(r["variant"], r["status"], r.get("tok_s"), r.get("ratio")) for r in result["rows"]],
                               # (After the tune, out of the gateway: the grid's deploys are not the tune's.)
                               "grid": grid_row(name, plain, result)}
    for host in hosts:
        host.run(RESET_SERVICE)
    labctl("down", "ct130")
    reach_over_ssh()
    return {"wall": proc.wall, "controller_cpu": proc.controller_cpu, "sent": load.sent, "failed": load.failed,
            "errors": load.errors[:3], "back_in_gateway": back, "ct130_restarted": restarted, "classes": classes}


# The workload the tune measures with (the sglang_tune role's default), for the grid's measures.
TUNE_WORKLOAD = yaml.safe_load((REPO / "roles" / "sglang_tune" / "defaults" / "main.yml").read_text())[
    "sglang_tune_workload"]


def halvings(low, high):
    """high, high / 2, ... down to low, low included: the counts the tune's halvings reach."""
    values, value = [], int(high)
    while value > int(low):
        values.append(value)
        value //= 2
    return values + [int(low)]


def fractions(low, high, own):
    """low to high in the tune's steps, with high and the class's own fraction."""
    steps = int(round((float(high) - float(low)) / tune.FRACTION_STEP))
    values = {round(float(low) + i * tune.FRACTION_STEP, 2) for i in range(steps + 1)} | {round(float(high), 2)}
    if float(low) <= float(own) <= float(high):
        values.add(round(float(own), 2))
    return sorted(v for v in values if v <= float(high))


def grid(bounds, min_context, start):
    """Every envelope of an exhaustive grid over the tune's bounds (a knob without bounds keeps
    the class's value); a captured batch larger than the running requests is the same as
    theirs (SGLang captures at most that many), so it is left out."""
    def levels(knob, low_floor=0):
        if knob not in bounds:
            return [start[knob]]
        low, high = bounds[knob]
        return halvings(max(int(low), int(low_floor)), high)
    mem = bounds.get("mem_fraction_static", [start["mem_fraction_static"]] * 2)
    return [dict(start, context_length=ctx, max_running_requests=req, cuda_graph_max_bs_decode=graphs,
                 mem_fraction_static=frac)
            for ctx in levels("context_length", min_context) for req in levels("max_running_requests")
            for graphs in levels("cuda_graph_max_bs_decode") if graphs <= req
            for frac in fractions(mem[0], mem[1], start["mem_fraction_static"])]


def newest_report(host, variant):
    """The newest deploy report of `variant` on `host` (the tune's last try of it)."""
    found = sorted((REPO / "build" / "bench-reports" / host).glob("*-%s.json" % variant))
    return json.loads(found[-1].read_text())


def walk_grid(name, result):
    """The exhaustive grid over the class's tune bounds, each variant's every envelope judged on
    the canary by the stand-in's own start-up memory plan (bench/grid_fit.py, the code the
    host's SGLang stand-in runs when it starts): {variant: (tries, fitting envelopes)}."""
    host = LabHost(name)
    points = grid(result["bounds"], result["min_context"], result["attempts"][0]["envelope"])
    host.put("/tmp/grid_fit.py", (REPO / "bench" / "grid_fit.py").read_text())
    walked = {}
    for variant in [row["variant"] for row in result["rows"]]:
        report = newest_report(name, variant)
        host.put("/tmp/grid.json", json.dumps([service_config.to_argv(dict(report["server_args"], **dict(
            (k, p[k]) for k in tune.KNOBS))) for p in points]))
        said = host.run(["%s/bin/python" % report["release"], "/tmp/grid_fit.py", "/tmp/grid.json"]).stdout
        judged = [json.loads(line) for line in said.splitlines() if line.strip()]
        assert len(judged) == len(points), said[-2000:]
        walked[variant] = (len(points), [p for p, j in zip(points, judged) if j["fits"]])
    return walked


def grid_best(name, plain, variant, envelope):
    """One deploy of the grid's largest fitting envelope of `variant`, measured with the tune's
    workload (the role's default): its tok/s."""
    proc = playbook("playbooks/deploy.yml", [name], inventory=plain, sglang_variant=variant,
                    sglang_envelope=envelope, sglang_envelope_overrides={}, sglang_retry_rolled_back=True,
                    sglang_perf_gate={"record": True, "workload": TUNE_WORKLOAD})
    report = bench_report(name)
    assert report["outcome"] == "deployed", (proc.stdout[-3000:], report.get("diagnosis"))
    return report["perf"]["new"]["output_tokens_per_s"]


def largest(envelopes):
    """The envelope the tune prefers: the longest context, then the most requests, graphs, memory."""
    return max(envelopes, key=lambda e: tuple(e[k] for k in tune.KNOBS))


def grid_row(name, plain, result):
    """The grid beside the tune: its tries, each variant's largest fit and its measured speed."""
    walked, speeds, tries = walk_grid(name, result), {}, 0
    for variant, (count, fits) in walked.items():
        tries += count
        speeds[variant] = (largest(fits), grid_best(name, plain, variant, largest(fits))) if fits else (None, None)
    measured_speeds = [tok for _env, tok in speeds.values() if tok]
    return {"tries": tries, "fits": dict((v, len(f)) for v, (_c, f) in walked.items()),
            "best": speeds, "best_tok_s": max(measured_speeds) if measured_speeds else None}


def measured(tok_s, ratio):
    return " %.0f tok/s (%.2fx)" % (tok_s, ratio) if tok_s and ratio else ""


def tune_lines(row):
    """The tune row's table lines: one per class, and the run."""
    lines = []
    for host_class, got in sorted(row["classes"].items()):
        won = got["winner"]
        said = ", ".join("%s %s%s" % (v, status.replace("_", " "), measured(tok, ratio))
                         for v, status, tok, ratio in got["rows"])
        lines.append("| tune, %s class (`tune.yml`, variants ddtree, dflash; canary out of rotation) | %d tries in %.0f s; "
                     "canary out of the gateway's rotation %.0f s; %s; winner %s (%.2fx the known-good) | %s |" % (
                         host_class, got["tries"], got["seconds"], got["out"], said, won["variant"], won["ratio"] or 1.0,
                         grid_text(got)))
    lines.append("| tune, the whole run: `tune.yml -l ct129,ct130,ct200` behind the real `smg`, under the gateway row's "
                 "load | %.0f s; controller CPU %.1f s; load sent %d, failed %d; every host back in the gateway: %s; "
                 "ct130 (not a canary) restarted: %s | failed must be 0 |" % (
                     row["wall"], row["controller_cpu"], row["sent"], row["failed"], row["back_in_gateway"],
                     row["ct130_restarted"]))
    return lines


def grid_text(got):
    """The grid's figures beside the tune's: tries, fits, each variant's largest fit and speed."""
    grid_got, won = got["grid"], got["winner"]
    best = "; ".join("%s %s%s" % (v, "largest fit %s," % tune_envelope(env) if env else "no fit",
                                  " %.0f tok/s" % tok if tok else "")
                     for v, (env, tok) in sorted(grid_got["best"].items()))
    share = "%.3f" % (got["tries"] / float(grid_got["tries"]))
    speed = "%.3f" % (won["tok_s"] / grid_got["best_tok_s"]) if won.get("tok_s") and grid_got["best_tok_s"] else "-"
    return ("the exhaustive grid over the same bounds: %d tries (fits: %s); %s; tune's tries / grid's %s "
            "(goal <= 0.333), tune's winner / grid's best speed %s (goal >= 0.95)" % (
                grid_got["tries"], ", ".join("%s %d" % kv for kv in sorted(grid_got["fits"].items())), best, share, speed))


def tune_envelope(envelope):
    return "ctx %s req %s graphs %s mem %s" % tuple(envelope[k] for k in tune.KNOBS)


def ms(seconds):
    return "-" if seconds is None else "%.0f ms" % (seconds * 1000)


def gateway_lines(row):
    """The gateway row's table lines: the drained canary rollout, and the control."""
    drain, plain, before = row["drain"], row["plain"], row["before"]
    kept = ", ".join("%s %s" % (n, o[0] if not o[1] else "%s (%s)" % o) for n, o in sorted(drain["outcomes"].items()))
    return [
        "| gateway: `deploy_ddtree.yml` (canary per class, drain through the real `smg` 1.13, its retries off) to 4 "
        "hosts (2 a6000, 2 blackwell) on NEXTN under load (8 streaming `/generate`, through the gateway) | sent %d, "
        "failed %d in %.0f s; latency p50/p95 before %s / %s, during %s / %s; %s; ct130 restarted: %s; every host "
        "back in the gateway: %s | failed must be 0 |" % (
            drain["sent"], drain["failed"], drain["wall"], ms(before["p50"]), ms(before["p95"]),
            ms(drain["latency"]["p50"]), ms(drain["latency"]["p95"]), kept, drain["restarted"]["ct130"],
            drain["back_in_gateway"]),
        "| gateway, the control: the same deploy without `sglang_gateway` (no drain), same load | sent %d, failed "
        "%d in %.0f s | shows the load sees the failures a restart causes |" % (plain["sent"], plain["failed"],
                                                                                plain["wall"]),
    ]


def progress(name, measure):
    """Each row's raw figures as soon as they exist: a later row failing loses nothing."""
    started = time.monotonic()
    result = measure()
    print("bench: %s done in %.0f s: %s" % (name, time.monotonic() - started, json.dumps(result)), file=sys.stderr,
          flush=True)
    return result


def results_text(header, rows, gateway_tail):
    """bench/results.md: the header, the table in ROW_ORDER, the notes, the gateway's summary."""
    lines = ["# inferops.sglang benchmarks", "", header, ""] + TABLE_HEAD
    lines += [line for kind in ROW_ORDER for line in rows.get(kind, [])]
    return "\n".join(lines) + "\n\n" + NOTES + gateway_tail


def merged_results(old, measured, rows, gateway_tail, started):
    """An earlier run's results with the rows of the `measured` kinds replaced by this run's,
    under a line saying which rows were measured alone, when, and by which command."""
    old_lines = old.splitlines()
    prose = [line for line in old_lines[1:] if line and not line.startswith("|")]
    header = prose[:1] or ["(no full run on record)"]
    # An earlier partial run's line stays while one of its rows is still the table's.
    header += [line for line in prose[1:] if AGAIN in line
               and set(line.split(": ", 1)[1].split(AGAIN)[0].split(", ")) - set(measured)]
    kinds = sorted(measured)
    runs = (["medians of %d runs" % REPS] if REPEATED & set(kinds) else []) + \
        (["fleet rows: medians of %d" % FLEET_REPS] if "fleet" in kinds else [])
    header.append("%s: %s%s (`python bench/bench.py %s`%s)." % (
        started, ", ".join(kinds), AGAIN, " ".join(kinds), "; " + ", ".join(runs) if runs else ""))
    merged = dict((kind, rows[kind] if kind in measured else
                   [line for line in old_lines if line.startswith(ROW_ORDER[kind])]) for kind in ROW_ORDER)
    if "gateway" not in measured and GATEWAY_TAIL in old:
        gateway_tail = old[old.index(GATEWAY_TAIL):]
    return results_text("\n".join(header), merged, gateway_tail)


def prepare():
    """What the rows' deploys copy and start, made (or found made: each is cached, keyed by its
    inputs) whichever way the bench was started: `make bench` makes them first, but a row run
    alone (`python bench/bench.py gateway`) after `make lab-up` found no wheelhouse."""
    subprocess.run(["make", "-s", "-C", str(REPO), "lab-image", "lab-wheelhouse"], check=True)


def main():
    prepare()
    labctl("up", "ct129:a6000", "ct200:blackwell")
    reach_over_ssh()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    only = set(sys.argv[1:]) or ALL_ROWS
    journal = progress("journal", bench_journal) if "journal" in only else []
    detection = progress("detection", bench_detection) if "detection" in only else []
    rollback = progress("rollback", bench_rollback) if "rollback" in only else None
    idempotent = progress("idempotent", bench_idempotent) if "idempotent" in only else None
    fleet = progress("fleet", bench_fleet) if "fleet" in only else None
    forks = progress("forks", bench_forks) if "forks" in only else None
    gateway_row = progress("gateway", bench_gateway) if "gateway" in only else None
    guard = progress("guard", bench_guard) if "guard" in only else None
    started_up = progress("startup", bench_startup) if "startup" in only else None
    tuned = progress("tune", bench_tune) if "tune" in only else None
    grouped = progress("group", bench_group) if "group" in only else None
    watched = progress("watch", bench_watch) if "watch" in only else None
    soaked = progress("soak", bench_soak) if "soak" in only else None
    header = ("%s, %d cores, lab hosts ct129/ct200 and fleet01-16 (podman, systemd %s), medians of %d runs "
              "(fleet rows: %d). Produced by `make bench` (`python bench/bench.py`; env BENCH_REPS=%d "
              "BENCH_FLEET_REPS=%d)." % (started, os.cpu_count(), HOST.run("systemctl --version").stdout.split()[1],
                                         REPS, FLEET_REPS, REPS, FLEET_REPS))
    rows = dict((kind, []) for kind in ROW_ORDER)
    lines = rows["detection"]
    for row in detection:
        lines.append("| failure detection, %s: journal's `Failed with result` to sglang_health's verdict | "
                     "median %.2f s, max %.2f s | naive `uri`+`until` (delay 5, retries 12): no verdict, gave up after "
                     "%.0f s; goal <= 1 s |" % (row["kind"], row["median"], row["max"], row["naive"]))
    lines = rows["rollback"]
    if rollback:
        lines.append("| rollback overhead: failed gate (kv_pool_oom) to NEXTN healthy, minus NEXTN's own start-up | "
                     "median %.1f s (max %.1f s): %.1f s in all, of which start-up %.1f s | goal <= 10 s |" % (
                         rollback["overhead"], rollback["max"], rollback["total"], rollback["startup"]))
    if guard:
        slow, fails = guard["slow"], guard["fails"]
        rows["guard"].append(
            "| the controller gone: SIGKILL of ansible-playbook and its workers 1 s into DDTREE's health gate, DDTREE "
            "starting slowly (nobody confirms it), to NEXTN healthy again, restored by the host alone (health timeout "
            "30 s, settle 7 s, margin 15 s) | median %.1f s (max %.1f s): %.1f s to the guard's deadline, %.1f s its "
            "restore and NEXTN's start, now settled and after the GPUs are free | before: 58.9 s (2026-12-04: its "
            "restore did not settle nor wait for the GPUs); earlier, never |"
            % (slow["total"], slow["max"], slow["to_deadline"], slow["restore"]))
        rows["guard"].append(
            "| the controller gone, the new server failing: the same kill, DDTREE crashing after ready, to NEXTN "
            "healthy again, restored by the host: its follower after the grace (15 s), or the restore the controller "
            "handed it when its gate failed before the kill | median %.1f s (max %.1f s), "
            "%.1f s of it the restore with its settle | before: the guard's deadline, %.1f s here; %.0f s with "
            "production's health timeout 1800 s, settle 20 s, margin 300 s |"
            % (fails["total"], fails["max"], fails["restore"], fails["to_deadline"], fails["production_deadline"]))
        back = guard["rollback"]
        rows["guard"].append(
            "| the controller gone during its rollback: the same DDTREE, SIGKILL of ansible-playbook and its workers "
            "the moment it handed its failed gate's restore to the host, to NEXTN healthy again | median %.1f s (max "
            "%.1f s), %.1f s of it the restore with its settle | before (the controller's own restore, guarded by "
            "its deadline): %.0f s here; 2180 s with production's leftovers wait 60 s, health timeout 1800 s, settle "
            "20 s, margin 300 s |" % (back["total"], back["max"], back["restore"], back["rollback_deadline"]))
    if started_up:
        sys.path.insert(0, str(REPO / "collections"))
        from ansible_collections.inferops.sglang.plugins.module_utils.startup import describe_timeline
        for row in started_up["rows"]:
            named = " on %s" % row["rank"] if row["rank"] else ""
            limit = " (stall limit %.0f s)" % row["limit"] if row["limit"] else ""
            said = (row["name"], row["cause"], named, limit, row["median"], row["max"])
            rows["startup"].append(
                "| start-up, %s: restart to the gate's verdict (cause %s%s)%s | median %.1f s (max %.1f s) | the "
                "fixed timeout it replaces: 1800 s |" % said)
        rows["startup"].append(
            "| start-up, TP=8 stop: `systemctl stop` to every rank gone and its GPU memory back (gpu_released) | "
            "%.1f s | the known-good's start: %s |" % (started_up["release"], describe_timeline(started_up["known_good"])))
    lines = rows["idempotent"]
    if idempotent:
        lines.append("| idempotent re-run of `deploy_ddtree.yml` on a converged healthy host (0 changed, same InvocationID; "
                     "%d tasks) | %.1f s (first deploy %.0f s) | a play with the same fact gathering (its one `sglang_facts` "
                     "call) and no other task: %.1f s, ratio %.2fx (goal <= 1.5x); an empty play: %.1f s, %.2fx; a play "
                     "that only pings the host: %.1f s, %.2fx; a play that only GETs `/health` (`uri`): %.1f s, %.2fx |" % (
                         idempotent["tasks"], idempotent["deploy"], idempotent["first"], idempotent["facts"],
                         idempotent["deploy"] / idempotent["facts"], idempotent["empty"],
                         idempotent["deploy"] / idempotent["empty"], idempotent["ping"],
                         idempotent["deploy"] / idempotent["ping"], idempotent["health"],
                         idempotent["deploy"] / idempotent["health"]))
    lines = rows["fleet"]
    if fleet:
        one = fleet["rows"][0]["wall"]
        for row in fleet["rows"]:
            floor = (row["controller_cpu"] + row["hosts_cpu"]) / os.cpu_count()
            lines.append("| fleet: `deploy_ddtree.yml` to %d Blackwell host(s) at once (serial 0, forks %d; %d tasks per host) | "
                         "%.1f s; CPU per host: controller %.1f s, the host's own %.1f s; controller's peak memory %.0f MiB "
                         "(PSS of ansible-playbook and its forks), %.0f MiB per host; all of it on %d cores takes at "
                         "least %.1f s (%.0f%% of the wall time); both cores %.0f%% busy | %.2fx one host%s |" % (
                             row["hosts"], max(5, row["hosts"]), row["tasks"], row["wall"],
                             row["controller_cpu"] / row["hosts"], row["hosts_cpu"] / row["hosts"], row["peak_mib"],
                             row["peak_mib"] / row["hosts"], os.cpu_count(),
                             floor, 100 * floor / row["wall"], 100 * row["machine_busy"], row["wall"] / one,
                             "; goal 8 hosts <= 1.5x; controller CPU <= 2 s per host" if row["hosts"] == 8 else ""))
        roll = fleet["rolling"]
        lines.append("| rolling deploy, serial [1, 50%%], max_fail_percentage 0, 4 hosts, host 2 broken | %.1f s; "
                     "play failed (rc %d), last batch untouched: %s, every host healthy: %s (%s) | the remaining "
                     "batches must not start |" % (roll["wall"], roll["rc"], roll["last_batch_untouched"],
                                                   roll["all_healthy"], ", ".join(
                                                       "%s %s" % kv for kv in sorted(roll["variants"].items()))))
    lines = rows["journal"]
    base = journal[0]["seconds"] / journal[0]["lines"] if journal else 1
    for row in journal:
        lines.append("| journal classification, %s-line invocation (reader on the host) | %.3f s, reader peak RSS "
                     "%.1f MiB, journalctl %.1f MiB | journalctl alone %.3f s (%.2fx); %.2fx the 10k rate per line%s |" % (
                         "{:,}".format(row["lines"]), row["seconds"], row["reader_rss"], row["journalctl_rss"],
                         row["journalctl_seconds"], row["seconds"] / row["journalctl_seconds"],
                         (row["seconds"] / row["lines"]) / base, "; goal 100k <= 1 s" if row["lines"] == 100_000 else ""))
    if tuned:
        rows["tune"] = tune_lines(tuned)
    if forks:
        rows["forks"] = forks_lines(forks)
    if grouped:
        rows["group"] = group_lines(grouped)
    if watched:
        rows["watch"] = watch_lines(watched)
    if soaked:
        rows["soak"] = soak_lines(soaked)
    gateway_tail = ""
    if gateway_row:
        rows["gateway"] += gateway_lines(gateway_row)
        drain, plain = gateway_row["drain"], gateway_row["plain"]
        table = "\n".join("    " + line for line in gateway_row["summary"])
        last = "gateway rollout: sent %d, failed %d; without drain: sent %d, failed %d" % (
            drain["sent"], drain["failed"], plain["sent"], plain["failed"])
        gateway_tail = "%s (the callback's table):\n\n%s\n\n%s\n" % (GATEWAY_TAIL, table, last)
    results = REPO / "bench" / "results.md"
    if only == ALL_ROWS:
        text = results_text(header, rows, gateway_tail)
    else:
        text = merged_results(results.read_text() if results.exists() else "", only, rows, gateway_tail, started)
    print(text)
    if "fleet" in only and FLEET_SIZES != [1, 4, 8, 16]:
        print("(fleet sizes %s are not the table's: bench/results.md left as it was)" % FLEET_SIZES)
    else:
        results.write_text(text)


if __name__ == "__main__":
    main()
