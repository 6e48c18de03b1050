# kaiops: make targets are a fixed interface (README.md). Each area lives in mk/.
SHELL := /bin/bash
.DEFAULT_GOAL := help

# Everything built or installed lives outside git, keyed by version, reused when present.
KAIOPS_CACHE ?= $(HOME)/.cache/kaiops
export KAIOPS_CACHE

include mk/python.mk
include mk/lab.mk

.PHONY: help test drill molecule go-lint
help: ## list targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

GO_MODULES_TESTED := tools/gpuprobe lab/fakegpu

GO_MODULES_OWN := $(GO_MODULES_TESTED) lab/build/etcd

go-lint: ## gofmt and go vet over our own Go code
	@out=$$(gofmt -l $(GO_MODULES_OWN)); if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi
	@for m in $(GO_MODULES_OWN); do (cd $$m && go vet ./...) || exit 1; done

test: venv lab-deps ## set up everything and run the whole suite (CI runs exactly this)
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory go-lint
	$(MAKE) --no-print-directory unit
	@for m in $(GO_MODULES_TESTED); do (cd $$m && go test ./...) || exit 1; done
	cd tools/gpuprobe && CGO_ENABLED=1 go test -tags cuda ./...
	@# a fresh lab: whatever an earlier run or a killed session left is cleaned up first
	$(MAKE) --no-print-directory lab-down
	$(MAKE) --no-print-directory lab-up
	$(VENV_ENV) $(PYTEST) tests/lab
	$(MAKE) --no-print-directory molecule
	$(VENV_ENV) $(PYTEST) tests/lifecycle

molecule: venv ## Molecule scenarios against the running lab
	@for s in $$(ls molecule); do \
	  echo "== molecule $$s"; \
	  $(VENV_ENV) molecule test -s $$s || exit 1; \
	done

drill: venv lab-deps ## bring up the lab and run the main job (rollout.yml) against it
	$(MAKE) --no-print-directory lab-up
	@# the lab's kubectl and helm first on PATH; the report's place is printed whatever the verdict
	@eval "$$($(LAB) env)"; $(VENV_ENV) $(ANSIBLE_PLAYBOOK) rollout.yml; rc=$$?; \
	echo; echo "report: $(CURDIR)/evidence/latest/report.md (exit status $$rc)"; exit $$rc
