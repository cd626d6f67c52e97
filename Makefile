# inferops.sglang — every set-up step a fresh Debian 12 machine needs, and every CI gate.
# `make demo` and `make test` are the README's two commands; both are idempotent.
SHELL        := /bin/bash
.SHELLFLAGS  := -eu -o pipefail -c
.DEFAULT_GOAL := help

VENV         := .venv
PY           := $(VENV)/bin/python
BIN          := $(VENV)/bin
STAMP        := $(VENV)/.installed
# The lab's (and the demo's) share of the venv: ansible (ansible-core and the collections the
# lab's connection uses), at the development set's pins; the whole set comes with `venv`.
LAB_STAMP    := $(VENV)/.lab
LAB_REQS     := lab/requirements.txt
# The Debian packages the lab needs (the demo's set), then the gates' (docs, fidelity, tests).
LAB_APT      := podman runc debootstrap uidmap python3-venv
APT_PACKAGES := $(LAB_APT) shellcheck git patch openssh-client chromium
LAB          := $(PY) lab/labctl.py
LAB_HOSTS    ?= ct129:a6000 ct200:blackwell
SANITY_ROOT  := build/sanity
SANITY_DIR   := $(SANITY_ROOT)/ansible_collections/inferops/sglang
TEST_CACHE   := $(HOME)/.ansible/test/cache
PIP_BOOTSTRAP := $(TEST_CACHE)/get_pip_24_2.py
# ansible-core releases tested beside the development set's (2.19 on Python 3.11), each on a
# controller Python it supports: <ansible-core>:<python> (tests/matrix.py).
MATRIX       ?= 2.20:3.12 2.21:3.13
export INFEROPS_MATRIX := $(MATRIX)

# The real SGLang argument parser (CPU-only torch), with the DDTree patch series applied:
# the reference the lab's stand-in is checked against. Cached outside the repo, keyed by
# the pinned version and the patches' contents.
SGLANG_VERSION := 0.5.23
DDTREE_PATCHES := $(sort $(wildcard files/patches/sglang-$(SGLANG_VERSION)-ddtree/*.patch))
REF_KEY      := $(shell cat $(DDTREE_PATCHES) /dev/null | sha256sum | cut -c1-12)
REF_VENV     := /var/cache/inferops-sglang/$(SGLANG_VERSION)-$(REF_KEY)
REF_PY       := $(REF_VENV)/bin/python
REF_DEPS     := torch==2.13.0 numpy orjson psutil pybase64 requests triton packaging pillow \
                starlette msgspec pydantic pyzmq aiohttp ipython tqdm
export SGLANG_REFERENCE_PYTHON := $(REF_PY)

export CONTAINERS_CONF := $(CURDIR)/lab/containers.conf
export ANSIBLE_COLLECTIONS_PATH := $(CURDIR)/collections
export LAB_HOSTS
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: matrix matrix-venvs binary-wheels lab-deps apt-install lab-venv setup collection-copy units lab-wheelhouse checker-wheelhouse lab-index fidelity sglang-reference help deps venv lab-image ee-image lab-up lab-down lab-reset lab-status demo test lint sanity \
        unit integration molecule bench clean docs docs-lint package importer-venv

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

deps:  ## Debian packages the lab and the gates need (installs only what is missing)
	@$(MAKE) -s apt-install PACKAGES="$(APT_PACKAGES)"
lab-deps:  ## Debian packages the lab needs (the demo's share of deps)
	@$(MAKE) -s apt-install PACKAGES="$(LAB_APT)"
apt-install:
	@missing=$$(for p in $(PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
	    | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing $$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

venv: $(STAMP)  ## controller virtualenv from test-requirements.txt (the pinned development set)
$(STAMP): test-requirements.txt
	python3 -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r test-requirements.txt
	touch $@ $(LAB_STAMP)
lab-venv: $(LAB_STAMP)  ## the venv with only what the lab and the demo need (a part of venv)
$(LAB_STAMP): $(LAB_REQS) test-requirements.txt | lab-deps
	python3 -m venv $(VENV)
	$(BIN)/pip install -q -r $(LAB_REQS) -c test-requirements.txt
	touch $@

# The docs site: antsibull-docs writes the collection's pages (plugins, roles from their
# argument_specs, docs/docsite/extra-docs.yml's guides), Sphinx builds them with the layout
# `antsibull-docs sphinx-init --use-current` makes (docs/docsite/site). Output only in build/.
DOCS_SITE    := docs/docsite/site
DOCS_OUT     := build/docs
docs: venv  ## the docs site in build/docs/html (antsibull-docs + Sphinx)
	rm -rf $(DOCS_OUT) && mkdir -p $(DOCS_OUT)/rst && chmod og-w $(DOCS_OUT)/rst
	$(BIN)/antsibull-docs --config-file $(DOCS_SITE)/antsibull-docs.cfg collection --use-current \
	  --cleanup everything --dest-dir $(DOCS_OUT)/rst inferops.sglang
	cp $(DOCS_SITE)/index.rst $(DOCS_OUT)/rst/index.rst
	$(PY) $(DOCS_SITE)/ansible_inventory.py $(DOCS_OUT)/rst/ansible_devel.inv
	$(BIN)/sphinx-build -M html $(DOCS_OUT)/rst $(DOCS_OUT) -c $(DOCS_SITE) -q -W --keep-going

docs-lint: venv  ## antsibull-docs lint-collection-docs --plugin-docs (every doc, the guides, the links)
	$(BIN)/antsibull-docs lint-collection-docs --plugin-docs .

# The collection as a user gets it: the tarball installs, ansible-doc renders every plugin from
# it, ansible-builder finds its needs, and the docs site renders in headless Chromium.
COLLECTION_VERSION := $(shell sed -n 's/^version: //p' galaxy.yml)
# galaxy-importer in a venv of its own (its pins clash with the development set's), cached by
# its requirements' contents.
IMPORTER_REQS := tests/packaging/importer-requirements.txt
IMPORTER_VENV := /var/cache/inferops-sglang/importer-$(shell sha256sum $(IMPORTER_REQS) | cut -c1-12)
export GALAXY_IMPORTER_PYTHON := $(IMPORTER_VENV)/bin/python
importer-venv: $(IMPORTER_VENV)/.ready
$(IMPORTER_VENV)/.ready: $(IMPORTER_REQS)
	rm -rf $(IMPORTER_VENV) && python3 -m venv $(IMPORTER_VENV)
	$(IMPORTER_VENV)/bin/pip install -q -r $(IMPORTER_REQS)
	touch $@

package: deps venv importer-venv docs docs-lint  ## build the tarball and check it (install, ansible-doc, ansible-builder introspect, galaxy-importer) and the docs site
	rm -rf build/package && mkdir -p build/package
	$(BIN)/ansible-galaxy collection build --force --output-path build/package .
	test -f build/package/inferops-sglang-$(COLLECTION_VERSION).tar.gz
	$(BIN)/pytest -q tests/packaging

sglang-reference: $(REF_VENV)/.ready  ## the real SGLang parser (patched), to check the stand-in against
# Keyed by content (REF_KEY), not mtime: a fresh clone must reuse the cached venv.
$(REF_VENV)/.ready: | $(DDTREE_PATCHES)
	rm -rf $(REF_VENV).partial && python3 -m venv $(REF_VENV).partial
	$(REF_VENV).partial/bin/pip install -q --no-deps sglang==$(SGLANG_VERSION)
	$(REF_VENV).partial/bin/pip install -q $(REF_DEPS)
	site=$$($(REF_VENV).partial/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'); \
	for p in $(DDTREE_PATCHES); do patch -p1 --forward --batch -d "$$site" < "$$p" >/dev/null; done
	rm -rf $(REF_VENV) && mv $(REF_VENV).partial $(REF_VENV)
	# venvs hard-code their path: rebuild the entry points for the final location.
	sed -i "s#$(REF_VENV).partial#$(REF_VENV)#g" $(REF_VENV)/bin/* 2>/dev/null || true
	touch $@

# The torch and NCCL that SGLang 0.5.23 runs on (its pin, and torch's): the classifier's texts of
# theirs are checked in their binaries (tests/fidelity). pip takes them from this machine's disk.
TORCH_PIN    := 2.14.1
NCCL_PIN     := 2.30.7
BINARY_WHEELS := /var/cache/inferops-sglang/binary-wheels-$(TORCH_PIN)-$(NCCL_PIN)
export INFEROPS_BINARY_WHEELS := $(BINARY_WHEELS)
binary-wheels: venv $(BINARY_WHEELS)/.ready  ## the torch and NCCL wheels whose own texts the classifier names
$(BINARY_WHEELS)/.ready:
	rm -rf $(BINARY_WHEELS).partial
	$(BIN)/pip download -q --no-deps -d $(BINARY_WHEELS).partial torch==$(TORCH_PIN) nvidia-nccl-cu13==$(NCCL_PIN)
	rm -rf $(BINARY_WHEELS) && mv $(BINARY_WHEELS).partial $(BINARY_WHEELS)
	touch $@

WHEELHOUSE   := build/wheelhouse
SGLANG_WHEELS := /var/cache/inferops-sglang/wheels
SIM_SOURCES  := lab/pyproject.toml $(wildcard lab/sglang_sim/*.py lab/sglang_sim/flags/*.json)
lab-wheelhouse: $(WHEELHOUSE)/.ready  ## wheels the lab's release builds install (SGLang + the stand-in)
# A stamp, so that gates running side by side never rebuild the wheelhouse under each other.
$(WHEELHOUSE)/.ready: $(LAB_STAMP) $(SIM_SOURCES)
	mkdir -p $(WHEELHOUSE) $(SGLANG_WHEELS)
	ls $(SGLANG_WHEELS)/sglang-$(SGLANG_VERSION)-*.whl >/dev/null 2>&1 || \
	  $(BIN)/pip download -q --no-deps -d $(SGLANG_WHEELS) sglang==$(SGLANG_VERSION)
	ls $(SGLANG_WHEELS)/setuptools-*.whl >/dev/null 2>&1 || \
	  $(BIN)/pip download -q --no-deps --only-binary=:all: -d $(SGLANG_WHEELS) 'setuptools>=70' wheel
	cp -u $(SGLANG_WHEELS)/*.whl $(WHEELHOUSE)/
	rm -f $(WHEELHOUSE)/sglang_sim-*.whl
	$(BIN)/pip wheel -q --no-deps -w $(WHEELHOUSE) ./lab
	touch $@

# A PEP 503 index of the lab's wheelhouse (lab/pep503.py), served by the controller on the lab
# network for the pypi build source (tests/integration/test_package_index.py).
LAB_INDEX    := build/pypi-index
lab-index: $(LAB_INDEX)/.ready  ## a PEP 503 package index of the lab wheelhouse
$(LAB_INDEX)/.ready: $(WHEELHOUSE)/.ready lab/pep503.py
	$(PY) lab/pep503.py build $(WHEELHOUSE) $(LAB_INDEX)
	touch $@

# The real argument checker on a lab host (tests/integration/test_real_checker.py): a release of
# the real SGLang wheel with the CPU-only packages its parser imports (lab/checker-requirements.txt,
# the reference venv's set), from a wheelhouse on the controller. The third-party wheels (about
# 500 MB, torch and triton the most) are downloaded once, cached outside the repo, keyed by that list.
CHECKER_REQS := lab/checker-requirements.txt
CHECKER_KEY  := $(shell sha256sum $(CHECKER_REQS) | cut -c1-12)
CHECKER_CACHE := /var/cache/inferops-sglang/checker-wheels-$(CHECKER_KEY)
CHECKER_WHEELHOUSE := build/checker-wheelhouse
checker-wheelhouse: $(CHECKER_WHEELHOUSE)/.ready  ## the wheels of a lab release that runs the real argument checker
$(CHECKER_CACHE)/.ready: | $(CHECKER_REQS) $(STAMP)
	rm -rf $(CHECKER_CACHE).partial && mkdir -p $(CHECKER_CACHE).partial
	$(BIN)/pip download -q --no-deps --only-binary=:all: -r $(CHECKER_REQS) -d $(CHECKER_CACHE).partial
	rm -rf $(CHECKER_CACHE) && mv $(CHECKER_CACHE).partial $(CHECKER_CACHE)
	touch $@
$(CHECKER_WHEELHOUSE)/.ready: $(CHECKER_CACHE)/.ready $(WHEELHOUSE)/.ready
	mkdir -p $(CHECKER_WHEELHOUSE)
	rm -f $(CHECKER_WHEELHOUSE)/sglang_sim-*.whl
	cp -u $(CHECKER_CACHE)/*.whl $(WHEELHOUSE)/*.whl $(CHECKER_WHEELHOUSE)/
	touch $@

# labctl needs only the standard library: the image (debootstrap, the longest set-up step)
# does not wait for the venv.
lab-image: lab-deps  ## build (or reuse the cached) lab host image
	python3 lab/labctl.py image

lab-up: lab-deps lab-venv lab-image  ## start the lab hosts ($$LAB_HOSTS); keeps hosts already up
	$(LAB) up

ee-image: venv lab-deps  ## the collection's execution environment, built offline by ansible-builder (cached, keyed by its inputs)
	$(PY) lab/eectl.py build

lab-down: lab-venv  ## remove the lab's containers (only those carrying the lab label)
	$(LAB) down --all

lab-reset: lab-deps lab-venv  ## from whatever state a previous run left: remove, then start
	$(LAB) down --all
	$(LAB) up

lab-status: lab-venv
	$(LAB) status

# Only what the demo needs (the lab's packages and venv share, not the development set), the
# image and the wheels side by side; the lab on the tests' clock (the stand-in starts in about
# 1.5 s; the bench keeps its own), so that the whole demo fits in five minutes.
demo: export INFEROPS_LAB_TIMINGS := $(CURDIR)/lab/sim_tests.json
demo: export INFEROPS_LAB_SETTLE := 3
demo:  ## set up what the lab needs, then play the incident on the lab in six steps
	$(MAKE) -j3 lab-up lab-wheelhouse
	bash lab/demo.sh

unit: venv  ## unit tests of the pure code
	$(BIN)/pytest -q tests/unit

# The tests' clock for molecule: the stand-in starts in about 1.5 s and the gate settles 3 s
# (the bench keeps its fixed figures, lab/sim_defaults.json and 7 s). The integration tests
# get the same clock from tests/integration/labhost.py.
TEST_CLOCK   := INFEROPS_LAB_TIMINGS=$(CURDIR)/lab/sim_tests.json INFEROPS_LAB_SETTLE=3
# Integration workers, each with lab hosts of its own (inferops-test-gwN-ct129, ...): see
# tests/integration/README.md for the measurements behind the count.
TEST_WORKERS ?= 4
# A run clears only the sets test runs make (inferops-test-*): a person's lab hosts stay.
integration: lab-image lab-wheelhouse checker-wheelhouse lab-index matrix-venvs  ## integration tests against the lab (real systemd, journald, HTTP), in parallel
	$(LAB) down --matching inferops-test-
	rm -f build/kill-matrix.tsv build/watch-rows.tsv build/playbook-runs.tsv   # (the guard's kill rows and the watch rows add their seconds, each playbook run its own)
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder --max-worker-restart 0 \
	  --durations 15 tests/integration

fidelity: venv sglang-reference binary-wheels  ## the stand-in's parser against the real SGLang parser; the classifier's texts in their sources
	$(BIN)/pytest -q tests/fidelity

lint: venv  ## ansible-lint (production profile)
	# Molecule installs this collection into ~/.ansible/collections, and ansible-lint resolves
	# modules there first: a copy from an earlier run would hide a module added since.
	rm -rf $(HOME)/.ansible/collections/ansible_collections/inferops/sglang
	$(BIN)/ansible-lint --profile production --offline --strict

# (One per pip an ansible-test asks for: 2.19's 24.2, 2.20's and 2.21's 25.2.)
$(TEST_CACHE)/get_pip_%.py: tests/sanity/get_pip_offline.py
	mkdir -p $(TEST_CACHE)
	$(BIN)/pip download -q --no-deps --only-binary=:all: -d $(TEST_CACHE) pip==$(subst _,.,$*)
	cp $< $@

# ansible-test needs the collection at ansible_collections/inferops/sglang: a copy of what git
# tracks (and untracked files not ignored), in a git repo of its own.
collection-copy: venv
	rm -rf $(SANITY_ROOT) && mkdir -p $(SANITY_DIR)
	git ls-files -z --cached --others --exclude-standard | grep -zv '^collections/' \
	  | xargs -0 -I{} cp --parents -P {} $(SANITY_DIR)/ 2>/dev/null || true
	test -f $(SANITY_DIR)/galaxy.yml
	cd $(SANITY_DIR) && git init -q && git add -A

sanity: venv $(PIP_BOOTSTRAP) collection-copy  ## ansible-test sanity on a copy at ansible_collections/inferops/sglang
	cd $(SANITY_DIR) && \
	  $(CURDIR)/$(BIN)/ansible-test sanity --local --python 3.11 --color no 2>&1 | tee $(CURDIR)/build/sanity.log
	! grep -E '^(WARNING: Skipping|Skipping sanity test)' build/sanity.log 

units: venv collection-copy  ## the unit tests as ansible-test runs them (tests/unit mirrors plugins/)
	cd $(SANITY_DIR) && \
	  $(CURDIR)/$(BIN)/ansible-test units --local --python 3.11 --color no $(UNITS_ARGS)

matrix-venvs: venv  ## a controller venv per ansible-core of MATRIX (cached in /var/cache/inferops-sglang/matrix)
	$(PY) tests/matrix.py venvs $(MATRIX)
matrix: matrix-venvs $(TEST_CACHE)/get_pip_25_2.py  ## ansible-test sanity and units on each ansible-core of MATRIX (each on its own Python)
	$(PY) tests/matrix.py check $(MATRIX)

MOLECULE_SCENARIOS := $(notdir $(patsubst %/molecule.yml,%,$(wildcard extensions/molecule/*/molecule.yml)))

molecule: lab-image lab-wheelhouse  ## molecule scenarios (extensions/molecule) against the lab image
	test -n "$(MOLECULE_SCENARIOS)"
	for s in $(MOLECULE_SCENARIOS); do $(TEST_CLOCK) $(BIN)/molecule test -s $$s; done

bench: venv lab-up lab-wheelhouse  ## benchmarks on the lab: prints a table, writes bench/results.md (ROWS="gateway tune": those rows only)
	$(PY) bench/bench.py $(ROWS)

# What writes .venv or installs Debian packages runs first, alone; then the rest side by side -
# downloads, venvs of their own, the image's debootstrap - each step's output kept whole (-O).
SETUP_PARTS  := importer-venv lab-image lab-wheelhouse checker-wheelhouse lab-index sglang-reference binary-wheels \
                matrix-venvs $(PIP_BOOTSTRAP) $(TEST_CACHE)/get_pip_25_2.py
setup:  ## everything the gates need (cached, keyed by inputs)
	$(MAKE) --no-print-directory deps venv
	$(MAKE) --no-print-directory -j3 -Otarget $(SETUP_PARTS)

# Each gate's wall time and test counts end the log (tests/gates.py). Gates that share nothing
# run side by side, beside the integration gate, whose rows wait on servers and deadlines more
# than they compute (a third of two cores idle with its workers alone): molecule (hosts of its
# own), sanity (its copy is in build/), the matrix (a copy per ansible-core), package and
# fidelity. lint runs before them: it removes the copy molecule installs in ~/.ansible. units
# reuses sanity's copy, after it.
GATES        ?= setup lint integration+molecule+sanity+matrix+package+fidelity units
test:  ## everything CI checks, then a table of each gate's time
	python3 tests/gates.py $(GATES)

clean:  ## remove build output (not the lab image cache)
	rm -rf build tests/output .pytest_cache
