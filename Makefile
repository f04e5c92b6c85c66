# Everything here runs from a fresh clone with Go and the Go module proxy only,
# but make test, which also needs Node.js and the npm registry (npm ci installs
# the language server of the editor test).
GO      ?= go
BIN     ?= bin/generator
EXAMPLE ?= examples/helloworld.settings.yaml
HARNESS  = testdata/harness
EDITOR_TEST = testdata/editor
PLATFORMS = linux/amd64 linux/arm64 darwin/amd64 darwin/arm64

.PHONY: build run test integration e2e e2e-local e2e-cluster sim-cluster sim-deps prebuild cross fuzz bench bench-scale golden generate lint fmt dist

## build: the generator binary, in bin/
build:
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/generator

## run: render the helloworld example with the embedded chart
run:
	$(GO) run ./cmd/generator render -f $(EXAMPLE)

## test: the hermetic tier, go test ./... of this module: golden and invalid
## cases, the command line's scripts, Helm 3 parity through Helm's own packages,
## the generated files, the editor schema in yaml-language-server; no network
## but npm ci, nothing built but the tests, nothing read from outside the
## repository
test: $(EDITOR_TEST)/node_modules/.package-lock.json
	GENERATOR_REQUIRE_YAML_LANGUAGE_SERVER=1 $(GO) test ./...

# The language server the editor test starts (go test ./schema), pinned by
# testdata/editor/package-lock.json: npm ci installs it again when the lock
# file changes (it rewrites node_modules, and node_modules/.package-lock.json).
$(EDITOR_TEST)/node_modules/.package-lock.json: $(EDITOR_TEST)/package-lock.json
	cd $(EDITOR_TEST) && npm ci --no-audit --no-fund

## integration: the harness tier (testdata/harness, a module of its own): the
## fidelity checks against the upstream CRDs (from their Go modules), AppWrapper's
## podSet code and the PyTorchJob webhook; the helm commands of Helm 3 and Helm 4
## (template, refusals, lint, package; the first run builds Helm 4 from
## testdata/helm4, about 3 minutes cold), pushed to a real OCI registry (built from
## testdata/registry) and rendered from it, as Argo CD renders it too; Argo CD's and
## Flux's health checks of docs/gitops; go install from a module proxy; what the
## binary links
integration:
	cd $(HARNESS) && $(GO) test -timeout 30m ./...

## e2e: every example against a real kube-apiserver on 127.0.0.1, built from Go
## modules (the first run builds etcd, kube-apiserver and kubectl: minutes);
## and the ValidatingAdmissionPolicies of the profiles of testdata/profile there
e2e:
	cd $(HARNESS) && $(GO) test -tags e2e -count=1 -timeout 60m -v -run '^(TestExamplesOnARealAPIServer|TestProfilePolicyOnARealAPIServer)$$' ./e2e/

## e2e-local: generator run --local on this machine's PyTorch (Debian's, gloo
## on CPU): the process nodes' job of each kind that runs here, a failing rank,
## a pod of 8 processes of which one raises and of which 7 raise, a setup
## command that fails, Ctrl-C, a claim not mapped, and a new user's first job
## from generator init
e2e-local: sim-deps
	cd $(HARNESS) && $(GO) test -tags e2e -count=1 -timeout 20m -v -run '^TestRunLocal$$' ./e2e/

## e2e-cluster: rendered jobs queued, admitted and run to their end in a
## simulated GPU cluster on 127.0.0.1: kube-apiserver, etcd, controller manager
## and scheduler, kwok's fake GPU nodes in blocks and racks, process nodes whose
## pods run for real (torchrun from Debian's PyTorch, each pod in network and
## mount namespaces of its own; needs root), Kueue (with topology-aware
## scheduling), AppWrapper, the training operator, JobSet and Kubeflow Trainer
## v2, all built from Go modules pinned in testdata/e2e (the first run builds
## them: about 35 minutes on two cores; later runs reuse them)
## (-parallel: the scenarios wait on the cluster far more than they compute,
## and all of them run at once, not only as many as the machine has cores)
e2e-cluster: sim-deps
	cd $(HARNESS) && $(GO) test -tags e2e -count=1 -timeout 80m -parallel 16 -v -run '^TestSimulatedCluster$$' ./e2e/

## sim-cluster: the simulated cluster of make e2e-cluster, by hand, with the
## same controllers, queues and nodes: prints the admin's kubeconfig file as
## its first line, keeps the cluster until Ctrl-C, then stops it (needs root);
## with MULTIKUEUE=1, a MultiKueue manager too, whose worker it is: then the
## manager's kubeconfig first, the worker's second, and third one of both
## (contexts manager and worker1)
MULTIKUEUE ?=
sim-cluster: sim-deps
	@cd $(HARNESS) && $(GO) build -o $(CURDIR)/bin/sim-cluster ./cmd/sim-cluster
	@bin/sim-cluster -repo $(CURDIR) $(if $(MULTIKUEUE),-multikueue)

## sim-deps: what the process nodes run, from Debian's packages when missing:
## python3-torch and bind9-dnsutils (needs root to install them)
sim-deps:
	@bash .ci/sim-deps

## prebuild: every program the harness's tiers build from the modules pinned
## in testdata, in the order they need them: Helm 4, the OCI registry, the API
## server, the simulated cluster's controllers (the tiers build what they need anyway;
## .ci/run starts this in the background so that the builds overlap its steps)
prebuild:
	cd $(HARNESS) && $(GO) run ./cmd/prebuild -testdata $(CURDIR)/testdata

## cross: the generator module builds for every release platform (static and -trimpath, as make dist builds, so that dist reuses the compiled packages)
cross:
	@for p in $(PLATFORMS); do echo "GOOS=$${p%/*} GOARCH=$${p#*/} go build -trimpath ./..."; \
	  CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build -trimpath ./... || exit 1; done

## fuzz: each fuzz target for FUZZTIME (go test -fuzz); what a target finds
## goes to pkg/fuzz/testdata/fuzz and becomes a test case
FUZZTIME ?= 1m
FUZZFLAGS = -run '^$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
fuzz:
	$(GO) test $(FUZZFLAGS) -fuzz '^FuzzLoad$$' ./pkg/fuzz
	$(GO) test $(FUZZFLAGS) -fuzz '^FuzzRender$$' ./pkg/fuzz
	$(GO) test $(FUZZFLAGS) -fuzz '^FuzzStrings$$' ./pkg/fuzz
	$(GO) test $(FUZZFLAGS) -fuzz '^FuzzWords$$' ./pkg/fuzz

## bench: Go benchmarks, then the generator against helm template with hyperfine
## and /usr/bin/time (BENCHMARKS.md records the results; needs a quiet machine)
bench:
	bash .ci/bench

## bench-scale: what each command costs (time, requests, bytes, memory) as
## a job grows from 1 to 1,024 pods and a namespace from 10 to 5,000 jobs,
## and what a follower asks of a job that does not change and how soon it
## tells a change, beside kubectl, in the simulated cluster; BEFORE=COMMIT
## measures that commit's generator too; PODS, JOBS, RUNS and KINDS narrow
## it (BENCHMARKS.md records the results; needs root and about two hours on
## two cores)
bench-scale: sim-deps
	bash .ci/bench-scale

## golden: rewrite the expected files of the tests (the ones inside the
## scripts of cmd/generator/testdata/script too) and the files generated from
## the schema; review the diff, it is a change of behaviour
golden: generate
	$(GO) test ./... -update

## generate: rewrite the files generated from schema/settings.schema.json
## (go generate ./schema): chart/values.schema.json, schema/editor.schema.json,
## chart/values.yaml, docs/settings.md, chart/README.md (from
## chart/README.md.gotmpl) and pkg/validate/validator.schema.json
generate:
	$(GO) generate ./schema

## lint: gofmt, go vet of both modules, and helm lint --strict with the helm
## command the harness module pins
lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./... ./.ci/floor ./testdata/cases
	cd $(HARNESS) && $(GO) vet ./... && $(GO) vet -tags e2e ./...
	cd $(HARNESS) && $(GO) tool helm lint --strict ../../chart -f ../../$(EXAMPLE)

## dist: release archives in dist/: the generator for linux and darwin on amd64
## and arm64, the chart packaged by helm, and SHA256SUMS
dist:
	bash .ci/dist

## fmt: format the Go code
fmt:
	gofmt -w .
