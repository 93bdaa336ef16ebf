# Targets for working on rein. `make` alone lists them.
GO ?= go
FUZZTIME ?= 30s

.PHONY: help test race lint bench fuzz cover ci run
help: ## list the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-8s %s\n", $$1, $$2}'

run: ## run the main example offline
	$(GO) run ./cmd/rein run examples/resume-screen

test: ## the test suite (what the README says)
	$(GO) test ./...

race: ## the test suite under the race detector
	$(GO) test -race ./...

lint: ## golangci-lint (.golangci.yml: goimports, staticcheck, errorlint, govet, errcheck, …)
	bash .ci/lint

bench: ## the engine benchmarks (figures go to docs/performance.md)
	$(GO) test ./internal/engine -run '^$$' -bench . -benchtime 2s -count 3

fuzz: ## every fuzz target for FUZZTIME each
	FUZZTIME=$(FUZZTIME) bash .ci/fuzz

cover: ## coverage report in coverage.out
	$(GO) test -coverprofile=coverage.out ./... && $(GO) tool cover -func=coverage.out | tail -1

ci: ## what CI runs
	bash .ci/run
