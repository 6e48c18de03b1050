# kaiops: make targets are a fixed interface (README.md). Each area lives in mk/.
SHELL := /bin/bash
.DEFAULT_GOAL := help

# Everything built or installed lives outside git, keyed by version, reused when present.
KAIOPS_CACHE ?= $(HOME)/.cache/kaiops
export KAIOPS_CACHE

include mk/python.mk
include mk/lab.mk

.PHONY: help test drill
help: ## list targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'
