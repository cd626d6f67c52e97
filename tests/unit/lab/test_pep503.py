"""The lab's PEP 503 index (lab/pep503.py): names normalized, one page per project, each link
with its file's sha256, as pip expects of a simple index."""
from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "lab"))
import pep503  # noqa: E402  pylint: disable=wrong-import-position


@pytest.mark.parametrize("filename, project", [
    ("sglang-0.5.23-cp311-cp311-manylinux_2_34_x86_64.whl", "sglang"),
    ("sglang_sim-0.1.0-py3-none-any.whl", "sglang-sim"),
    ("typing_extensions-4.16.0-py3-none-any.whl", "typing-extensions"),
    ("Jinja2-3.1.6-py3-none-any.whl", "jinja2"),
    ("zope.interface-7.0-cp311-cp311-manylinux_2_28_x86_64.whl", "zope-interface"),
])
def test_project_names_are_normalized(filename, project):
    assert pep503.project_of(filename) == project


def test_the_index_has_a_page_per_project_with_each_files_sha256(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for name in ("sglang_sim-0.1.0-py3-none-any.whl", "sglang-0.5.23-cp311-cp311-manylinux_2_34_x86_64.whl"):
        (wheels / name).write_bytes(name.encode())
    index = tmp_path / "index"
    assert pep503.build(wheels, index) == {"sglang": ["sglang-0.5.23-cp311-cp311-manylinux_2_34_x86_64.whl"],
                                           "sglang-sim": ["sglang_sim-0.1.0-py3-none-any.whl"]}
    root = (index / "simple" / "index.html").read_text()
    assert '<a href="sglang/">sglang</a>' in root and '<a href="sglang-sim/">sglang-sim</a>' in root
    name = "sglang_sim-0.1.0-py3-none-any.whl"
    digest = hashlib.sha256(name.encode()).hexdigest()
    assert '<a href="../../files/%s#sha256=%s">%s</a>' % (name, digest, name) in \
        (index / "simple" / "sglang-sim" / "index.html").read_text()
    assert (index / "files" / name).read_bytes() == name.encode()
    assert not (tmp_path / "index.partial").exists()
