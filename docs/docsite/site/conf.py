# Created with antsibull-docs 2.28.0 (sphinx-init --use-current), then: this collection's title,
# and one intersphinx inventory, docs.ansible.com's labels the plugin pages link to, written
# locally (the docs build has no network): see ansible_inventory.py.

project = 'inferops.sglang'
copyright = 'inferops maintainers'

title = 'inferops.sglang'
html_short_title = 'inferops.sglang'

extensions = ['sphinx.ext.autodoc', 'sphinx.ext.intersphinx', 'sphinx_antsibull_ext']

pygments_style = 'ansible'

highlight_language = 'YAML+Jinja'

html_theme = 'sphinx_ansible_theme'
html_show_sphinx = False

display_version = False

html_use_smartypants = True
html_use_modindex = False
html_use_index = False
html_copy_source = False

# The inventory is local only (None: no URL to fetch it from); the links go to docs.ansible.com.
intersphinx_mapping = {
    'ansible_devel': ('https://docs.ansible.com/projects/ansible/devel/', (None, 'ansible_devel.inv')),
}

default_role = 'any'

nitpicky = True
