# The lab: a disposable local Kubernetes cluster built from pinned sources (lab/).
# The library in lab/kailab does the work; these targets are its thin front door.

LAB_PY = $(if $(wildcard $(PY)),$(PY),python3)
# LAB_CLUSTERS=<n>: a fleet of n clusters side by side (default 1: the one lab). The first is the
# lab every target has always used; the others each live in network namespaces of their own.
LAB_CLUSTERS ?= 1
LAB := PYTHONPATH=$(CURDIR)/lab KAIOPS_LAB_CLUSTERS=$(LAB_CLUSTERS) $(LAB_PY) -m kailab
# Debian packages the real node needs (versions pinned in lab/versions.yaml).
LAB_DEBS := containerd runc containernetworking-plugins busybox-static iptables conntrack openssl gcc libc6-dev

.PHONY: lab-deps lab-build lab-up lab-kai lab-kai-bundle lab-down lab-status lab-kubeconfig lab-env lab-plan lab-bench restore-bench kai-versions

lab-deps: ## install the lab's Debian packages when missing
	@missing=$$(for p in $(LAB_DEBS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing: $$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

lab-build: lab-deps $(VENV_STAMP) ## build every pinned lab program into $(KAIOPS_CACHE)/lab (cached by version)
	$(LAB) build

# KAI in the lab: the stand-in at KAI_VERSION (pre, patched or a release tag of
# meta/kai_releases.yml; default pre), or the real KAI from KAI_BUNDLE=<dir>.
KAI_VERSION ?=
KAI_BUNDLE ?=
LAB_KAI_ENV := KAI_VERSION="$(KAI_VERSION)" KAI_BUNDLE="$(KAI_BUNDLE)"

lab-up: lab-deps $(VENV_STAMP) ## build if needed, start the lab with KAI (KAI_VERSION, KAI_BUNDLE), wait until Ready
	$(LAB_KAI_ENV) $(LAB) up

lab-kai: $(VENV_STAMP) ## switch an up lab's KAI through helm upgrade (KAI_VERSION=pre|patched|vX.Y.Z or KAI_BUNDLE=dir)
	@$(LAB_KAI_ENV) $(LAB) kai

lab-kai-bundle: $(VENV_STAMP) ## export the stand-in as an air-gapped KAI bundle into KAI_BUNDLE_OUT (KAI_VERSION)
	@test -n "$(KAI_BUNDLE_OUT)" || { echo "set KAI_BUNDLE_OUT=<dir>"; exit 2; }
	@$(LAB_KAI_ENV) $(LAB) kai-bundle "$(KAI_BUNDLE_OUT)"

lab-down: ## stop every lab process and restore the machine as it was
	$(LAB) down

lab-status: ## each component: running or not, version, pid, ports
	@$(LAB) status

lab-kubeconfig: ## print only the lab's kubeconfig path
	@$(LAB) kubeconfig

lab-env: ## print exports for eval: KUBECONFIG, VIRTUAL_ENV, PATH with the venv (ansible-playbook, molecule, pytest), kubectl, helm first
	@# a missing venv is built first, its output on stderr so that only the exports reach eval
	@test -f "$(VENV_STAMP)" || $(MAKE) --no-print-directory venv >&2
	@KAIOPS_VENV="$(VENV)" $(LAB) env

lab-plan: ## print every component command without running anything
	@$(LAB) plan

lab-bench: lab-deps $(VENV_STAMP) ## benchmark: warm up-to-Ready, delete time, idle memory with KAI, KAI install/switch and 100 fraction pods, a full reproduce.yml (lab/bench.py --cold adds a cold build); LAB_CLUSTERS=n: the fleet's up, memory per cluster, down
	PYTHONPATH=$(CURDIR)/lab KAIOPS_LAB_CLUSTERS=$(LAB_CLUSTERS) $(LAB_PY) lab/bench.py

# RESTORE_BENCH_ARGS: e.g. --setup "make -s lab-kai KAI_BUNDLE=<pre bundle>" -e '{"kaiops_kai_chart_ref": ...}'
restore-bench: $(VENV_STAMP) ## benchmark on the up lab: time to restore after a failed gate and in rollback.yml, from the decision to every component at the recorded version and a passing verification (RESTORE_BENCH_ARGS)
	@eval "$$($(LAB) env)"; export PATH="$(VENV)/bin:$$PATH"; PYTHONPATH=$(CURDIR)/lab $(PY) lab/bench_restore.py $(RESTORE_BENCH_ARGS)

kai-versions: ## print the KAI version pair under test from meta/kai_releases.yml: pre=<v> patched=<v>
	@PYTHONPATH=$(CURDIR)/lab $(LAB_PY) -m kailab.kai versions
