#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_report
short_description: Write a deploy's JSON and text report on the controller
version_added: "0.1.0"
description:
  - Writes C(<dir>/<host>/<UTC stamp>-<name>.json) and C(.txt), and C(latest.json) and
    C(latest.txt) beside them, each atomically (a reader never sees half a report).
  - Runs on the controller only (an action plugin); nothing is sent to the host.
author:
  - inferops maintainers (@inferops)
options:
  dir:
    description: The reports folder on the controller; one sub-folder per host.
    type: path
    required: true
  host:
    description: The host's sub-folder. Default is the inventory hostname.
    type: str
  name:
    description: What the report is about (the variant), part of the file names.
    type: str
    required: true
  report:
    description: The report, written as JSON.
    type: dict
    required: true
  text:
    description: The short diagnosis, written as text.
    type: str
    required: true
attributes:
  action:
    support: full
    description: Runs entirely in the action plugin, on the controller.
  check_mode:
    support: full
    description: Writes the report in check mode too (it describes what the deploy would do).
  diff_mode:
    support: none
    description: Reports are not host changes.
  platform:
    support: full
    platforms: posix
    description: The controller's file system.
"""

EXAMPLES = r"""
- name: Write the report
  inferops.sglang.sglang_report:
    dir: "{{ playbook_dir }}/../reports"
    name: ddtree
    report: {outcome: deployed}
    text: "ct200: DDTREE deployed, healthy in 6.1 s"
"""

RETURN = r"""
paths:
  description: The files written.
  returned: success
  type: list
  elements: str
  sample: [reports/ct200/20261130T211500Z-ddtree.json, reports/ct200/latest.json]
"""
