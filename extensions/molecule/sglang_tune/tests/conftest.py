"""The scenarios' shared verification helpers and fixtures (extensions/molecule/shared)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared"))

from labverify import a6000, blackwell, pytest_runtest_makereport  # noqa: E402,F401  pylint: disable=unused-import
