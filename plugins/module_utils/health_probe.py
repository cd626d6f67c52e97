# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One probe of SGLang's health endpoint, shared by the modules that judge a server."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.urls import open_url
from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError


def probe(url, headers, validate_certs, timeout):
    """(HTTP status or None, error text or None). Redirects are not followed: SGLang never
    redirects its health endpoint, so a redirect means something else answers there."""
    try:
        resp = open_url(url, headers=headers, validate_certs=validate_certs, timeout=timeout,
                        follow_redirects="none")
        return resp.getcode(), None
    except HTTPError as exc:
        return exc.code, None
    except (URLError, OSError, ValueError) as exc:
        return None, str(getattr(exc, "reason", exc))
