"""Offline stand-in for the get-pip bootstrap script that ansible-test downloads.

ansible-test bootstraps each sanity venv with a get-pip script fetched from Ansible's CI
file server, which this network cannot reach. `make sanity` installs this file in its
place (one copy per pip version an ansible-core asks for: get_pip_24_2.py, get_pip_25_2.py),
next to that pip's wheel, which it downloads from PyPI. Like get-pip, it installs pip
(and whatever packages ansible-test asks for) into the running interpreter.
"""
import glob
import os
import sys


def pip_version():
    """The pip this copy stands in for, from its name as ansible-test caches it
    (get_pip_25_2.py: pip 25.2, what ansible-core 2.20's ansible-test asks for)."""
    name = os.path.splitext(os.path.basename(__file__))[0]
    return name[len("get_pip_"):].replace("_", ".") if name.startswith("get_pip_") else "24.2"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    version = pip_version()
    wheels = sorted(glob.glob(os.path.join(here, "pip-%s-*.whl" % version)))
    if not wheels:
        sys.exit("get_pip_offline: no pip-%s wheel beside %s; run `make sanity`" % (version, here))
    sys.path.insert(0, wheels[0])
    from pip._internal.cli.main import main as pip_main  # pylint: disable=import-outside-toplevel

    # get-pip's own flags; pip install does not know them.
    args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
    return pip_main(["install", "--upgrade", "--force-reinstall", "--find-links", here] + args)


if __name__ == "__main__":
    sys.exit(main())
