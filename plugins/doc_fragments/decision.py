# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The attributes of the deploy's read-only decision actions (sglang_plan, sglang_preflight,
    # sglang_rollback_plan): they decide on the controller and read the host with one module.
    DOCUMENTATION = r"""
attributes:
  action:
    support: full
    description: Decides on the controller (an action plugin); one module call at most reads the host.
  check_mode:
    support: full
    description: Reads and decides the same in check mode; it changes nothing.
  diff_mode:
    support: none
    description: Changes nothing on the host.
"""

    # The attributes of the decisions that run on the controller alone (sglang_tune,
    # sglang_tuned): they read and change nothing on any host.
    CONTROLLER = r"""
attributes:
  action:
    support: full
    description: Decides on the controller (an action plugin); it reads and changes nothing on any host.
  check_mode:
    support: full
    description: Decides the same in check mode; it writes no file.
  diff_mode:
    support: none
    description: Changes nothing on a host.
"""
