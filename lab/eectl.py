"""The lab's execution environment (EE): this collection in an image built by ansible-builder
from lab/execution-environment/execution-environment.yml, as AWX and Automation Platform run it.

    eectl.py build     build the EE (or reuse the cached one); prints {"image": its name}

No container registry is reachable here, so every input is made locally and cached outside the
repository, keyed by what makes it:
  - the base image: a Debian root file system from debootstrap (EE_PACKAGES), imported as
    localhost/inferops-ee-base:<key> and tagged :current (the definition names :current);
  - the wheels: ansible-core, ansible-runner and what ansible-builder's stages install (bindep,
    PyYAML, packaging, dumb-init), downloaded from PyPI at the development set's pins;
  - the collection: its tarball, built by ansible-galaxy from this checkout.
The EE is localhost/inferops-ee:<key>, the key covering the definition, the base, the wheels
and the collection's files: a second build with the same inputs takes no time, and podman's
layer cache keeps the stages a new collection does not change.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import labctl  # noqa: E402  (the lab's podman, debootstrap and cache helpers)

REPO = labctl.LAB_DIR.parent
DEFINITION_DIR = labctl.LAB_DIR / "execution-environment"
BUILD_DIR = REPO / "build" / "ee"
BIN = Path(sys.executable).parent
# What an EE needs beside the collection: Python with pip (Debian's python3 has no ensurepip),
# and the SSH client that reaches the GPU hosts (the collection's bindep.txt asks for it).
EE_PACKAGES = ("python3", "python3-pip", "openssh-client", "ca-certificates")
# The Python packages the build's stages install, at the pins of test-requirements.txt (the
# definition pins ansible-core and ansible-runner to the same versions; a test checks it).
EE_WHEELS = ("ansible-core", "ansible-runner", "bindep", "PyYAML", "packaging", "dumb-init==1.2.5")
BASE = "localhost/inferops-ee-base"
IMAGE = "localhost/inferops-ee"
RECIPE_VERSION = "1"


def base_key() -> str:
    return labctl._digest(labctl.SUITE.encode(), " ".join(EE_PACKAGES).encode(), RECIPE_VERSION.encode())


def ensure_base() -> str:
    """The EE's base image, made once per package list; tagged :current for the definition."""
    name = "%s:%s" % (BASE, base_key())
    if not labctl.image_exists(name):
        tar_path = labctl.cache_dir() / ("ee-rootfs-%s.tar" % base_key())
        if not tar_path.exists():
            labctl.build_rootfs_tar(tar_path, EE_PACKAGES)
        print("ee: importing %s" % name, flush=True)
        with open(tar_path, "rb") as fh:
            labctl.podman("import", "--change", "CMD=/bin/bash", "-", name, stdin=fh)
    labctl.podman("tag", name, BASE + ":current")
    return name


def pins() -> list[str]:
    """EE_WHEELS with the development set's pins (a name pinned there gets its version)."""
    pinned = {}
    for line in (REPO / "test-requirements.txt").read_text().splitlines():
        name, sep, version = line.split("#")[0].strip().partition("==")
        if sep:
            pinned[name.lower()] = "%s==%s" % (name, version)
    return [pinned.get(want.lower(), want) for want in EE_WHEELS]


def ensure_wheels() -> Path:
    """The wheels every stage's pip takes (PIP_NO_INDEX in the build), with their dependencies."""
    wanted = pins()
    folder = labctl.cache_dir() / ("ee-wheels-%s" % labctl._digest(*(w.encode() for w in wanted)))
    if not (folder / ".ready").exists():
        folder.mkdir(parents=True, exist_ok=True)
        print("ee: downloading %s" % " ".join(wanted), flush=True)
        proc = subprocess.run([str(BIN / "pip"), "download", "-q", "--prefer-binary", "-d", str(folder), *wanted],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise labctl.LabError("pip download failed:\n" + proc.stderr[-3000:])
        (folder / ".ready").write_text("\n".join(wanted) + "\n")
    return folder


def build_collection(into: Path) -> Path:
    """This checkout's collection tarball, under the fixed name the definition installs."""
    into.mkdir(parents=True, exist_ok=True)
    out = tempfile.mkdtemp(prefix="ee-collection-", dir=str(BUILD_DIR))
    try:
        subprocess.run([str(BIN / "ansible-galaxy"), "collection", "build", "--force", "--output-path", out, str(REPO)],
                       check=True, stdout=subprocess.DEVNULL)
        built = next(Path(out).glob("inferops-sglang-*.tar.gz"))
        target = into / "inferops-sglang.tar.gz"
        shutil.move(str(built), str(target))
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return target


def collection_files(tarball: Path) -> bytes:
    """What the collection ships (FILES.json: each file's checksum), without the build's time."""
    with tarfile.open(tarball) as tar:
        return tar.extractfile("FILES.json").read()


def definition_files() -> list[Path]:
    return sorted(p for p in DEFINITION_DIR.iterdir() if p.is_file())


def stage_inputs() -> tuple[Path, str]:
    """build/ee/: the definition, its offline inputs (wheels, collection) and the EE's key."""
    base = ensure_base()
    wheels = ensure_wheels()
    if BUILD_DIR.exists():
        shutil.rmtree(BUILD_DIR)
    BUILD_DIR.mkdir(parents=True)
    for path in definition_files():
        shutil.copy2(path, BUILD_DIR / path.name)
    inputs = BUILD_DIR / "inputs"
    shutil.copytree(wheels, inputs / "wheels", ignore=shutil.ignore_patterns(".ready"))
    tarball = build_collection(inputs / "collections")
    parts = [base.encode(), (wheels / ".ready").read_bytes(), collection_files(tarball)]
    parts += [p.read_bytes() for p in definition_files()]
    return BUILD_DIR, labctl._digest(*parts)


def build() -> str:
    """The EE for this checkout, built unless one with the same key exists."""
    folder, key = stage_inputs()
    name = "%s:%s" % (IMAGE, key)
    if labctl.image_exists(name):
        print("ee: %s (cached)" % name, flush=True)
        return name
    print("ee: ansible-builder build -t %s" % name, flush=True)
    proc = subprocess.run(
        [str(BIN / "ansible-builder"), "build", "--container-runtime", "podman", "-f",
         str(folder / "execution-environment.yml"), "--context", str(folder / "context"), "-t", name,
         "--extra-build-cli-args=--pull=never", "-v", "1"],
        env=labctl.podman_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    if proc.returncode != 0:
        raise labctl.LabError("ansible-builder build failed:\n" + proc.stdout[-4000:])
    labctl._prune_old_images(keep=name)
    labctl.podman("tag", name, IMAGE + ":current")
    return name


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("command", choices=("build",))
    parser.parse_args(argv)
    try:
        print(json.dumps({"image": build()}))
    except labctl.LabError as exc:
        print("eectl: %s" % exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
