"""The lab: simulated GPU hosts as podman containers running real systemd.

    labctl.py image                  build (or reuse) the lab image, print its name
    labctl.py up [HOST[:CLASS] ...]  start one container per host (default: $LAB_HOSTS,
                                     else "ct129:a6000 ct200:blackwell")
    labctl.py down [--all|--matching P] remove this set's containers (--all: every container
                                     that carries the lab label; --matching: the sets whose
                                     prefix starts with P, a test run's own)
    labctl.py status                 one line per lab container
    labctl.py address [HOST]         HOST's address on the lab network (no HOST: the network,
                                     its subnet and the controller's address on it)
    labctl.py inventory [--ssh [--no-hosts]|--network]
                                     YAML inventory of the running lab hosts (--ssh: reached
                                     over SSH, as production hosts are, not podman exec;
                                     --no-hosts: only those connection settings, a last -i
                                     source beside inventories that name the hosts;
                                     --network: over SSH at their addresses, each host's sshd
                                     started, for a controller on the lab network: the EE)
    labctl.py occupy HOST --gpus 0,1 --mib N [--no-unit]
                                     start another GPU tenant in HOST that holds N MiB on
                                     each of those GPUs (under a transient unit, or none)
                                     until `release`; fails as CUDA does when it is not free
    labctl.py release HOST           stop HOST's tenants and reset its GPUs: held memory comes back
    labctl.py reset HOST...          remove each HOST's SGLang service, its state and its faults
                                     (the releases built there stay): a host as before a deploy
    labctl.py cut HOST               cut HOST off the lab network (podman network disconnect: its
                                     link to the other hosts is gone, its processes run on; the
                                     controller still reaches it, as over a management network)
    labctl.py mend HOST              connect it again, at the address it had

GPU memory is shared state on a host (sglang_sim/gpu.py): every process that uses a GPU
(the stand-in, a tenant) holds its memory while it runs, and the lab's nvidia-smi reports
what is held, and by whom.

INFEROPS_LAB_PREFIX (default "inferops-") names a set of hosts: its containers are
PREFIX + host, so parallel test workers run the same host names side by side. Each set has a
podman network of its own, PREFIX + "net": --internal (no way out), a /24 of 198.18.0.0/15 (the
benchmarking range), on which its hosts reach each other and the controller (the gateway,
.1) reaches them; `down` removes it with the set.
INFEROPS_LAB_TIMINGS (default lab/sim_defaults.json, the bench's clock) is the stand-in's
start-up timings file `up` gives every host of the set.

Only the GPUs are simulated: the image is plain Debian with systemd and journald, built
offline with debootstrap from the mirror apt already uses, and cached outside the
repository keyed by its inputs (a second build takes seconds).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

LAB_DIR = Path(__file__).resolve().parent
LABEL = "io.inferops.lab"
CLASS_LABEL = "io.inferops.lab.class"
# A set of lab hosts: its containers are named PREFIX + host. Parallel test workers each
# get a set of their own (INFEROPS_LAB_PREFIX=inferops-test-gw0-), so the same host names
# (ct129, ct200) never meet in one container.
PREFIX = os.environ.get("INFEROPS_LAB_PREFIX", "inferops-")
SET_LABEL = "io.inferops.lab.set"
# The set's network: --internal (no way out), a /24 of 198.18.0.0/15 (the benchmarking range,
# never 10/8, 172.16/12 or 192.168/16); the controller is its gateway, .1.
NETWORK = PREFIX + "net"
SUBNETS = ["198.18.%d.0/24" % n for n in range(1, 255)]
SUITE = "bookworm"
# Everything a lab host needs: systemd/journald, Python for Ansible and the release
# venvs, patch and git for sglang_build, iproute2/procps for port and process checks,
# sshd for reaching a host the way production does (`labctl inventory --ssh`).
PACKAGES = (
    "systemd", "systemd-sysv", "dbus", "python3", "python3-venv", "iproute2",
    "procps", "patch", "git", "ca-certificates", "openssh-server",
)
# Bump when the way the base rootfs is made changes (the cache key includes it).
RECIPE_VERSION = "4"
DEFAULT_HOSTS = "ct129:a6000 ct200:blackwell"
DEFAULT_CLASS = "blackwell"
BOOT_TIMEOUT = 60.0


class LabError(RuntimeError):
    """A lab step failed; the message says which and why."""


def cache_dir() -> Path:
    path = Path(os.environ.get("INFEROPS_LAB_CACHE", "/var/cache/inferops-lab"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def podman_env() -> dict:
    env = dict(os.environ)
    env["CONTAINERS_CONF"] = str(LAB_DIR / "containers.conf")
    return env


def podman(*args: str, check: bool = True, stdin=None) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        ["podman", *args], env=podman_env(), stdin=stdin,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=stdin is None, check=False,
    )
    if check and proc.returncode != 0:
        err = proc.stderr if isinstance(proc.stderr, str) else proc.stderr.decode(errors="replace")
        raise LabError(f"podman {' '.join(args[:3])} failed (exit {proc.returncode}): {err.strip()}")
    return proc


def apt_mirror() -> str:
    """The Debian mirror apt already uses (read at run time, never stored in the repo)."""
    sources = [Path("/etc/apt/sources.list")]
    sources += sorted(Path("/etc/apt/sources.list.d").glob("*.sources"))
    sources += sorted(Path("/etc/apt/sources.list.d").glob("*.list"))
    deb822 = re.compile(r"^URIs:\s*(\S+)", re.M)
    one_line = re.compile(r"^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+" + SUITE + r"\s", re.M)
    for src in sources:
        if not src.is_file():
            continue
        text = src.read_text()
        for block in text.split("\n\n"):
            match = deb822.search(block)
            if match and re.search(r"^Suites:.*\b" + SUITE + r"\b", block, re.M) \
                    and "security" not in match.group(1):
                return match.group(1)
        match = one_line.search(text)
        if match and "security" not in match.group(1):
            return match.group(1)
    raise LabError("no Debian mirror for %s found in apt's sources; configure apt first" % SUITE)


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part)
        h.update(b"\0")
    return h.hexdigest()[:16]


def base_key() -> str:
    return _digest(SUITE.encode(), " ".join(PACKAGES).encode(), RECIPE_VERSION.encode())


def overlay_files() -> list[tuple[str, Path]]:
    """(path in image, file on disk) for everything the lab adds to the base."""
    files = []
    root = LAB_DIR / "image" / "rootfs"
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        files.append(("/" + str(path.relative_to(root)), path))
    sim = LAB_DIR / "sglang_sim"
    if sim.is_dir():
        for path in sorted(p for p in sim.rglob("*.py") if "__pycache__" not in p.parts):
            files.append(("/opt/inferops-lab/sglang_sim/" + str(path.relative_to(sim)), path))
        for path in sorted(sim.rglob("*.json")):
            files.append(("/opt/inferops-lab/sglang_sim/" + str(path.relative_to(sim)), path))
    return files


def image_key() -> str:
    parts = [base_key().encode()]
    for dest, path in overlay_files():
        parts += [dest.encode(), oct(path.stat().st_mode & 0o777).encode(), path.read_bytes()]
    return _digest(*parts)


def image_exists(name: str) -> bool:
    return podman("image", "exists", name, check=False).returncode == 0


def build_rootfs_tar(tar_path: Path, packages: tuple = PACKAGES) -> None:
    """A Debian root file system with `packages` (and what they depend on), as a tar."""
    work = Path(tempfile.mkdtemp(prefix="rootfs-", dir=cache_dir()))
    try:
        cmd = ["debootstrap", "--variant=minbase", "--include=" + ",".join(packages),
               SUITE, str(work), apt_mirror()]
        print("lab: debootstrap %s (a few minutes, once per package list)" % SUITE, flush=True)
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
        if proc.returncode != 0:
            raise LabError("debootstrap failed:\n" + proc.stdout[-3000:])
        _prepare_rootfs(work)
        tmp = tar_path.with_suffix(".partial")
        subprocess.run(["tar", "-C", str(work), "-cf", str(tmp), "."], check=True)
        tmp.rename(tar_path)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _prepare_rootfs(root: Path) -> None:
    # Each container gets its own machine-id at boot; a shared one would merge journals.
    (root / "etc/machine-id").write_text("")
    dbus_id = root / "var/lib/dbus/machine-id"
    if dbus_id.exists() or dbus_id.is_symlink():
        dbus_id.unlink()
    for stale in (root / "var/cache/apt/archives").glob("*.deb"):
        stale.unlink()
    # sshd runs per connection (`sshd -i` through podman exec), never as a daemon.
    for unit in ("ssh.service", "ssh.socket", "sshd.service"):
        masked = root / "etc/systemd/system" / unit
        if masked.exists() or masked.is_symlink():
            masked.unlink()
        masked.symlink_to("/dev/null")


def ensure_base() -> str:
    name = "localhost/inferops-lab-base:" + base_key()
    if image_exists(name):
        return name
    tar_path = cache_dir() / ("rootfs-%s.tar" % base_key())
    if not tar_path.exists():
        build_rootfs_tar(tar_path)
    print("lab: importing %s" % name, flush=True)
    with open(tar_path, "rb") as fh:
        podman("import", "--change", "CMD=/sbin/init", "-", name, stdin=fh)
    return name


CURRENT_IMAGE = "localhost/inferops-lab:current"   # what molecule's platforms name


def ensure_image() -> str:
    """The lab image (the cached base plus the lab's own files, keyed by both), also
    tagged `current`."""
    name = "localhost/inferops-lab:" + image_key()
    if not image_exists(name):
        build_image(name)
    podman("tag", name, CURRENT_IMAGE)
    return name


def build_image(name: str) -> None:
    base = ensure_base()
    with tempfile.TemporaryDirectory(prefix="lab-ctx-", dir=cache_dir()) as ctx:
        ctx_path = Path(ctx)
        overlay = ctx_path / "overlay.tar"
        with tarfile.open(overlay, "w") as tar:
            for dest, path in overlay_files():
                info = tar.gettarinfo(str(path), arcname=dest.lstrip("/"))
                info.uid = info.gid = 0
                info.uname = info.gname = "root"
                with open(path, "rb") as fh:
                    tar.addfile(info, fh)
        (ctx_path / "Containerfile").write_text(
            "FROM %s\nADD overlay.tar /\nLABEL %s=image\nCMD [\"/sbin/init\"]\n" % (base, LABEL))
        print("lab: building %s" % name, flush=True)
        podman("build", "--pull=never", "-q", "-t", name, str(ctx_path))
    _prune_old_images(keep=name)


def _prune_old_images(keep: str) -> None:
    repo = keep.split(":")[0]
    out = podman("images", "--format", "{{.Repository}}:{{.Tag}}", "--filter",
                 "reference=" + repo, check=False).stdout.split()
    for old in out:
        if old not in (keep, CURRENT_IMAGE) and not _image_in_use(old):
            podman("rmi", old, check=False)


def _image_in_use(name: str) -> bool:
    out = podman("ps", "-a", "--filter", "ancestor=" + name, "--format", "{{.ID}}", check=False)
    return bool(out.stdout.strip())


def parse_hosts(specs: list[str]) -> list[tuple[str, str]]:
    classes = load_classes()["classes"]
    hosts = []
    for spec in specs:
        name, _sep, cls = spec.partition(":")
        cls = cls or DEFAULT_CLASS
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,40}", name):
            raise LabError("bad lab host name %r: use lower-case letters, digits and '-'" % name)
        if cls not in classes:
            raise LabError("unknown host class %r for %s: choose one of %s"
                           % (cls, name, ", ".join(sorted(classes))))
        hosts.append((name, cls))
    return hosts


def load_classes() -> dict:
    return json.loads((LAB_DIR / "gpu_classes.json").read_text())


def gpu_inventory(cls: str, count: int | None = None) -> dict:
    """The GPU file one host's fake nvidia-smi reads: what that class's cards report."""
    data = load_classes()
    spec = data["classes"][cls]
    gpus = []
    for index in range(count if count is not None else spec["count"]):
        gpus.append({
            "index": index,
            "name": spec["name"],
            "uuid": "%s%04x-%012x" % (spec["uuid_prefix"], index, 0x1d2e3f4a5b60 + index),
            "pci_bus_id": spec["pci_bus_ids"][index % len(spec["pci_bus_ids"])],
            "memory_total_mib": spec["memory_total_mib"],
            "memory_used_mib": spec["memory_reserved_mib"],
            "compute_cap": spec["compute_cap"],
            "power_limit_w": spec["power_limit_w"],
        })
    return {"driver_version": data["driver_version"], "cuda_version": data["cuda_version"],
            "host_class": cls, "gpus": gpus}


def container_state(name: str) -> dict | None:
    proc = podman("container", "inspect", name, check=False)
    if proc.returncode != 0:
        return None
    info = json.loads(proc.stdout)[0]
    return {"running": info["State"]["Running"], "image": info.get("ImageName", ""),
            "id": info["Id"], "labels": info["Config"].get("Labels") or {},
            "networks": sorted((info.get("NetworkSettings") or {}).get("Networks") or {})}


def network_info(name: str) -> dict | None:
    """{subnet, gateway} of a podman network, or None when there is none of that name."""
    proc = podman("network", "inspect", name, check=False)
    if proc.returncode != 0:
        return None
    subnets = json.loads(proc.stdout)[0].get("subnets") or [{}]
    return {"subnet": subnets[0].get("subnet"), "gateway": subnets[0].get("gateway")}


def used_subnets() -> set:
    names = podman("network", "ls", "--format", "{{.Name}}").stdout.split()
    return {(network_info(name) or {}).get("subnet") for name in names}


def ensure_network() -> str:
    """This set's lab network, created on the first free /24 (sets starting side by side may
    race for one: podman refuses a subnet in use, and the next is tried)."""
    if network_info(NETWORK):
        return NETWORK
    used = used_subnets()
    for subnet in SUBNETS:
        if subnet in used:
            continue
        made = podman("network", "create", "--internal", "--subnet", subnet, "--label", "%s=1" % LABEL,
                      "--label", "%s=%s" % (SET_LABEL, PREFIX), NETWORK, check=False)
        if made.returncode == 0 or network_info(NETWORK):
            return NETWORK
    raise LabError("no free /24 left in 198.18.0.0/16 for the lab network %s" % NETWORK)


def _filters(every_set: bool, matching: str | None) -> list[str]:
    filters = ["--filter", "label=%s=1" % LABEL]
    if not every_set and matching is None:
        filters += ["--filter", "label=%s=%s" % (SET_LABEL, PREFIX)]
    return filters


def lab_networks(every_set: bool = False, matching: str | None = None) -> list[str]:
    """This set's network, every set's, or (matching) those of the sets whose prefix starts
    with `matching`: a set's network is named PREFIX + "net"."""
    names = podman("network", "ls", *_filters(every_set, matching), "--format", "{{.Name}}").stdout.split()
    return sorted(name for name in names if matching is None or name.startswith(matching))


def host_address(name: str) -> str:
    """A lab host's address on its set's network."""
    out = podman("inspect", PREFIX + name, "--format",
                 '{{(index .NetworkSettings.Networks "%s").IPAddress}}' % NETWORK, check=False)
    if out.returncode != 0 or not out.stdout.strip() or out.stdout.strip() == "<no value>":
        raise LabError("%s is not up on %s (labctl up %s)" % (name, NETWORK, name))
    return out.stdout.strip()


def start_host(name: str, cls: str, image: str) -> str:
    ctr = PREFIX + name
    state = container_state(ctr)
    labels = state["labels"] if state else {}
    if state and state["running"] and state["image"] == image and labels.get(CLASS_LABEL) == cls \
            and labels.get(SET_LABEL) == PREFIX and state["networks"] == [NETWORK] \
            and boot_state(ctr) in ("running", "degraded"):
        outcome = "kept"
    else:
        if state:
            remove_container(ctr)
        podman("run", "-d", "--name", ctr, "--hostname", name,
               "--label", "%s=1" % LABEL, "--label", "%s=%s" % (CLASS_LABEL, cls),
               "--label", "%s=%s" % (SET_LABEL, PREFIX),
               # A real host's root may read every process's file descriptors (ss -ltnp,
               # the health gate's port owner); podman drops that capability by default.
               "--cap-add=SYS_PTRACE",
               "--systemd=always", "--network", ensure_network(), image, "/sbin/init")
        put_file(ctr, "/etc/inferops-lab/gpus.json", json.dumps(gpu_inventory(cls), indent=1))
        outcome = "started"
    # A kept host gets the clock and the key too: the set may have been started for the
    # bench and be reused by tests (or the other way round), or predate the lab's key.
    put_file(ctr, "/etc/inferops-lab/sim.json", sim_timings().read_text())
    put_file(ctr, "/root/.ssh/authorized_keys", ssh_key().with_suffix(".pub").read_text())
    return outcome


def sim_timings() -> Path:
    """The stand-in's start-up timings: the bench's fixed figures (sim_defaults.json), or a
    shorter clock for tests (INFEROPS_LAB_TIMINGS=lab/sim_tests.json)."""
    path = Path(os.environ.get("INFEROPS_LAB_TIMINGS") or LAB_DIR / "sim_defaults.json")
    if not path.is_file():
        raise LabError("INFEROPS_LAB_TIMINGS names %s, which is not a file" % path)
    return path


def ssh_key() -> Path:
    """The lab's own SSH key (made once, kept with the image cache, never in the repository)."""
    key = cache_dir() / "ssh" / "lab_ed25519"
    if not key.exists():
        key.parent.mkdir(mode=0o700, exist_ok=True)
        proc = subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "inferops-lab",
                               "-f", str(key)], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise LabError("ssh-keygen failed (is openssh-client installed?): " + proc.stderr.strip())
    return key


# `ssh`, the name ansible-core itself loads, not `ansible.builtin.ssh`: ansible-core 2.19 keeps
# the ssh plugin's settings under the short name only, so with the FQCN every fork (one per task
# and host) parses the plugin's documentation again, about 12 ms of controller CPU each.
def ssh_vars() -> list[str]:
    """Inventory lines that reach the lab hosts over SSH with production's connection settings
    (ControlPersist and pipelining from ansible.cfg); the hosts have no network, so the first
    connection runs `sshd -i` in the container through podman exec."""
    proxy = "podman exec -i %h /usr/sbin/sshd -i"
    return ["  vars:",
            "    ansible_connection: ssh",
            "    ansible_user: root",
            "    ansible_ssh_private_key_file: %s" % ssh_key(),
            "    ansible_ssh_common_args: >-",
            "      -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
            "      -o ProxyCommand=\"%s\"" % proxy]


def network_ssh_vars() -> list[str]:
    """Inventory lines for a controller on the lab network (an execution environment's
    container, as on an AWX execution node): SSH to each host's address, no key file (the job
    brings its key: ansible-runner's env/ssh_key)."""
    return ["  vars:",
            "    ansible_connection: ssh",
            "    ansible_user: root",
            "    ansible_ssh_common_args: >-",
            "      -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"]


def start_sshd(ctr: str) -> None:
    """The host's sshd as a production host runs it (ssh.service, listening on port 22); the
    image masks it, as `labctl inventory --ssh` starts one per connection instead."""
    proc = podman("exec", ctr, "sh", "-c", "systemctl unmask -q ssh.service ssh.socket && systemctl start ssh.service"
                  " && systemctl is-active ssh.service", check=False)
    if proc.returncode != 0:
        raise LabError("sshd did not start in %s: %s" % (ctr, (proc.stdout + proc.stderr).strip()[-500:]))


def put_file(ctr: str, path: str, content: str) -> None:
    proc = subprocess.run(
        ["podman", "exec", "-i", ctr, "sh", "-c", 'mkdir -p "$(dirname "$1")" && cat > "$1"',
         "sh", path], input=content, text=True, env=podman_env(), capture_output=True, check=False)
    if proc.returncode != 0:
        raise LabError("writing %s in %s failed: %s" % (path, ctr, proc.stderr.strip()))


def boot_state(ctr: str) -> str:
    proc = podman("exec", ctr, "systemctl", "is-system-running", check=False)
    return (proc.stdout or "").strip() or "unknown"


def wait_booted(ctrs: list[str], timeout: float = BOOT_TIMEOUT) -> dict:
    deadline = time.monotonic() + timeout
    pending = {c: "unknown" for c in ctrs}
    while pending:
        for ctr in list(pending):
            pending[ctr] = boot_state(ctr)
            if pending[ctr] in ("running", "degraded"):
                del pending[ctr]
        if not pending:
            return {}
        if time.monotonic() > deadline:
            return pending
        time.sleep(0.25)
    return {}


def remove_container(ctr: str) -> None:
    if podman("rm", "-f", "-t", "0", ctr, check=False).returncode != 0:
        # A container whose conmon was killed (a session ended under it) needs its
        # runtime state cleaned before podman will remove it.
        podman("container", "cleanup", ctr, check=False)
        podman("rm", "-f", "-t", "0", ctr)


def lab_containers(every_set: bool = False, matching: str | None = None) -> list[str]:
    """This set's containers (INFEROPS_LAB_PREFIX), every lab container of every set, or those
    of the sets whose prefix starts with `matching` (a test run's own: inferops-test-)."""
    fmt = '{{.Names}} {{index .Labels "%s"}}' % SET_LABEL
    out = podman("ps", "-a", *_filters(every_set, matching), "--format", fmt).stdout
    found = [(line.split(" ") + [""])[:2] for line in out.splitlines() if line.strip()]
    return sorted(name for name, label in found if matching is None or label.startswith(matching))


def cmd_up(specs: list[str]) -> int:
    hosts = parse_hosts(specs or os.environ.get("LAB_HOSTS", DEFAULT_HOSTS).split())
    image = ensure_image()
    started = time.monotonic()
    for name, cls in hosts:
        print("lab: %-10s %-9s %s" % (name, cls, start_host(name, cls, image)), flush=True)
    stuck = wait_booted([PREFIX + n for n, _cls in hosts])
    if stuck:
        raise LabError("lab hosts did not finish booting in %ds: %s" % (BOOT_TIMEOUT, stuck))
    print("lab: %d host(s) up in %.1fs (image %s)" % (len(hosts), time.monotonic() - started, image))
    return 0


def cmd_down(names: list[str], every_set: bool = False, matching: str | None = None) -> int:
    """Remove the named lab hosts, or all of this set's (every set's with --all, as after a
    crashed parallel run; with --matching only the sets a test run made); never a container
    without the lab's label."""
    wanted = {PREFIX + name for name in names}
    ctrs = [ctr for ctr in lab_containers(every_set, matching) if not wanted or ctr in wanted]
    for ctr in ctrs:
        remove_container(ctr)
    print("lab: removed %d container(s)%s" % (len(ctrs), (": " + " ".join(ctrs)) if ctrs else ""))
    if not wanted:   # the whole set (or every set): its network goes with it
        for network in lab_networks(every_set, matching):
            podman("network", "rm", "-f", network, check=False)
    return 0


def cmd_address(name: str | None) -> int:
    """A host's address on the lab network; without a host, the network, its subnet and the
    controller's address on it (the gateway)."""
    if name:
        print(host_address(name))
        return 0
    info = network_info(NETWORK)
    if not info:
        raise LabError("no lab network %s (labctl up)" % NETWORK)
    print("%s %s controller %s" % (NETWORK, info["subnet"], info["gateway"]))
    return 0


def cmd_status() -> int:
    for ctr in lab_containers(every_set=True):
        state = container_state(ctr) or {}
        boot = boot_state(ctr) if state.get("running") else "stopped"
        print("%-20s %-10s %s" % (ctr, state.get("labels", {}).get(CLASS_LABEL, "?"), boot))
    return 0


def cmd_inventory(ssh: bool = False, network: bool = False, no_hosts: bool = False) -> int:
    if no_hosts:
        # The connection alone: hosts an inventory of a test's own adds (started later, or in
        # another set) are reached over SSH too, at the lab inventory's ansible_host.
        print("\n".join(["# generated by lab/labctl.py inventory --ssh --no-hosts", "sglang_hosts:"] + ssh_vars()))
        return 0
    groups: dict[str, list[str]] = {}
    for ctr in lab_containers():
        state = container_state(ctr)
        if state and state["running"]:
            groups.setdefault(state["labels"].get(CLASS_LABEL, DEFAULT_CLASS), []).append(
                ctr[len(PREFIX):])
            if network:
                start_sshd(ctr)
    how = ssh_vars() if ssh else network_ssh_vars() if network else []
    lines = ["# generated by lab/labctl.py inventory", "sglang_hosts:"] + how + ["  children:"]
    for cls in sorted(groups):
        lines.append("    %s:" % cls)
        lines.append("      hosts:")
        for host in groups[cls]:
            lines.append("        %s:" % host)
            if network:
                lines.append("          ansible_host: %s" % host_address(host))
            elif ssh:
                # The container's name, written out as a production inventory writes an
                # address: the lab inventory's templated one costs a lookup at each use.
                lines.append("          ansible_host: %s%s" % (PREFIX, host))
    print("\n".join(lines))
    return 0


TENANT_UNIT = "inferops-tenant-%d.service"
TENANT_STATUS = "/run/inferops-lab/tenant-%d.status"


def cmd_occupy(name: str, gpus: str, mib: int, unit: bool = True) -> int:
    """Start a CUDA-like tenant in the host that holds `mib` MiB on each of `gpus` until
    `release`: under a transient unit (systemd-run), or with --no-unit outside any."""
    ctr = PREFIX + name
    number = int(time.time() * 1000) % 1000000
    status = TENANT_STATUS % number
    tenant = "PYTHONPATH=/opt/inferops-lab exec python3 -m sglang_sim.tenant --gpus %s --mib %d --status %s" % (
        gpus, mib, status)
    if unit:
        cmd = ["systemd-run", "--quiet", "--collect", "--unit", TENANT_UNIT % number, "sh", "-c", tenant]
    else:
        # setsid: the tenant outlives this exec, in no unit of the host's systemd.
        cmd = ["sh", "-c", "setsid sh -c %s </dev/null >/dev/null 2>&1 &" % shlex.quote(tenant)]
    podman("exec", ctr, *cmd)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        said = podman("exec", ctr, "cat", status, check=False).stdout.strip()
        if said.startswith("holding "):
            where = (TENANT_UNIT % number) if unit else "no unit"
            print("lab: %s: PID %s holds %d MiB on GPU %s (%s)" % (name, said.split()[1], mib, gpus, where))
            return 0
        if said:
            raise LabError("%s: the tenant could not take the memory: %s" % (name, said))
        time.sleep(0.2)
    raise LabError("%s: the tenant did not start within 30 s" % name)


def cmd_release(name: str) -> int:
    """Stop every tenant `occupy` started in the host; their memory comes back. Memory that
    gone processes left behind (a lingering hold) comes back too, as after a GPU reset."""
    ctr = PREFIX + name
    podman("exec", ctr, "sh", "-c", "systemctl stop 'inferops-tenant-*.service' 2>/dev/null; "
           "pkill -TERM -f 'sglang_sim[.]tenant'; rm -f /run/inferops-lab/tenant-*.status; "
           "PYTHONPATH=/opt/inferops-lab python3 -c 'from sglang_sim import gpu; gpu.reset()'; true")
    print("lab: %s: tenants released, GPUs reset" % name)
    return 0


# What `reset` runs in a host (the tests reset hosts the same way between scenarios).
# (The host's guard goes too: its timer, its boot unit, and the state folder it reads.)
RESET_SERVICE = ("systemctl disable --now sglang-guard.timer sglang-guard-boot.service 2>/dev/null; "
                 "systemctl stop sglang.service 2>/dev/null; systemctl reset-failed sglang.service 2>/dev/null; "
                 "rm -rf /etc/systemd/system/sglang.service /etc/systemd/system/sglang-guard* /etc/sglang "
                 "/run/inferops-sglang; systemctl daemon-reload; rm -f /etc/inferops-lab/faults.json "
                 "/etc/inferops-lab/crash-now")


def cmd_reset(names: list[str]) -> int:
    for name in names:
        podman("exec", PREFIX + name, "sh", "-c", RESET_SERVICE)
        print("lab: %s: no SGLang service, state or faults (releases kept)" % name)
    return 0


# Where a cut host keeps the address it had on the lab network, for `mend`.
CUT_ADDRESS = "/etc/inferops-lab/cut-address"


def cmd_cut(name: str) -> int:
    """A peer whose network is cut: the host leaves the lab network, so what it sends to the
    others (and they to it) goes nowhere, while its processes and podman exec (the controller's
    way in, as a management network) are untouched."""
    ctr = PREFIX + name
    address = host_address(name)
    put_file(ctr, CUT_ADDRESS, address)
    podman("network", "disconnect", NETWORK, ctr)
    print("lab: %s: cut off %s (it had %s)" % (name, NETWORK, address))
    return 0


def cmd_mend(name: str) -> int:
    """The link back, at the same address (the other hosts and the inventory know it by it)."""
    ctr = PREFIX + name
    proc = podman("exec", ctr, "cat", CUT_ADDRESS, check=False)
    if proc.returncode != 0:
        raise LabError("%s was not cut (labctl cut %s)" % (name, name))
    address = proc.stdout.strip()
    podman("network", "connect", "--ip", address, NETWORK, ctr)
    podman("exec", ctr, "rm", "-f", CUT_ADDRESS)
    print("lab: %s: back on %s at %s" % (name, NETWORK, address))
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("image")
    up = sub.add_parser("up")
    up.add_argument("hosts", nargs="*", help="HOST[:CLASS]; default $LAB_HOSTS")
    down = sub.add_parser("down")
    down.add_argument("hosts", nargs="*", help="HOST; default every host of this set")
    down.add_argument("--all", action="store_true", dest="every_set",
                      help="every set's hosts (parallel test workers' too, and a person's demo hosts)")
    down.add_argument("--matching", metavar="PREFIX",
                      help="the hosts of every set whose prefix starts with PREFIX (make integration: inferops-test-)")
    sub.add_parser("status")
    address = sub.add_parser("address", help="a host's address on the lab network (none: the network and the "
                                             "controller's address on it)")
    address.add_argument("host", nargs="?")
    inventory = sub.add_parser("inventory")
    reach = inventory.add_mutually_exclusive_group()
    reach.add_argument("--ssh", action="store_true",
                       help="reach the hosts over SSH (ControlPersist, pipelining) instead of podman exec")
    reach.add_argument("--network", action="store_true",
                       help="reach the hosts over SSH at their addresses (starts their sshd), for a controller on "
                            "the lab network (an execution environment's container)")
    inventory.add_argument("--no-hosts", action="store_true",
                           help="with --ssh: the connection settings alone (the group sglang_hosts' variables), "
                                "a last -i source beside inventories that name the hosts")
    occupy = sub.add_parser("occupy", help="start a GPU tenant in a host that holds memory until release")
    occupy.add_argument("host")
    occupy.add_argument("--gpus", required=True, help="GPU indices, e.g. 0,1")
    occupy.add_argument("--mib", type=int, required=True, help="MiB to hold on each of them")
    occupy.add_argument("--no-unit", action="store_false", dest="unit", help="run outside any systemd unit")
    release = sub.add_parser("release", help="stop the host's GPU tenants")
    release.add_argument("host")
    reset = sub.add_parser("reset", help="remove the hosts' SGLang service, state and faults (releases stay)")
    reset.add_argument("hosts", nargs="+")
    cut = sub.add_parser("cut", help="cut a host off the lab network (its processes run on)")
    cut.add_argument("host")
    mend = sub.add_parser("mend", help="connect a cut host again, at its address")
    mend.add_argument("host")
    gpus = sub.add_parser("gpus", help="print the GPU file for a class (for tests)")
    gpus.add_argument("cls")
    gpus.add_argument("--count", type=int)
    args = parser.parse_args(argv)
    try:
        if args.cmd == "image":
            print(ensure_image())
            return 0
        if args.cmd == "up":
            return cmd_up(args.hosts)
        if args.cmd == "down":
            return cmd_down(args.hosts, args.every_set, args.matching)
        if args.cmd == "gpus":
            print(json.dumps(gpu_inventory(args.cls, args.count), indent=1))
            return 0
        if args.cmd == "address":
            return cmd_address(args.host)
        if args.cmd == "inventory":
            if args.no_hosts and not args.ssh:
                raise LabError("--no-hosts goes with --ssh (the settings it prints are SSH's)")
            return cmd_inventory(args.ssh, args.network, args.no_hosts)
        if args.cmd == "occupy":
            return cmd_occupy(args.host, args.gpus, args.mib, args.unit)
        if args.cmd == "release":
            return cmd_release(args.host)
        if args.cmd == "reset":
            return cmd_reset(args.hosts)
        if args.cmd in ("cut", "mend"):
            return (cmd_cut if args.cmd == "cut" else cmd_mend)(args.host)
        return cmd_status()
    except LabError as exc:
        print("lab: error: %s" % exc, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
