"""The READMEs say what runs: each role's example is the molecule scenario that converges it,
word for word (so the example runs as written), and the collection's README, an index, links
every guide of the docs site."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
ROLES = sorted(p.name for p in (REPO / "roles").iterdir() if (p / "tasks").exists())


def example(readme: Path) -> str:
    text = readme.read_text()
    section = text.split("## Example", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```yaml\n(.*?)```", section, re.S)
    assert len(blocks) == 1, "one example per role README"
    return blocks[0]


@pytest.mark.parametrize("role", ROLES)
def test_the_role_readme_example_is_its_molecule_scenario(role):
    converge = REPO / "extensions" / "molecule" / role / "converge.yml"
    body = [line for line in converge.read_text().splitlines() if line != "---" and not line.startswith("#")]
    assert example(REPO / "roles" / role / "README.md") == "\n".join(body) + "\n"
    assert yaml.safe_load(converge.read_text())[0]["roles"][0]["role"] == "inferops.sglang." + role


def test_the_readme_links_every_guide():
    guides = [name for section in yaml.safe_load((REPO / "docs" / "docsite" / "extra-docs.yml").read_text())["sections"]
              for name in section["toctree"]]
    readme = (REPO / "README.md").read_text()
    assert [g for g in guides if "(docs/docsite/rst/%s.rst)" % g not in readme] == []
