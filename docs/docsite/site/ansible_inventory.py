"""Write the intersphinx inventory of the docs.ansible.com labels this collection's pages link
to (objects.inv format 2), so the docs build resolves them without a network. A label the
pages start to use that is not here fails the build (nitpicky, -W): add it with its page.

    python ansible_inventory.py OUT.inv
"""
import sys
import zlib

# label -> (page under https://docs.ansible.com/projects/ansible/devel/, title)
LABELS = {
    "common_return_values": ("reference_appendices/common_return_values.html", "Return Values"),
    "action_plugins": ("plugins/action.html", "Action plugins"),
    "callback_plugins": ("plugins/callback.html", "Callback plugins"),
    "ansible_configuration_settings": ("reference_appendices/config.html", "Ansible Configuration Settings"),
    "ansible_collections.ansible.builtin.wait_for_module": (
        "collections/ansible/builtin/wait_for_module.html", "ansible.builtin.wait_for module"),
    "ansible_collections.ansible.builtin.systemd_service_module": (
        "collections/ansible/builtin/systemd_service_module.html", "ansible.builtin.systemd_service module"),
    "ansible_collections.ansible.builtin.async_status_module": (
        "collections/ansible/builtin/async_status_module.html", "ansible.builtin.async_status module"),
    "ansible_collections.ansible.builtin.command_module": (
        "collections/ansible/builtin/command_module.html", "ansible.builtin.command module"),
}


def inventory():
    header = ("# Sphinx inventory version 2\n# Project: Ansible\n# Version: devel\n"
              "# The remainder of this file is compressed using zlib.\n")
    lines = "".join("%s std:label -1 %s %s\n" % (label, page, title)
                    for label, (page, title) in sorted(LABELS.items()))
    return header.encode() + zlib.compress(lines.encode())


if __name__ == "__main__":
    with open(sys.argv[1], "wb") as fh:
        fh.write(inventory())
