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

# Tools in the venv come first on PATH for every recipe that uses them.
VENV_ENV := PATH="$(VENV)/bin:$$PATH" VIRTUAL_ENV="$(VENV)"

.PHONY: venv lint unit galaxy-build

venv: $(VENV_STAMP) ## build the Python venv (reused while the requirements files are unchanged)

# No prerequisite on the requirements' mtime: their content hash is in the path already, so
# a fresh clone (new mtime, same content) reuses the venv.
$(VENV_STAMP):
	@mkdir -p "$(KAIOPS_CACHE)"
	@test -x "$(PY)" || $(PYTHON3) -m venv "$(VENV)"
	"$(PY)" -m pip install --quiet --disable-pip-version-check --upgrade pip
	"$(PY)" -m pip install --quiet --disable-pip-version-check -r $(REQUIREMENTS)
	@touch "$@"

lint: $(VENV_STAMP) ## ruff check, ruff format --check, ansible-lint (production profile)
	$(VENV_ENV) $(RUFF) check .
	$(VENV_ENV) $(RUFF) format --check .
	$(VENV_ENV) $(ANSIBLE_LINT)

unit: $(VENV_STAMP) ## pytest unit tests (no cluster)
	$(VENV_ENV) $(PYTEST) tests/unit

galaxy-build: $(VENV_STAMP) ## build the kaiops.runbooks collection tarball
	$(VENV_ENV) $(ANSIBLE_GALAXY) collection build --force .
