"""A PEP 503 "simple" package index over a folder of wheels, for the lab: what a fleet's own
index (devpi, Artifactory, a bucket behind nginx) serves, so the collection's `pypi` build
source meets a real index. The controller serves it on the lab network:

    python lab/pep503.py build build/wheelhouse build/pypi-index
    python -m http.server --bind 198.18.N.1 --directory build/pypi-index PORT

Each project gets simple/<normalized name>/index.html with a link per file and its sha256
(PEP 503), the files are under files/.
"""
from __future__ import annotations

import hashlib
import html
import re
import shutil
import sys
from pathlib import Path


def normalize(name: str) -> str:
    """PEP 503's project name normalization."""
    return re.sub(r"[-_.]+", "-", name).lower()


def project_of(filename: str) -> str:
    """The project a wheel belongs to, from its file name (PEP 427: name-version-...)."""
    return normalize(filename.split("-", 1)[0])


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def page(title: str, links: list[tuple[str, str]]) -> str:
    anchors = "\n".join('    <a href="%s">%s</a><br/>' % (html.escape(href), html.escape(text)) for href, text in links)
    return ("<!DOCTYPE html>\n<html>\n  <head><meta name=\"pypi:repository-version\" content=\"1.0\">"
            "<title>%s</title></head>\n  <body>\n%s\n  </body>\n</html>\n" % (html.escape(title), anchors))


def build(wheels: Path, dest: Path) -> dict[str, list[str]]:
    """Write the index for every wheel in `wheels` into `dest` (replaced whole). Returns
    project -> file names."""
    projects: dict[str, list[str]] = {}
    for wheel in sorted(wheels.glob("*.whl")):
        projects.setdefault(project_of(wheel.name), []).append(wheel.name)
    stage = dest.with_name(dest.name + ".partial")
    shutil.rmtree(stage, ignore_errors=True)
    (stage / "files").mkdir(parents=True)
    (stage / "simple").mkdir()
    for project, files in sorted(projects.items()):
        links = []
        for name in files:
            shutil.copy2(wheels / name, stage / "files" / name)
            links.append(("../../files/%s#sha256=%s" % (name, sha256(stage / "files" / name)), name))
        (stage / "simple" / project).mkdir()
        (stage / "simple" / project / "index.html").write_text(page("Links for %s" % project, links))
    (stage / "simple" / "index.html").write_text(page("Simple index", [(p + "/", p) for p in sorted(projects)]))
    shutil.rmtree(dest, ignore_errors=True)
    stage.rename(dest)
    return projects


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[0] != "build":
        sys.stderr.write("usage: pep503.py build WHEEL_DIR INDEX_DIR\n")
        return 2
    projects = build(Path(argv[1]), Path(argv[2]))
    print("pep503: %d project(s) in %s/simple: %s" % (len(projects), argv[2], ", ".join(sorted(projects))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
