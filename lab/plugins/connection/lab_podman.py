# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's connection: containers.podman.podman with pipelining.

Upstream cannot pipeline because it runs `podman exec` without `-i`, so the module it feeds
on stdin never arrives; each task then pays for a temporary folder, a copy and a cleanup, about
three `podman exec` calls (~0.3 s each here). Passing `-i` when there is input makes one call
per task, which is what SSH with pipelining gives production hosts: lab timings stay
comparable to the real thing.

A host that is down is unreachable, as over SSH: when `podman exec` fails and the container
does not run (stopped, or stopped during the task) or is paused (a frozen host), the task ends
with AnsibleConnectionFailure, which Ansible reports as UNREACHABLE - not as a module whose
output did not parse.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = """
    name: lab_podman
    short_description: podman exec into a lab host, with pipelining
    description:
        - containers.podman.podman, plus C(podman exec -i) when a module is piped in.
    options:
      remote_addr:
        description: The container.
        default: inventory_hostname
        vars:
          - name: ansible_host
          - name: inventory_hostname
          - name: ansible_podman_host
      remote_user:
        description: The user in the container.
        ini:
          - section: defaults
            key: remote_user
        env:
          - name: ANSIBLE_REMOTE_USER
        vars:
          - name: ansible_user
      podman_extra_args:
        description: Extra arguments for podman.
        default: ''
        vars:
          - name: ansible_podman_extra_args
      podman_executable:
        description: The podman executable.
        default: podman
        vars:
          - name: ansible_podman_executable
      pipelining:
        description: Feed modules on stdin instead of copying them.
        default: true
        type: boolean
        vars:
          - name: ansible_pipelining
"""

import shlex
import subprocess

from ansible.errors import AnsibleConnectionFailure
from ansible.module_utils.common.text.converters import to_native, to_text
from ansible.plugins.connection import ensure_connect
from ansible_collections.containers.podman.plugins.connection.podman import Connection as PodmanConnection


class Connection(PodmanConnection):
    transport = "lab_podman"
    has_pipelining = True

    @ensure_connect
    def exec_command(self, cmd, in_data=None, sudoable=False):
        args = ["exec", "-i"] if in_data else ["exec"]
        if self.user:
            args += ["--user", self.user]
        rc, stdout, stderr = self._podman(args, shlex.split(to_native(cmd, errors="surrogate_or_strict")), in_data)
        if rc != 0 and not self._running():
            raise AnsibleConnectionFailure("lab host %s is down (container %s does not run, or is paused): %s"
                                           % (self._play_context.remote_addr, self._container_id,
                                              to_text(stderr, errors="surrogate_or_replace").strip()))
        return rc, stdout, stderr

    def _running(self):
        """Whether the container runs and is not paused (a host that is up and answers), asked of
        podman directly. A paused container is a frozen host: podman refuses an exec into it at
        once, where SSH to a hung host gets no answer; either way the host is unreachable."""
        proc = subprocess.run([self.get_option("podman_executable"), "inspect", "--format",
                               "{{.State.Running}} {{.State.Paused}}", self._container_id],
                              capture_output=True, text=True, check=False)
        return proc.stdout.strip() == "true false"
