# kaiops: make targets are a fixed interface (README.md). Each area lives in mk/.
SHELL := /bin/bash
.DEFAULT_GOAL := help

# Everything built or installed lives outside git, keyed by version, reused when present.
KAIOPS_CACHE ?= $(HOME)/.cache/kaiops
export KAIOPS_CACHE

# Colour only on a terminal. When make's output is not one (MAKE_TERMOUT is make's own
# `[ -t 1 ]`) or NO_COLOR is set (https://no-color.org), every tool is told to print plain text:
# ansible (NOCOLOR; FORCE_COLOR=0, which molecule would otherwise set to 1 when TERM says xterm),
# molecule, pytest and ansible-lint (PY_COLORS=0, NO_COLOR), pytest (--color=no), ruff (NO_COLOR);
# FORCE_COLOR and CLICOLOR_FORCE from the caller's environment are dropped.
# Decided here once; sub-makes and every recipe inherit the exports.
ifeq ($(if $(NO_COLOR),,$(MAKE_TERMOUT)),)
export NO_COLOR := 1
export PY_COLORS := 0
export ANSIBLE_NOCOLOR := 1
export ANSIBLE_FORCE_COLOR := 0
export PYTEST_ADDOPTS := $(strip $(filter-out --color=no,$(PYTEST_ADDOPTS)) --color=no)
unexport FORCE_COLOR CLICOLOR_FORCE
endif

include mk/python.mk
include mk/lab.mk

.PHONY: help test setup drill molecule molecule-2 fleet-drill go-lint flake clean
# Each target's `## text`; a $(VARIABLE) in that text is shown with its value.
HASH := \#
HELP_VARS = $(sort $(patsubst $$(%),%,$(shell grep -hE '^[a-zA-Z_-]+:.*$(HASH)$(HASH) ' $(MAKEFILE_LIST) | sed 's/.*$(HASH)$(HASH) //' | grep -oE '\$$\([A-Za-z_]+\)')))
help: ## list targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | $(foreach v,$(HELP_VARS),$(v)='$($(v))') awk -F':.*## ' \
	  '{ t = $$2; while (match(t, /\$$\([A-Za-z_]+\)/)) t = substr(t, 1, RSTART - 1) ENVIRON[substr(t, RSTART + 2, RLENGTH - 3)] substr(t, RSTART + RLENGTH); \
	     printf "  %-16s %s\n", $$1, t }'

# lab/kai-standin: our KAI stand-in, tested once its module is in the tree.
GO_MODULES_TESTED := tools/gpuprobe lab/fakegpu $(patsubst %/go.mod,%,$(wildcard lab/kai-standin/go.mod))

GO_MODULES_OWN := $(GO_MODULES_TESTED) lab/build/etcd

# go vet and go test build as the lab builds its programs (lab/kailab/build.py: no cgo, -trimpath),
# so they reuse the packages a lab build put in Go's cache (client-go, etcd) instead of compiling
# them again with other flags.
GO_AS_LAB = CGO_ENABLED=0 GOFLAGS="$(GOFLAGS) -trimpath -mod=readonly -buildvcs=false"

go-lint: ## gofmt and go vet over our own Go code
	@out=$$(gofmt -l $(GO_MODULES_OWN)); if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi
	@for m in $(GO_MODULES_OWN); do (cd $$m && $(GO_AS_LAB) go vet ./...) || exit 1; done

# Flakes: the Go tests $(FLAKE_COUNT) times each and the unit tests twice in random order
# (pytest-randomly, a new seed each pass, printed so a failure can be replayed with
# --randomly-seed), all while $(FLAKE_BURNERS) busy loops hold the CPUs, as a loaded CI machine
# would. tools/flake_report.py then lists every test that both passed and failed. Bounded: the
# burners stop with the check, or after FLAKE_BURN_S at most. Not a make test stage (it takes
# longer than the suite's time allows); run before a change that touches timing.
FLAKE_COUNT ?= 10
FLAKE_BURNERS ?= 2
FLAKE_BURN_S ?= 3600
FLAKE_RESULTS ?= $(KAIOPS_CACHE)/flake-results
flake: venv ## the Go tests $(FLAKE_COUNT) times and the unit tests twice in random order, under $(FLAKE_BURNERS) CPU burners; lists flaky tests and the flake rate
	@rm -rf "$(FLAKE_RESULTS)"; mkdir -p "$(FLAKE_RESULTS)"; burners=; \
	for i in $$(seq $(FLAKE_BURNERS)); do timeout $(FLAKE_BURN_S) sh -c 'while :; do :; done' & burners="$$burners $$!"; done; \
	trap 'kill $$burners 2>/dev/null' EXIT; started=$$SECONDS; \
	for m in $(GO_MODULES_TESTED); do echo "== go test -count=$(FLAKE_COUNT) $$m"; \
	  (cd $$m && $(GO_AS_LAB) go test -count=$(FLAKE_COUNT) -json ./... > "$(FLAKE_RESULTS)/go-$${m//\//_}.json"); done; \
	for pass in 1 2; do seed=$$(od -An -N4 -tu4 /dev/urandom | tr -d ' '); echo "== unit tests, random order, pass $$pass, --randomly-seed=$$seed"; \
	  $(VENV_ENV) $(PYTEST) tests/unit -q -p no:cacheprovider -n $(UNIT_WORKERS) \
	    -p randomly --randomly-seed=$$seed --junitxml="$(FLAKE_RESULTS)/unit-$$pass.xml" >/dev/null; done; \
	echo "flake check under $(FLAKE_BURNERS) CPU burners: $$((SECONDS - started)) s"; \
	$(PY) tools/flake_report.py "$(FLAKE_RESULTS)"/*

# Careless and hostile input to every playbook (tools/careless_input.yml, about 110 runs of
# ansible-playbook against kubeconfigs that point nowhere): each run's category and the counts;
# fails unless every run was refused before any cluster was read. Not a make test stage (the
# unit tests check each finding; this re-runs the whole table, about 10 minutes on 2 cores).
careless: venv ## every playbook given malformed input (tools/careless_input.yml): refused, crashed, accepted... per run and counts
	$(VENV_ENV) $(PY) tools/careless_input.py $(if $(CARELESS_K),-k "$(CARELESS_K)")

# The controller's cost as the fleet grows: inventory.yml and rollout.yml --check over 1 to 100
# hosts (one fake API server each) at 5, 20 and 50 forks; wall time, per host, the controller's
# CPU seconds and how many cores they kept busy, peak memory (issue 21). About 40 minutes on 2
# cores; FLEET_COST_ARGS narrows it, e.g. --playbooks inventory --hosts 1 10.
FLEET_COST_ARGS ?=
fleet-cost: venv ## benchmark: inventory.yml and rollout.yml --check over 1 to 100 fake clusters x forks 5, 20, 50 (FLEET_COST_ARGS)
	$(VENV_ENV) $(PY) tools/fleet_cost.py $(FLEET_COST_ARGS)

# make test's stages, in order; the first that fails stops the run. Each runs through
# tools/test_summary.py (its time, exit status and counts: pytest's junit xml, go test -json,
# the Molecule loop's results, kept in $(TEST_RESULTS)), and a summary of every stage ends the
# output whatever happened. A fresh lab: whatever an earlier run or a killed session left is
# cleaned up first (lab-down before lab-up).
# Three streams side by side, since the lab's stages spend most of their time waiting on watches
# and windows (the three-line run of 2026-12-07 used 59 CPU minutes in 58 minutes on 2 cores):
# - TEST_BESIDE, the stages that need no lab, once lab-up ended (a cold lab-up builds the lab's
#   programs on both cores: it took 17 min with the unit tests and go vet beside it, on a fresh
#   machine on 2026-12-07, and the lab's stages then wait on watches most of the time);
# - TEST_ON_2, the lab tests and the drills of MOLECULE_ON_2, on cluster 2 of a lab of two
#   (KAIOPS_LAB_CLUSTER=2: its own API server, node, KAI release and network namespace; the lab
#   tests, make lab-env and make lab-kai follow it), with an evidence root of their own (make
#   drill reads evidence/latest), from lab-up on;
# - the other drills (molecule) on cluster 1.
# Each background stream's output is kept in its log and printed where the run waits for it
# (TEST_JOIN, after molecule); one that fails stops the run there. The fleet's drills and the
# lifecycle tests come last: they bring up and take down the whole fleet.
# (The first try of three streams failed a reproduce case: under their load KAI's admission
# webhook had no endpoint through a case's 60 s window after a switch of build. kai_identify and
# make lab-kai now wait for it, as an install on a loaded cluster needs anyway.)
TEST_BESIDE = lint go-lint unit $(addprefix go-test/,$(GO_MODULES_TESTED)) go-test-cuda/tools/gpuprobe
TEST_ON_2 = pytest/tests/lab molecule-2
TEST_LAB = lab-down lab-up molecule fleet-drill pytest/tests/lifecycle
TEST_JOIN = fleet-drill
TEST_STAGES = setup $(TEST_BESIDE) lab-down lab-up $(TEST_ON_2) molecule fleet-drill pytest/tests/lifecycle
TEST_RESULTS ?= $(KAIOPS_CACHE)/test-results
# The summary runs on the system Python (standard library only), so the setup stage - the venv and
# the lab's Debian packages, minutes on a fresh machine - is timed with the rest.
TEST_SUMMARY = $(PYTHON3) $(CURDIR)/tools/test_summary.py
# A cold make test on a fresh 2-core machine, setup and lab build included, stays under this (CI
# allows 90 minutes); the summary says whether this run did.
TEST_GOAL_S ?= 3600

test: ## set up everything and run the whole suite, then a summary per stage (CI runs exactly this)
	@rm -rf "$(TEST_RESULTS)"; mkdir -p "$(TEST_RESULTS)"; \
	stage() { s=$$1; shift; $(TEST_SUMMARY) stage --results "$(TEST_RESULTS)" $$s -- $(MAKE) --no-print-directory $$s "$$@"; }; \
	streams=; \
	join() { rc=0; for j in $$streams; do wait $${j%%:*} || rc=1; \
	  echo "== the stages run beside the drills ($${j#*:}):"; cat "$(TEST_RESULTS)/$${j#*:}.log"; done; \
	  streams=; return $$rc; }; \
	beside() { ( for b in $(TEST_BESIDE); do stage $$b || exit 1; done ) > "$(TEST_RESULTS)/beside.log" 2>&1 & streams="$$streams $$!:beside"; }; \
	if stage setup; then \
	  for s in $(TEST_LAB); do \
	    if [ $$s = $(TEST_JOIN) ]; then join || break; fi; \
	    if [ $$s = lab-down ]; then stage lab-down || { beside; break; }; continue; fi; \
	    if [ $$s = lab-up ]; then up=0; stage lab-up LAB_CLUSTERS=2 || up=1; beside; \
	      [ $$up = 0 ] || break; \
	      ( for t in $(TEST_ON_2); do KAIOPS_LAB_CLUSTER=2 KAIOPS_EVIDENCE_ROOT="$(TEST_RESULTS)/evidence-cluster-2" stage $$t || exit 1; done \
	      ) > "$(TEST_RESULTS)/cluster-2.log" 2>&1 & streams="$$streams $$!:cluster-2"; continue; fi; \
	    if [ $$s = molecule ]; then stage molecule MOLECULE_SKIP="default $(MOLECULE_ON_2)" || break; continue; fi; \
	    stage $$s || break; \
	  done; \
	fi; \
	join; \
	$(TEST_SUMMARY) report --results "$(TEST_RESULTS)" --goal-s $(TEST_GOAL_S) $(TEST_STAGES)

# make test's first stage: what the others need installed (a no-op when the caches hold it).
setup: venv lab-deps

# One Go module's tests with go test's usual output and the counts: make go-test/lab/fakegpu
go-test/%: $(VENV_STAMP)
	@set -o pipefail; cd $* && $(GO_AS_LAB) go test -json ./... | $(TEST_SUMMARY) go-text
go-test-cuda/%: $(VENV_STAMP)
	@set -o pipefail; cd $* && CGO_ENABLED=1 go test -tags cuda -json ./... | $(TEST_SUMMARY) go-text

# One pytest folder: make pytest/tests/lab
pytest/%: $(VENV_STAMP)
	$(VENV_ENV) $(PYTEST) $*

# Every scenario runs, whatever the one before did; then which failed. molecule/default is not
# a test (its molecule.yml says why). MOLECULE_GLOB names where our scenarios are: molecule sees
# galaxy.yml, takes this for a collection, expects its scenarios in extensions/molecule/ and
# otherwise warns on every run.
MOLECULE_SKIP ?= default
# molecule/fleet_*: drills over the fleet lab (inventories/lab-fleet), run by fleet-drill only
MOLECULE_ALL = $(filter-out $(MOLECULE_SKIP),$(patsubst molecule/%/molecule.yml,%,$(wildcard molecule/*/molecule.yml)))
MOLECULE_FLEET = $(filter fleet_%,$(MOLECULE_ALL))
MOLECULE_SCENARIOS = $(filter-out fleet_%,$(MOLECULE_ALL))

# The scenarios $(1) in turn, each whatever the one before did, then which failed.
# each scenario's log is kept (in make test's stage folder, else a temporary one) and a failed
# one's cause, in one line (test_summary.py why), joins the results the summary prints
define molecule_each
	@set -o pipefail; eval "$$($(LAB) env)"; failed=; logs=$${KAIOPS_TEST_STAGE_DIR:-$$(mktemp -d)}; \
	for s in $(1); do \
	  echo "== molecule $$s"; started=$$SECONDS; why=; \
	  if MOLECULE_GLOB='molecule/*/molecule.yml' $(VENV_ENV) molecule test -s $$s 2>&1 | tee "$$logs/molecule-$$s.log"; then r=passed; \
	  else r=failed; failed="$$failed $$s"; why=$$($(PY) tools/test_summary.py why "$$logs/molecule-$$s.log"); fi; \
	  echo "== molecule $$s: $$r in $$((SECONDS - started))s$${why:+: $$why}"; \
	  if [ -n "$$KAIOPS_TEST_STAGE_DIR" ]; then printf '%s\t%s\t%s\t%s\n' $$s $$r $$((SECONDS - started)) "$$why" >> "$$KAIOPS_TEST_STAGE_DIR/molecule.tsv"; fi; \
	done; \
	if [ -n "$$failed" ]; then echo "molecule: failed:$$failed"; exit 1; fi
endef

molecule: venv ## Molecule scenarios against the running lab (all of them but the fleet's, then which failed)
	@# the lab's kubectl and helm first on PATH: scenarios install KAI builds through helm
	$(call molecule_each,$(MOLECULE_SCENARIOS))

# make test's drills on cluster 2 (beside the others on cluster 1: the longest, which switches
# nothing on cluster 1 and reads its own bundles); run alone: KAIOPS_LAB_CLUSTER=2 make molecule-2
MOLECULE_ON_2 = drill_field_faults
molecule-2: venv ## the drills make test runs on cluster 2 (MOLECULE_ON_2), on the cluster KAIOPS_LAB_CLUSTER picks
	$(call molecule_each,$(MOLECULE_ON_2))

# The fleet's further clusters come up beside a running cluster 1 (which up leaves as it is);
# in make test the lifecycle stage after this one takes the whole fleet down (down takes every
# cluster on the machine) before it brings its own fleet up from nothing.
FLEET_CLUSTERS = 3
fleet-drill: venv lab-deps ## the fleet drills (molecule/fleet_*) over a fleet lab of $(FLEET_CLUSTERS) clusters
	$(MAKE) --no-print-directory lab-up LAB_CLUSTERS=$(FLEET_CLUSTERS)
	$(call molecule_each,$(MOLECULE_FLEET))

# The change window itself is hack/drill.sh (its steps, their order and what it prints are
# described there); make hands it the venv, the lab's python and the inputs below.
# DRILL_ARGS: added to every playbook of the drill, e.g. -e '{"kaiops_kai_chart_ref": "<dir>/kai-scheduler-{version}.tgz"}'
# for a real KAI installed from bundles (make drill KAI_BUNDLE=<pre bundle> DRILL_ARGS=...).
DRILL_ARGS ?=
# A make value as one single-quoted shell word (DRILL_ARGS holds quotes of its own).
shell_quote = '$(subst ','\'',$(1))'
drill: venv lab-deps lab-up ## the change window on the lab: lab up (pre), inventory, reproduce, the rollback rehearsed (rollout to patched, rollback.yml back), the damage remediated (recovery), rollout to patched; prints the report and its decision
	@VENV="$(VENV)" PY="$(PY)" LAB_PY="$(LAB_PY)" ANSIBLE_PLAYBOOK="$(ANSIBLE_PLAYBOOK)" KAI_VERSION="$(KAI_VERSION)" DRILL_ARGS=$(call shell_quote,$(DRILL_ARGS)) hack/drill.sh

# Evidence bundles are <UTC start>-<playbook>-<id> folders, so their names sort by time. The one
# evidence/latest points at is always kept, and nothing else in evidence/ is touched. A lab state
# folder means a lab is up or left something behind: make lab-down's own `down` undoes it.
KEEP_EVIDENCE ?= 20
EVIDENCE_ROOT ?= $(or $(KAIOPS_EVIDENCE_ROOT),$(CURDIR)/evidence)

clean: ## remove evidence bundles but the newest $(KEEP_EVIDENCE) (KEEP_EVIDENCE) and latest; make lab-down if a lab state folder exists
	@case "$(KEEP_EVIDENCE)" in ''|*[!0-9]*) echo "KEEP_EVIDENCE must be a number of runs, got '$(KEEP_EVIDENCE)'"; exit 2;; esac; \
	latest=$$(basename "$$(readlink "$(EVIDENCE_ROOT)/latest" 2>/dev/null)" 2>/dev/null); \
	mapfile -t old < <(ls -1 "$(EVIDENCE_ROOT)" 2>/dev/null | grep -E '^[0-9]{8}T[0-9]{6}Z-' | sort -r | tail -n +$$(($(KEEP_EVIDENCE) + 1))); \
	removed=0; for b in "$${old[@]}"; do \
	  if [ "$$b" != "$$latest" ]; then rm -rf "$(EVIDENCE_ROOT)/$$b" && removed=$$((removed + 1)); fi; \
	done; \
	echo "evidence: removed $$removed bundles older than the newest $(KEEP_EVIDENCE) in $(EVIDENCE_ROOT)$${latest:+ (kept latest: $$latest)}"
	@kubeconfig=$$($(LAB) kubeconfig) || exit 1; state=$$(dirname "$$kubeconfig"); \
	if [ -d "$$state" ]; then echo "lab: state folder $$state exists: taking the lab down"; $(LAB) down; \
	else echo "lab: no state folder ($$state): nothing to clean"; fi
