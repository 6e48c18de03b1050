# The lab: a disposable local Kubernetes cluster built from pinned sources (lab/).
# The library in lab/kailab does the work; these targets are its thin front door.

LAB_PY = $(if $(wildcard $(PY)),$(PY),python3)
LAB := PYTHONPATH=$(CURDIR)/lab $(LAB_PY) -m kailab
# Debian packages the real node needs (versions pinned in lab/versions.yaml).
LAB_DEBS := containerd runc containernetworking-plugins busybox-static iptables conntrack openssl gcc libc6-dev

.PHONY: lab-deps lab-build lab-up lab-down lab-status lab-kubeconfig lab-env lab-plan lab-bench kai-versions

lab-deps: ## install the lab's Debian packages when missing
	@missing=$$(for p in $(LAB_DEBS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing: $$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

lab-build: lab-deps $(VENV_STAMP) ## build every pinned lab program into $(KAIOPS_CACHE)/lab (cached by version)
	$(LAB) build

lab-up: lab-deps $(VENV_STAMP) ## build if needed, start the lab, wait until every node is Ready
	$(LAB) up
	@if [ -n "$(KAI_VERSION)" ]; then $(MAKE) --no-print-directory kai-install KAI_VERSION=$(KAI_VERSION); fi

lab-down: ## stop every lab process and restore the machine as it was
	$(LAB) down

lab-status: ## each component: running or not, version, pid, ports
	@$(LAB) status

lab-kubeconfig: ## print only the lab's kubeconfig path
	@$(LAB) kubeconfig

lab-env: ## print exports for eval: KUBECONFIG and PATH with the lab's kubectl and helm first
	@$(LAB) env

lab-plan: ## print every component command without running anything
	@$(LAB) plan

lab-bench: lab-deps $(VENV_STAMP) ## benchmark: cold build, warm up-to-Ready, down, idle memory (prints figures)
	PYTHONPATH=$(CURDIR)/lab $(LAB_PY) lab/bench.py

kai-versions: ## print the KAI version pair under test: pre=<v> patched=<v>
	@PYTHONPATH=$(CURDIR)/lab $(LAB_PY) -m kailab.kai versions

kai-install:
	@PYTHONPATH=$(CURDIR)/lab $(LAB_PY) -m kailab.kai install $(KAI_VERSION)
