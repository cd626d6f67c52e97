"""One SGLang server over two lab hosts (a server group): ct200 (rank 0, the face; the lab's
own) and ctg1, both blackwell, 16 TP ranks, meeting at ct200's lab address. The group deploys, switches and
rolls back as one; a run that would change half of it is refused before anything changes."""
from __future__ import annotations

import contextlib
import json
import time

import pytest

from tests.integration.ansible_run import LAB_INVENTORY, REPO, run_module, run_playbook
from tests.integration.deploying import (
    STATE, cut_after_first_200, guard_evidence, healthy, invocation, main_process_exited, pending, report,
    reset_service, wait_for_the_guard, watch_record, watch_restored, watching)
from tests.integration.interrupting import at_task, interrupted, kill_controller
from tests.integration.gateway_lab import PORT, Load, all_ready, gateway, group_inventory, host_inventory, workers
from tests.integration.labhost import LabHost, labctl

pytestmark = pytest.mark.xdist_group("server_group")

NODES = ("ct200", "ctg1")
FAULTS = "/etc/inferops-lab/faults.json"
STOP_HOOK = "/etc/systemd/system/sglang.service.d/50-stop-hook.conf"
# smg's port for this test (the gateway and tune tests, one xdist group, hold gateway_lab.PORT).
GATEWAY_PORT = PORT + 2


@pytest.fixture(scope="module")
def group(lab, tmp_path_factory):
    """ct200 and ctg1 up, with no service, on their lab addresses (the gateway reaches rank 0
    there); the group's inventory beside the lab's."""
    labctl("up", "ctg1:blackwell")
    hosts = [LabHost(name) for name in NODES]
    placed = dict((name, (labctl("address", name).stdout.strip(), "blackwell")) for name in NODES)
    folder = tmp_path_factory.mktemp("group")
    (folder / "group.yml").write_text(group_inventory(placed, NODES, "grp_a"))
    for host in hosts:
        reset_service(host)
    try:
        yield {"hosts": hosts, "placed": placed, "dir": folder, "inventory": str(folder / "group.yml")}
    finally:
        labctl("mend", "ctg1", check=False)   # (a test that failed between its cut and its mend)
        for host in hosts:
            reset_service(host)
        labctl("down", "ctg1")


def run(group, playbook, limit="grp_a", check=False, inventory=None, more=(), **extra):
    """The playbooks' default batches (sglang_serial 1): the group counts as one host, whole in
    one batch. `more`: inventory sources after the group's."""
    return run_playbook("playbooks/%s.yml" % playbook, limit=limit,
                        inventory=(LAB_INVENTORY, inventory or group["inventory"]) + tuple(more),
                        extra_vars=extra or None, check_diff=check)


def exec_start(host) -> str:
    return host.show("sglang.service", "ExecStart")["ExecStart"]


def test_a_server_group_deploys_switches_and_rolls_back_as_one(group):
    """One test, so the group is built and started once (the steps build on each other)."""
    face, peer = group["hosts"]

    # First deploy: both nodes, the same argv but the rank; rank 0 serves the API, the other
    # answers /health with SGLang's stand-in 200 and runs its 8 ranks.
    proc = run(group, "deploy_nextn")
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert [report(h)["outcome"] for h in (face, peer)] == ["deployed", "deployed"]
    assert "--node-rank 0" in exec_start(face) and "--node-rank 1" in exec_start(peer)
    assert all("--nnodes 2" in exec_start(h) and "--tp-size 16" in exec_start(h) for h in (face, peer))
    assert healthy(face) and healthy(peer)
    assert "fired up and ready" in face.journal("sglang.service")
    assert "fired up" not in peer.journal("sglang.service")
    # (The kernel's name of a process titled sglang::scheduler_TP<i>: its first 15 bytes.)
    assert peer.run("pgrep -c -x 'sglang::schedul'", check=False).stdout.strip() == "8"
    assert api_status(face) == 200 and api_status(peer) == 404

    # Half the group: refused by name before anything changes.
    before = [invocation(h) for h in (face, peer)]
    proc = run(group, "deploy", limit="ct200", sglang_variant="dflash")
    assert proc.returncode != 0
    assert "server group grp_a: ctg1 (rank 1) not in this run" in proc.stdout, proc.stdout[-3000:]
    assert [invocation(h) for h in (face, peer)] == before and "# variant nextn," in face.run(
        ["cat", "/etc/systemd/system/sglang.service"]).stdout

    # A node with another release (its build settings differ: no DDTree patches): refused by name
    # before any node builds or changes.
    other = group["dir"] / "other-release.yml"
    other.write_text(json.dumps({"sglang_hosts": {"hosts": {"ctg1": {"sglang_build_patches": []}}}}))
    proc = run(group, "deploy", more=[str(other)], sglang_variant="dflash")
    assert proc.returncode != 0 and "server group grp_a: its nodes would run different releases" in " ".join(
        proc.stdout.split()), proc.stdout[-3000:]
    assert "Build the release" not in proc.stdout and [invocation(h) for h in (face, peer)] == before

    # Check mode, beside a host on its own (ct129, whatever it holds: a release to build is said,
    # not checked): the default batches (sglang_serial 1) count the group as one host, so ct129
    # is one batch and the group, whole, the next; what each node would write and restart, and
    # nothing changes.
    proc = run(group, "deploy", limit="grp_a,ct129", check=True, sglang_variant="dflash")
    assert proc.returncode == 0 and "--node-rank 1" in proc.stdout, proc.stdout[-4000:]
    assert proc.stdout.count("PLAY [Deploy SGLang (dflash)]") == 2, proc.stdout[-4000:]
    assert [invocation(h) for h in (face, peer)] == before

    # The group switch behind the real smg, whose one worker is rank 0 (the other node has no
    # API): both nodes change, only rank 0 is drained and put back, and the server serves DFLASH
    # from it; the fleet summary says it on one line. Then rollback.yml, behind the gateway too,
    # restores the group's known-good (NEXTN) on both nodes, and rank 0 alone goes back.
    face_url = "http://%s:30000" % group["placed"]["ct200"][0]
    with gateway({"ct200": group["placed"]["ct200"][0]}, group["dir"] / "smg.log", port=GATEWAY_PORT) as url:
        behind = group["dir"] / "gateway.yml"
        behind.write_text(group_inventory(group["placed"], NODES, "grp_a", gateway=url))
        proc = run(group, "deploy", inventory=str(behind), sglang_variant="dflash")
        assert proc.returncode == 0, proc.stdout[-4000:]
        assert "grp_a (ct200, ctg1)  blackwell  nextn -> dflash  deployed" in proc.stdout, proc.stdout[-2000:]
        assert [report(h)["outcome"] for h in (face, peer)] == ["deployed", "deployed"]
        assert all(invocation(h) != old for h, old in zip((face, peer), before))
        assert healthy(face) and healthy(peer)
        assert report(face)["gateway"]["rejoined"]["msg"].endswith("back in rotation"), report(face)["gateway"]
        # Rank 0's confirmation is the group's: node 1's guard, held by its own, ends with it.
        peer.wait_for(lambda: not pending(peer), 30, 0.2, "node 1's guard to end with rank 0's confirmation")
        assert all(not call or call.get("skipped") for call in report(peer)["gateway"].values()), report(peer)
        assert workers(url) == {face_url: (True, "ready")}

        proc = run(group, "rollback", inventory=str(behind))
        assert proc.returncode == 0, proc.stdout[-4000:]
        assert all(variant(h) == "nextn" for h in (face, peer)) and healthy(face) and healthy(peer)
        assert workers(url) == {face_url: (True, "ready")}
        # Each node's watch of DFLASH (on by default) ended before any node stopped: a node stopped
        # while the other's was watched would fail that one's ranks, and DFLASH would be on record
        # as failed (a later deploy of it not tried again).
        for host in (face, peer):
            ended = watch_record(host)
            assert (ended["variant"], ended["outcome"]) == ("dflash", "superseded"), ended
            assert "a rollback of the server group began at" in ended["ended_why"], ended
            assert not rolled_back_records(host), rolled_back_records(host)

    # A node that fails to load (node 1's rank 8 runs out of memory under DDTree): rank 0 waits
    # for it in the KV pool's all-reduce; the whole group rolls back to NEXTN, and rank 0's
    # cause is node 1's. Rank 0's node has a stop hook of its admins' (its old ranks serve the
    # group's store 4 s into their stop): every node stops before any starts, or node 1, stopped
    # at once, would start and join the old group, and die with it (a child_died in init_parallel).
    with stop_hook(face):
        rolled_back(group, {"rank_error": {"phase": "load_weights", "rank": 8, "error": "cuda_oom"}})
    assert report(peer)["cause"] == "cuda_oom", report(peer)["diagnosis"]
    assert report(face)["cause"] == "group_node_failed", report(face)["diagnosis"]
    assert "server group grp_a: ctg1 (rank 1) rolled back (cuda_oom)" in report(face)["diagnosis"]

    # A node that never joins (its launcher hangs before its ranks start): every rank of rank 0
    # waits in distributed init; caught as stalls, the node that did not join is named.
    rolled_back(group, {"stall": "launch"})
    said = " ".join(report(face)["diagnosis"].split())
    assert "ctg1 (rank 1) did not join distributed init" in said, said
    assert "Init parallel begin." in report(face)["diagnosis"]

    # A peer whose network is cut after the start (off the lab network; its processes run on, the
    # controller still reaches it): rank 0 loses its health in the settle window, node 1 its link
    # to rank 0. Both roll back, and the cause is node 1's link. The known-good cannot meet its
    # ranks either while the link is cut: the rollback says so, its files stay on both nodes.
    cut_in_the_settle_window(group)
    assert report(peer)["cause"] == "link_lost", report(peer)["diagnosis"]
    said = " ".join(report(face)["diagnosis"].split())
    assert report(face)["cause"] == "group_node_failed" and "ctg1 (rank 1) lost its link to rank 0 at " in said, said
    assert all(variant(h) == "nextn" for h in (face, peer))
    # (On each node's record, but not the configuration's fault: the next deploy tries it again.)
    records = rolled_back_records(peer)
    assert [(r["variant"], r.get("retry")) for r in records if r["cause"] == "link_lost"] == [("dflash", True)], records
    # While it is cut, a deploy is refused before anything changes, naming the link.
    stalled = [invocation(h) for h in (face, peer)]
    proc = run(group, "deploy", sglang_variant="dflash")
    assert proc.returncode != 0 and "ctg1 (rank 1) cannot reach rank 0 (ct200) at " in proc.stdout, proc.stdout[-3000:]
    assert "ctg1 (rank 1) is not ready to switch" in proc.stdout and [invocation(h) for h in (face, peer)] == stalled
    # Half the group cannot roll back; mended, rollback.yml brings the whole group back.
    proc = run(group, "rollback", limit="ctg1")
    assert proc.returncode != 0 and "ct200 (rank 0) not in this run" in proc.stdout, proc.stdout[-3000:]
    labctl("mend", "ctg1")
    proc = run(group, "rollback")
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert all(variant(h) == "nextn" for h in (face, peer)) and healthy(face) and healthy(peer)

    # status.yml: each node, and which node of which group it is.
    proc = run(group, "status")
    assert proc.returncode == 0 and "node 1 of server group grp_a (ct200, ctg1)" in proc.stdout, proc.stdout[-3000:]


def rolled_back_records(host) -> list:
    """The configurations on the host's record as rolled back (not retried unless asked)."""
    return json.loads(host.run(["python3", "-c", "import glob, json; print(json.dumps([json.load(open(f)) for f in "
                                "glob.glob('/etc/sglang/rolled-back/*.json')]))"]).stdout)


def api_status(host) -> int:
    """/v1/models' status on the node (rank 0's API; another node has none)."""
    return int(host.run(
        "python3 -c \"import urllib.request as u, urllib.error as e\n"
        "r = u.Request('http://127.0.0.1:30000/v1/models', headers={'Authorization': 'Bearer lab-api-key-not-secret'})\n"
        "try: print(u.urlopen(r, timeout=10).status)\nexcept e.HTTPError as x: print(x.code)\"", check=False).stdout)


def variant(host) -> str:
    return host.run(["head", "-2", "/etc/systemd/system/sglang.service"]).stdout.split("# variant ")[1].split(",")[0]


@contextlib.contextmanager
def stop_hook(host, seconds=4):
    """A drop-in of the host's own admins: each stop of the service first runs a hook (here, one
    that takes `seconds`), as a deregistration from a load balancer or a monitor does."""
    host.put(STOP_HOOK, "[Service]\nExecStop=/bin/sleep %d\n" % seconds)
    host.run(["systemctl", "daemon-reload"])
    try:
        yield
    finally:
        host.run(["rm", "-f", STOP_HOOK])
        host.run(["systemctl", "daemon-reload"])


def rolled_back(group, faults):
    """DDTree with `faults` on node 1: both nodes roll back to NEXTN, healthy."""
    face, peer = group["hosts"]
    peer.put(FAULTS, json.dumps(dict(faults, only_algorithm="DDTREE")))
    try:
        # (A 20 s stall floor, not the production 600: the starts are meant to stall. Rank 0's gate
        # waits for node 1 in its all-reduce until then, longer than the 15 s grace, so the host
        # keeps its promise first: node 1's guard sees its new server fail and restores the group,
        # before the controller reads node 1's verdict - on every machine, not only on a loaded
        # one (CI found the rollback after it stopping node 1's restored NEXTN). No speed
        # baseline: the starts fail before a speed is measured.)
        proc = run(group, "deploy_ddtree", sglang_check_fit=False, sglang_retry_rolled_back=True,
                   sglang_service_health_stall=20, sglang_perf_gate={"enabled": False})
    finally:
        peer.put(FAULTS, "{}")
    outcomes = [report(h)["outcome"] for h in (face, peer)]
    assert proc.returncode != 0 and outcomes == ["rolled_back", "rolled_back"], (outcomes, proc.stdout[-4000:])
    back = [(variant(h), healthy(h)) for h in (face, peer)]
    assert back == [("nextn", True), ("nextn", True)], (back, [guard_evidence(h) for h in (face, peer)],
                                                        proc.stdout[-4000:])


def cut_in_the_settle_window(group):
    """Switch the group to DFLASH and cut node 1 off the lab network once rank 0 answered its
    first 200 (a 12 s settle window: the cut lands well inside its first half, so no 200 after
    it can pass the window; rank 0's gate then loses its health in two probes of 5 s)."""
    face, peer = group["hosts"]
    extra = {"sglang_variant": "dflash", "sglang_service_health_settle": 12, "sglang_service_health_stall": 8,
             "sglang_perf_gate": {"enabled": False}}
    proc, after_cut = cut_after_first_200(face, "ctg1", lambda: run(group, "deploy", **extra))
    outcomes = [report(h)["outcome"] for h in (face, peer)]
    assert after_cut is not None and proc.returncode != 0 and outcomes == ["rolled_back", "rolled_back"], (
        outcomes, proc.stdout[-4000:])


# The group's switches with the controller gone: the production clock (the host's own judgement
# brings the known-good back within seconds), or a short one where the deadline is what acts.
# (A grace of 5 s: what the rows show is the group's restore, not the production grace, 15 s.)
GONE = {"sglang_variant": "dflash", "sglang_perf_gate": {"enabled": False}, "sglang_retry_rolled_back": True,
        "sglang_service_health_timeout": 1800, "sglang_guard_margin": 300, "sglang_service_health_settle": 12,
        "sglang_guard_grace": 5}
# (Rank 0's deadline 55 s after its arm: nobody confirms it. Its gate passes before, or, on a loaded
# machine, fails at its 50 s and rank 0's follower restores the group a grace later. With a deadline
# of 30 s, the row's own steps between the kill and node 1's hold - two reads and an ad-hoc run -
# once came after it on two busy cores: the group had restored before node 1 was held.)
SHORT_DEADLINE = dict(GONE, sglang_service_health_timeout=50, sglang_guard_margin=2, sglang_service_health_settle=3)
# The promise: a failed new server replaced within 90 s of the kill or of the failure.
REPLACED_WITHIN_S = 90


def serving_nextn(group):
    face, peer = group["hosts"]
    if not all(h.run("test -e /etc/systemd/system/sglang.service", check=False).returncode == 0 and
               variant(h) == "nextn" and healthy(h) and not pending(h) for h in (face, peer)):
        proc = run(group, "deploy_nextn")
        assert proc.returncode == 0, proc.stdout[-3000:]
        # (Rank 0's confirmation is the group's: node 1's guard ends with it.)
        try:
            peer.wait_for(lambda: not pending(peer), 30, 0.2, "node 1's guard to end with rank 0's confirmation")
        except AssertionError as exc:
            raise AssertionError("%s\n%s\n%s" % (exc, guard_evidence(peer), guard_evidence(face)))
    for host in (face, peer):
        host.run("rm -f %sguard.json %srolled-back/*.json /run/inferops-sglang/deploy.lock" % (STATE, STATE))


def killed_while_the_gate_waits(group, extra):
    """The group's switch to DFLASH, its controller killed (as its machine dies) once both nodes
    restarted and the gate waits: both nodes' switches pending, in their gate."""
    face, peer = group["hosts"]
    interrupted(face, at_task("Gate on health"), kill_controller, "deploy", extra, limit="grp_a",
                inventory=(LAB_INVENTORY, group["inventory"]))
    switches = [json.loads(h.run(["cat", STATE + "pending.json"]).stdout) for h in (face, peer)]
    assert [s["phase"] for s in switches] == ["gate", "gate"], switches
    return switches


def restored_as_one(group, reasons):
    """Both nodes' guards restored NEXTN, healthy, nothing pending; their results, in rank order."""
    try:
        results = [wait_for_the_guard(host, 180) for host in group["hosts"]]
    except AssertionError as exc:
        raise AssertionError("%s\n--- %s's guard:\n%s" % (exc, group["hosts"][1].name, guard_evidence(group["hosts"][1])))
    for host, result, allowed in zip(group["hosts"], results, reasons):
        assert result["reason"] in allowed and (result["restored"], result["healthy"]) == ("nextn", True), (
            host.name, result, guard_evidence(host))
    assert all(variant(h) == "nextn" and healthy(h) for h in group["hosts"])
    return results


def test_a_node_that_dies_with_the_controller_gone_makes_the_whole_group_restore(group):
    """Node 1's server dies while the gate waits and no controller is there: its guard restores
    it, and tells rank 0's, which restores the group; every node stops before any starts."""
    peer = group["hosts"][1]
    serving_nextn(group)
    killed_while_the_gate_waits(group, GONE)
    died = time.time()
    peer.run(["systemctl", "kill", "--signal=SIGKILL", "sglang.service"])
    at_face, at_peer = restored_as_one(group, (("group", "follow"), ("follow", "group")))
    assert "ctg1 (rank 1)" in at_face["why"] or at_face["reason"] == "follow", at_face
    assert at_peer["group_barrier"] == "rank 0 said start", at_peer
    back = max(r["time"] + r["seconds"] for r in (at_face, at_peer)) - died
    print("\nnode 1 died -> the group healthy on NEXTN again: %.1f s (%s)" % (back, at_face["why"]))
    assert back < REPLACED_WITHIN_S, (at_face, at_peer)


def test_a_group_whose_controller_died_between_its_two_nodes_confirmations_restores_as_one(group):
    """Node 1 confirmed (held, as the controller confirms it), rank 0 not: rank 0's guard restores
    at its deadline and tells node 1's, which its confirmation only held; a new release never
    runs on half the group."""
    serving_nextn(group)
    config_id = killed_while_the_gate_waits(group, SHORT_DEADLINE)[1]["config_id"]
    held = run_module("ctg1", "inferops.sglang.sglang_guard", {"state": "disarmed", "hold": True, "config_id": config_id},
                      inventory=(group["inventory"],))
    assert held.get("changed") and held["pending"]["phase"] == "held", held
    at_face, at_peer = restored_as_one(group, (("deadline", "follow"), ("group",)))
    assert at_peer["why"].startswith("ct200 (rank 0)'s guard restores the server group"), at_peer
    print("\nrank 0 unconfirmed -> the group restored at its deadline: %s" % at_face["why"])


# The group's watch: a probe each 2 s (the production interval is 10 s).
WATCHED = {"sglang_variant": "dflash", "sglang_perf_gate": {"enabled": False}, "sglang_retry_rolled_back": True,
           "sglang_watch_duration": 600, "sglang_watch_interval": 2}


def test_a_peer_node_that_dies_minutes_into_serving_is_named_by_the_watch_and_the_group_restores_as_one(group, lab):
    """DFLASH on the group passes its gates and is watched by every node's guard; minutes into
    serving, node 1's server dies (its processes killed, as a GPU fallen off the bus leaves
    them). Rank 0's TP0 loses its gloo peer at once and its server exits; the nodes' watches,
    linked, restore NEXTN on the whole group, each node stopped before any starts, with no
    controller. Behind the real smg (its retries on) with ct129 (NEXTN) beside rank 0, under a
    bounded load: no request fails but those in flight on rank 0."""
    face, peer = group["hosts"]
    serving_nextn(group)
    placed = dict(group["placed"], ct129=(labctl("address", "ct129").stdout.strip(), "a6000"))
    plain = group["dir"] / "with-ct129.yml"
    plain.write_text(host_inventory({"ct129": placed["ct129"]}))
    proc = run(group, "deploy_nextn", limit="ct129", inventory=str(plain))
    assert proc.returncode == 0, proc.stdout[-3000:]
    addresses = {"ct200": placed["ct200"][0], "ct129": placed["ct129"][0]}
    with gateway(addresses, group["dir"] / "smg-watch.log", port=GATEWAY_PORT, retries=True) as url:
        behind = group["dir"] / "watch-gateway.yml"
        behind.write_text(group_inventory(placed, NODES, "grp_a", gateway=url))
        with Load(url) as load:
            proc = run(group, "deploy", inventory=str(behind), **WATCHED)
            assert proc.returncode == 0, proc.stdout[-4000:]
            for host in (face, peer):   # (node 1's watch begins once rank 0's guard confirmed the group)
                host.wait_for(lambda h=host: watching(h, "dflash"), 30, 0.2, "%s's watch" % host.name)
            died = time.time()
            peer.run(["systemctl", "kill", "--signal=SIGKILL", "sglang.service"])
            results = [host.wait_for(lambda h=host: watch_restored(h), 120, 0.5, "%s's watch's restore" % host.name)
                       for host in (face, peer)]
            face.wait_for(lambda: all_ready(url, 2), 60, 0.5, "rank 0 back in rotation")
    at_face, at_peer = results
    for host, result in zip((face, peer), results):
        assert (result["restored"], result["healthy"]) == ("nextn", True), (host.name, result, guard_evidence(host))
    assert all(variant(h) == "nextn" and healthy(h) for h in (face, peer))
    assert at_peer["group_barrier"] == "rank 0 said start", at_peer
    # Rank 0 names its peer's death from its own journal (gloo's error on TP0), or hears node 1's first.
    assert (at_face["breach"]["cause"], at_face["breach"]["rank"]) == ("peer_died", "TP0") or \
        at_face["why"].startswith("ctg1 (rank 1) restores"), at_face
    assert "Connection closed by peer [%s]:" % placed["ctg1"][0] in face.journal("sglang.service")
    gone = min(main_process_exited(face, died - 1) or float("inf"), at_face["pending"]["gateway"]["drained_at"])
    late = load.failed_after(gone)
    named_in = min(r["time"] for r in results) - died
    back_in = max(r["time"] + r["seconds"] for r in results) - died
    print("\na peer node that dies in a server group -> named by the watch: %.1f s (%s); the group healthy on NEXTN "
          "again: %.1f s; through smg: sent %d, failed %d, sent after rank 0 failed and failed %d"
          % (named_in, at_face["why"], back_in, load.sent, load.failed, len(late)))
    with open(REPO / "build" / "watch-rows.tsv", "a") as table:
        table.write("a peer node that dies in a server group\t%s\t%.1f\t%.1f\t%d/%d\n" % (
            at_face["breach"]["cause"], named_in, back_in, load.failed, load.sent))
    assert not late and load.sent > 20, (load.sent, load.failed, late[:3])
