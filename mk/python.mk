# Python toolchain: one virtualenv per content of the requirements files, kept in KAIOPS_CACHE.
# Included by the top-level Makefile (which defines KAIOPS_CACHE). requirements.txt is the
# collection's runtime requirements (shipped); requirements-dev.txt adds the pinned tools.

PYTHON3 ?= python3.11
REQUIREMENTS := requirements-dev.txt
REQ_HASH := $(shell cat requirements.txt $(REQUIREMENTS) | sha256sum | cut -c1-12)
VENV := $(KAIOPS_CACHE)/venv-$(REQ_HASH)
VENV_STAMP := $(VENV)/.kaiops-installed

PY := $(VENV)/bin/python
ANSIBLE_PLAYBOOK := $(VENV)/bin/ansible-playbook
PYTEST := $(VENV)/bin/pytest
RUFF := $(VENV)/bin/ruff
ANSIBLE_LINT := $(VENV)/bin/ansible-lint
ANSIBLE_GALAXY := $(VENV)/bin/ansible-galaxy
ANTSIBULL_CHANGELOG := $(VENV)/bin/antsibull-changelog

# Tools in the venv come first on PATH for every recipe that uses them.
VENV_ENV := PATH="$(VENV)/bin:$$PATH" VIRTUAL_ENV="$(VENV)"

.PHONY: venv lint unit galaxy-build ee-create code-figures

venv: $(VENV_STAMP) ## build the Python venv (reused while the requirements files are unchanged)

# No prerequisite on the requirements' mtime: their content hash is in the path already, so
# a fresh clone (new mtime, same content) reuses the venv.
$(VENV_STAMP):
	@mkdir -p "$(KAIOPS_CACHE)"
	@test -x "$(PY)" || $(PYTHON3) -m venv "$(VENV)"
	"$(PY)" -m pip install --quiet --disable-pip-version-check --upgrade pip
	"$(PY)" -m pip install --quiet --disable-pip-version-check -r $(REQUIREMENTS)
	@touch "$@"

# The layers' import rules (tests/unit/test_layers.py, a second of pytest) run here as well as in
# make unit: a wrong arrow between features is a design error, found with the style checks.
lint: $(VENV_STAMP) ## ruff check, ruff format --check, functions at most 60 lines and complexity 20 (tools/code_figures.py --check), the layers' import rules, ansible-lint (production profile), the changelog fragments, ansible-builder create, ansible-test sanity
	$(VENV_ENV) $(RUFF) check .
	$(VENV_ENV) $(RUFF) format --check .
	$(PY) tools/code_figures.py --check
	$(VENV_ENV) $(PYTEST) -q -p no:cacheprovider -p no:randomly tests/unit/test_layers.py
	$(VENV_ENV) $(ANSIBLE_LINT)
	$(VENV_ENV) $(ANTSIBULL_CHANGELOG) lint
	$(MAKE) --no-print-directory ee-create
	$(MAKE) --no-print-directory sanity

# Issue 20's before and after figures, printed the same way on any checkout (standard library
# only: no venv needed).
code-figures: ## lines per package under plugins/module_utils, the 10 longest functions in plugins/ with their cyclomatic complexity, how many are over 60 lines or CC 20
	@$(PYTHON3) tools/code_figures.py

# pytest-xdist: the unit tests that run ansible-playbook spend most of their time in a child
# process, so one worker per CPU (auto) halves the stage on 2 cores; UNIT_WORKERS=0 runs them in
# this process, in order.
UNIT_WORKERS ?= auto
unit: $(VENV_STAMP) ## pytest unit tests (no cluster), $(UNIT_WORKERS) workers
	$(VENV_ENV) $(PYTEST) -n $(UNIT_WORKERS) tests/unit

# The execution environment's build context (meta/execution-environment.yml): ansible-builder
# validates the definition and writes the Containerfile and _build/ here, out of the repository.
# No container engine is needed; `ansible-builder build` with one builds the image (docs/fleet.md).
EE_CONTEXT := $(KAIOPS_CACHE)/ee-context
ee-create: $(VENV_STAMP) ## ansible-builder create: check the EE definition, write its context under KAIOPS_CACHE (part of make lint)
	@rm -rf "$(EE_CONTEXT)"
	$(VENV_ENV) $(VENV)/bin/ansible-builder create -f meta/execution-environment.yml -c "$(EE_CONTEXT)" --output-filename Containerfile

galaxy-build: $(VENV_STAMP) ## build the kaiops.runbooks collection tarball
	$(VENV_ENV) $(ANSIBLE_GALAXY) collection build --force .

# ansible-test sanity over the collection as ansible-galaxy builds it (what ships), extracted into
# ansible_collections/kaiops/runbooks under KAIOPS_CACHE. ansible-test keeps one venv per sanity
# test in ~/.ansible/test/venv, with its own pinned requirements from PyPI, reused when present.
SANITY_DIR := $(KAIOPS_CACHE)/sanity
SANITY_ROOT := $(SANITY_DIR)/ansible_collections/kaiops/runbooks
ANSIBLE_TEST := $(VENV)/bin/ansible-test
# ansible-test bootstraps pip in those venvs with a get-pip.py it downloads from
# ci-files.testing.ansible.com, which is not one of the registries this project may dial; a
# stand-in in its cache installs the same pip version from the pip wheel on PyPI (pip download),
# as get-pip.py would.
SANITY_CACHE := $(HOME)/.ansible/test/cache
SANITY_PIP = $(shell sed -n "s/^ *pip='\([0-9.]*\)',/\1/p" $(VENV)/lib/python*/site-packages/ansible_test/_internal/python_requirements.py)
GET_PIP = $(SANITY_CACHE)/get_pip_$(subst .,_,$(SANITY_PIP)).py

.PHONY: sanity
sanity: $(VENV_STAMP) ## ansible-test sanity over the built collection (part of make lint)
	@mkdir -p "$(SANITY_CACHE)"
	@test -f "$(GET_PIP)" || { \
	  echo "sanity: pip $(SANITY_PIP) for ansible-test's venvs from PyPI"; \
	  "$(PY)" -m pip download --quiet --disable-pip-version-check --no-deps --dest "$(SANITY_CACHE)" "pip==$(SANITY_PIP)" && \
	  printf '%s\n' \
	    '# Stand-in for get-pip.py $(SANITY_PIP), written by make sanity (mk/python.mk): installs pip from its wheel.' \
	    'import os, runpy, sys' \
	    'here = os.path.dirname(os.path.abspath(__file__))' \
	    'sys.path.insert(0, os.path.join(here, "pip-$(SANITY_PIP)-py3-none-any.whl"))' \
	    'args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]' \
	    'sys.argv = ["pip", "install", "--upgrade", "--force-reinstall", "--find-links", here] + args' \
	    'runpy.run_module("pip", run_name="__main__", alter_sys=True)' > "$(GET_PIP)"; }
	@rm -rf "$(SANITY_DIR)/build" "$(SANITY_ROOT)" && mkdir -p "$(SANITY_DIR)/build" "$(SANITY_ROOT)"
	@$(VENV_ENV) $(ANSIBLE_GALAXY) collection build --force --output-path "$(SANITY_DIR)/build" . >/dev/null
	@tar -xzf "$(SANITY_DIR)"/build/kaiops-runbooks-*.tar.gz -C "$(SANITY_ROOT)"
	cd "$(SANITY_ROOT)" && $(VENV_ENV) $(ANSIBLE_TEST) sanity --venv --python $(PYTHON3:python%=%) --color no
