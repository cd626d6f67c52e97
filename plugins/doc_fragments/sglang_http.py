# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The options of every module that talks HTTP to an SGLang server.
    DOCUMENTATION = r"""
options:
  api_key:
    description:
      - "The server's API key, sent as C(Authorization: Bearer <key>)."
    type: str
  headers:
    description:
      - Extra HTTP headers for every request.
    type: dict
    default: {}
  validate_certs:
    description:
      - Verify TLS certificates when the URL is https.
    type: bool
    default: true
"""
