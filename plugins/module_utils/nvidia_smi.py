# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse `nvidia-smi --query-gpu=... --format=csv` and `--query-compute-apps=...` output
into GPU facts.

Pure Python (no Ansible imports). Accepts output with its header (fields in any order,
units in the header such as `memory.total [MiB]`) or without one when told the fields,
with or without units on the values; `[N/A]` is None.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# What gpu_facts asks for, in this order.
QUERY_FIELDS = ("index", "name", "uuid", "memory.total", "memory.used", "memory.free", "compute_cap",
                "pci.bus_id", "driver_version")
# What gpu_facts asks about the processes that hold GPU memory (one row per process and card).
APP_FIELDS = ("pid", "process_name", "used_memory", "gpu_uuid")
# --query-compute-apps field (as asked, or as the header names it) -> process key
APP_KEYS = {
    "pid": "pid", "process_name": "name", "name": "name", "used_memory": "used_memory_mib",
    "used_gpu_memory": "used_memory_mib", "gpu_uuid": "gpu_uuid", "gpu_bus_id": "gpu_bus_id",
    "gpu_name": "gpu_name", "gpu_serial": "gpu_serial", "timestamp": "timestamp",
}
APP_INT_KEYS = ("pid", "used_memory_mib")

# nvidia-smi field -> fact key
FACT_KEYS = {
    "index": "index", "name": "name", "gpu_name": "name", "uuid": "uuid", "gpu_uuid": "uuid",
    "memory.total": "memory_total_mib", "memory.used": "memory_used_mib",
    "memory.free": "memory_free_mib", "compute_cap": "compute_capability",
    "pci.bus_id": "pci_bus_id", "gpu_bus_id": "pci_bus_id", "driver_version": "driver_version",
    "power.limit": "power_limit_w",
}
INT_KEYS = ("index", "memory_total_mib", "memory_used_mib", "memory_free_mib")
FLOAT_KEYS = ("power_limit_w",)

DRIVER_FAILURE = "couldn't communicate with the NVIDIA driver"
NO_DEVICES = "No devices were found"
CUDA_VERSION_RE = re.compile(r"CUDA Version:\s*([0-9.]+)")


class NvidiaSmiError(Exception):
    """nvidia-smi output that carries no GPU facts; the message says why."""


def query_command(nvidia_smi="nvidia-smi"):
    return [nvidia_smi, "--query-gpu=" + ",".join(QUERY_FIELDS), "--format=csv,nounits"]


def apps_command(nvidia_smi="nvidia-smi"):
    return [nvidia_smi, "--query-compute-apps=" + ",".join(APP_FIELDS), "--format=csv,nounits"]


def check_failure(rc, stdout, stderr=""):
    """Raise with nvidia-smi's own reason when it did not answer the query."""
    text = (stdout or "") + (stderr or "")
    if DRIVER_FAILURE in text:
        raise NvidiaSmiError("nvidia-smi could not talk to the NVIDIA driver: %s" % text.strip())
    if NO_DEVICES in text:
        raise NvidiaSmiError("nvidia-smi found no GPUs on this host (%s)" % NO_DEVICES)
    if rc != 0:
        raise NvidiaSmiError("nvidia-smi exited %d: %s" % (rc, text.strip()[:500]))


def _field_name(header_cell):
    return re.sub(r"\s*\[[^\]]*\]\s*$", "", header_cell.strip())


def _value(key, raw, int_keys=INT_KEYS):
    raw = raw.strip()
    if raw in ("[N/A]", "N/A", "[Not Supported]"):
        return None
    if key in int_keys:
        return int(raw.split()[0])
    if key in FLOAT_KEYS:
        return float(raw.split()[0])
    return raw


def parse_csv(text, fields=None):
    """Devices from csv output. Without `fields` the first line must be the header."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise NvidiaSmiError("nvidia-smi printed nothing")
    if fields is None:
        fields = [_field_name(cell) for cell in lines[0].split(",")]
        lines = lines[1:]
    unknown = [f for f in fields if f not in FACT_KEYS]
    if unknown:
        raise NvidiaSmiError("no fact for nvidia-smi field(s): %s" % ", ".join(unknown))
    devices = []
    for number, line in enumerate(lines, 1):
        cells = [c.strip() for c in line.split(", ")]
        if len(cells) != len(fields):
            raise NvidiaSmiError("line %d has %d values for %d fields: %r"
                                 % (number, len(cells), len(fields), line))
        devices.append({FACT_KEYS[f]: _value(FACT_KEYS[f], c) for f, c in zip(fields, cells)})
    return devices


def parse_compute_apps(text, fields=None):
    """The processes holding GPU memory, one per process and card: {pid, name,
    used_memory_mib, gpu_uuid, ...}. Header-only (or empty) output is no process. A process
    name holding ", " keeps it (the driver does not quote)."""
    lines = [line for line in (text or "").splitlines() if line.strip()]
    if fields is None:
        if not lines:
            return []
        fields = [_field_name(cell) for cell in lines[0].split(",")]
        lines = lines[1:]
    unknown = [f for f in fields if f not in APP_KEYS]
    if unknown:
        raise NvidiaSmiError("no process fact for nvidia-smi field(s): %s" % ", ".join(unknown))
    keys = [APP_KEYS[f] for f in fields]
    rows = []
    for number, line in enumerate(lines, 1):
        cells = [c.strip() for c in line.split(", ")]
        extra = len(cells) - len(keys)
        if extra > 0 and "name" in keys:
            at = keys.index("name")
            cells[at:at + extra + 1] = [", ".join(cells[at:at + extra + 1])]
        if len(cells) != len(keys):
            raise NvidiaSmiError("process line %d has %d values for %d fields: %r"
                                 % (number, len(cells), len(keys), line))
        rows.append(dict((k, _value(k, c, APP_INT_KEYS)) for k, c in zip(keys, cells)))
    return rows


def attach_processes(facts, processes, units, titles=None):
    """Add the processes to `ansible_facts.gpu`: each with its card's index (by UUID), its
    unit (`units`: PID -> unit name or None) and its title (`titles`: PID -> the process's
    own title, `sglang::scheduler_TP3` for an SGLang rank)."""
    index_of = dict((d.get("uuid"), d.get("index")) for d in facts["devices"])
    titles = titles or {}
    facts["processes"] = [dict(p, gpu_index=index_of.get(p.get("gpu_uuid")), unit=units.get(p.get("pid")),
                               title=titles.get(p.get("pid")) or None)
                          for p in processes]
    return facts


def cuda_version(table_text):
    match = CUDA_VERSION_RE.search(table_text or "")
    return match.group(1) if match else None


def gpu_facts(devices, cuda=None):
    """The `ansible_facts.gpu` dict from parsed devices."""
    names = {d.get("name") for d in devices}
    drivers = {d.pop("driver_version", None) for d in devices} - {None}
    return {
        "count": len(devices),
        "devices": devices,
        "model": names.pop() if len(names) == 1 else None,
        "total_memory_mib": sum(d.get("memory_total_mib") or 0 for d in devices),
        "driver_version": drivers.pop() if len(drivers) == 1 else None,
        "cuda_version": cuda,
    }


def read_gpus(run, binary, timeout, units, titles=None):
    """`ansible_facts.gpu` from the host: the devices, the CUDA version of the table and the
    processes holding memory, each with its unit and title. `run(argv)` runs a command and
    returns (rc, stdout, stderr); `units(pid)` names a process's unit, `titles(pid)` its
    title. Raises NvidiaSmiError."""
    limit = ["timeout", str(timeout)]
    rc, out, err = run(limit + query_command(binary))
    if rc == 124:
        raise NvidiaSmiError("nvidia-smi did not answer within %d s (a wedged driver?)" % timeout)
    check_failure(rc, out, err)
    devices = parse_csv(out)
    table_rc, table, _table_err = run(limit + [binary])
    facts = gpu_facts(devices, cuda=cuda_version(table) if table_rc == 0 else None)
    rc, out, err = run(limit + apps_command(binary))
    check_failure(rc, out, err)
    processes = parse_compute_apps(out)
    pids = [p["pid"] for p in processes]
    return attach_processes(facts, processes, dict((pid, units(pid)) for pid in pids),
                            dict((pid, titles(pid)) for pid in pids) if titles else None)
