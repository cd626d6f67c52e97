"""Offline stand-in for the get-pip bootstrap script that ansible-test downloads.

ansible-test bootstraps each sanity venv with a get-pip script fetched from Ansible's CI
file server, which this network cannot reach. `make sanity` installs this file in its
place, next to the pip 24.2 wheel it downloads from PyPI. Like get-pip, it installs pip
(and whatever packages ansible-test asks for) into the running interpreter.
"""
import glob
import os
import sys


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    wheels = sorted(glob.glob(os.path.join(here, "pip-24.2-*.whl")))
    if not wheels:
        sys.exit("get_pip_offline: no pip-24.2 wheel beside %s; run `make sanity`" % here)
    sys.path.insert(0, wheels[0])
    from pip._internal.cli.main import main as pip_main  # pylint: disable=import-outside-toplevel

    # get-pip's own flags; pip install does not know them.
    args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
    return pip_main(["install", "--upgrade", "--force-reinstall", "--find-links", here] + args)


if __name__ == "__main__":
    sys.exit(main())
