"""What the built collection holds, and what its role specs accept (real ansible-galaxy and
ansible-playbook runs on the controller; no lab host)."""
from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent


def test_the_tarball_ships_the_collection_and_nothing_of_the_lab(tmp_path):
    build = subprocess.run([str(BIN / "ansible-galaxy"), "collection", "build", str(REPO), "--output-path",
                            str(tmp_path)], capture_output=True, text=True, check=False)
    assert build.returncode == 0, build.stdout + build.stderr
    names = tarfile.open(next(tmp_path.glob("inferops-sglang-*.tar.gz"))).getnames()
    for wanted in ("MANIFEST.json", "plugins/module_utils/deploy_plan.py", "roles/sglang_service/tasks/main.yml",
                   "playbooks/deploy_ddtree.yml", "meta/runtime.yml", "README.md", "inventory/production/hosts.yml"):
        assert wanted in names, wanted
    lab_paths = ("inventory/lab", "lab/", "tests/", "changelogs/fragments", "extensions/")
    assert [n for n in names if n == "ansible.cfg" or n.startswith(lab_paths)] == []
    with tarfile.open(next(tmp_path.glob("inferops-sglang-*.tar.gz"))) as tar:
        texts = [tar.extractfile(m).read().decode("utf-8", "replace") for m in tar.getmembers() if m.isfile()]
    assert not any("lab-api-key" in text for text in texts), "the lab's API key stays out"


def test_a_host_class_of_the_users_own_passes_the_role_spec(tmp_path):
    """An h100 class, named in the inventory alone, is accepted by sglang_service's spec."""
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  children:\n    h100:\n      hosts:\n        h1:\n          ansible_connection: local\n"
                         "      vars:\n        sglang_host_class: h100\n        sglang_gpu_model: NVIDIA H100 80GB HBM3\n")
    play = tmp_path / "spec.yml"
    # The role's own defaults, templated by Ansible, against its spec: as role validation does.
    play.write_text(
        "- hosts: h100\n  gather_facts: false\n  vars_files: [%s]\n  vars:\n"
        "    sglang_variant: eagle3\n    sglang_envelope: {tp_size: 8, mem_fraction_static: 0.9}\n"
        "    names: \"{{ query('ansible.builtin.varnames', '^sglang_service_') }}\"\n  tasks:\n"
        "    - ansible.builtin.validate_argument_spec:\n"
        "        argument_spec: \"{{ (lookup('file', spec) | from_yaml).argument_specs.main.options }}\"\n"
        "        provided_arguments: \"{{ dict(names | zip(query('ansible.builtin.vars', *names))) }}\"\n"
        % (REPO / "roles" / "sglang_service" / "defaults" / "main.yml"))
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(inventory), str(play), "-e",
                           "spec=%s" % (REPO / "roles" / "sglang_service" / "meta" / "argument_specs.yml")],
                          capture_output=True, text=True, check=False,
                          env=dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg")))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
