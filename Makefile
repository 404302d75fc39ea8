# tug's entry points. The two a newcomer needs: `make demo` and `make test`.
SHELL := /bin/bash
export GOTOOLCHAIN := local

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo none)
DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -s -w -X tug.dev/tug/pkg/version.Version=$(VERSION) -X tug.dev/tug/pkg/version.Commit=$(COMMIT) -X tug.dev/tug/pkg/version.Date=$(DATE)
NODES   ?= 1
# K8S_VERSION=v1.34.4 make test|cluster-up: the local cluster's Kubernetes release
# (default in test/cluster/build-localk8s.sh; docs/compatibility.md lists the tested ones).

.PHONY: build test unit e2e lint docs check-docs demo bench cluster-up cluster-down cluster-status cluster-kubeconfig cluster-registry cluster-router

build: ## bin/tug (and bin/kubectl-tug, the same binary as a kubectl plugin, with bin/kubectl_complete-tug for its completion)
	go build -trimpath -ldflags '$(LDFLAGS)' -o bin/tug ./cmd/tug
	ln -sf tug bin/kubectl-tug
	install -m 0755 plugins/kubectl_complete-tug bin/kubectl_complete-tug

test: ## unit and end-to-end tests; starts the local cluster when none runs
	hack/test.sh

unit: ## unit tests only, no cluster
	go test ./...

e2e: ## end-to-end tests against a running local cluster
	TUG_E2E_REQUIRED=1 go test -count=1 ./test/e2e/...

lint:
	@bad=$$(gofmt -l $$(git ls-files '*.go')); [ -z "$$bad" ] || { echo "gofmt: $$bad"; exit 1; }
	go vet ./... && go vet -tags gendocs ./cmd/tug && go vet -tags e2e ./cmd/tug
	cd test/images/dbapp && go vet ./... && go test ./...
	go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
	go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 -tags gendocs ./cmd/tug
	@$(call shape,go run ./hack/funcsize -max 60 .)
	@$(call shape,go run github.com/fzipp/gocyclo/cmd/gocyclo@v0.6.0 -over 20 -ignore '_test\.go' .)

# shape CHECK: no function over 60 lines (a data table marked //tug:table
# aside) or with a cyclomatic complexity over 20 (issues 23 and 35).
# CHECK prints the functions over them and exits non-zero.
shape = echo "$(1)"; $(1)

docs: ## regenerate the command reference in docs/
	go run ./hack/gendocs docs

check-docs:
	hack/check-docs

demo: ## the local cluster plus tug's main job on it
	hack/demo.sh

bench: ## every benchmark against the local cluster (started when none runs); rewrites docs/benchmarks.md (ONLY=route,cnb: those sections only)
	bench/run.sh

cluster-up: ## NODES=1|2, K8S_VERSION=v1.X.Y
	test/cluster/cluster.sh up $(NODES)

cluster-down:
	test/cluster/cluster.sh down

cluster-status:
	test/cluster/cluster.sh status

cluster-kubeconfig:
	@test/cluster/cluster.sh kubeconfig

cluster-registry: ## the local registry's HOST:PORT
	@test/cluster/cluster.sh registry

cluster-router: ## the local router's address (HTTP on 80, HTTPS on 443)
	@test/cluster/cluster.sh router
