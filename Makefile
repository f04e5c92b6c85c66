# Everything here runs from a fresh clone with Go and the Go module proxy only.
GO      ?= go
BIN     ?= bin/generator
EXAMPLE ?= examples/helloworld.settings.yaml

.PHONY: build run test e2e e2e-cluster fuzz bench golden generate docs lint fmt dist

## build: the generator binary, in bin/
build:
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/generator

## run: render the helloworld example with the embedded chart
run:
	$(GO) run ./cmd/generator render -f $(EXAMPLE)

## test: every test (golden files, invalid inputs, Helm 3 and Helm 4 parity,
## helm lint, CLI); the first run builds Helm 4 from testdata/helm4 (about 3
## minutes cold on two cores), hence the longer timeout
test:
	$(GO) test -timeout 30m ./...

## e2e: every example against a real kube-apiserver on 127.0.0.1, built from Go
## modules (the first run builds etcd, kube-apiserver and kubectl: minutes)
e2e:
	$(GO) test -tags e2e -count=1 -timeout 60m -v -run '^TestExamplesOnARealAPIServer$$' ./pkg/e2e/

## e2e-cluster: rendered jobs queued, admitted and run to their end in a
## simulated GPU cluster on 127.0.0.1: kube-apiserver, etcd, controller manager
## and scheduler, kwok's fake GPU nodes, Kueue, AppWrapper and the training
## operator, all built from Go modules pinned in testdata/e2e (the first run
## builds them: about 20 minutes on two cores; later runs reuse them)
e2e-cluster:
	$(GO) test -tags e2e -count=1 -timeout 80m -v -run '^TestSimulatedCluster$$' ./pkg/e2e/

## fuzz: each fuzz target for FUZZTIME (go test -fuzz); what a target finds
## goes to its package's testdata/fuzz and becomes a test case
FUZZTIME ?= 1m
FUZZFLAGS = -run '^$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
fuzz:
	$(GO) test $(FUZZFLAGS) -fuzz '^FuzzLoad$$' ./pkg/settings
	$(GO) test $(FUZZFLAGS) -fuzz '^FuzzRender$$' ./pkg/render
	$(GO) test $(FUZZFLAGS) -fuzz '^FuzzStrings$$' ./pkg/render
	$(GO) test $(FUZZFLAGS) -fuzz '^FuzzWords$$' ./pkg/render

## bench: Go benchmarks, then the generator against helm template with hyperfine
## and /usr/bin/time (BENCHMARKS.md records the results; needs a quiet machine)
bench:
	bash .ci/bench

## golden: rewrite the expected files of the tests (the ones inside the
## scripts of cmd/generator/testdata/script too) and the files generated from
## the schema (chart/values.yaml, chart/values.schema.json); review the diff
golden:
	$(GO) test ./... -update

## generate: rewrite only the files generated from schema/settings.schema.json
## (chart/values.yaml, chart/values.schema.json and the settings reference)
generate:
	$(GO) test ./chart ./pkg/settings -run 'TestValuesSchemaIsTheSettingsSchema|TestValuesFileIsGeneratedFromTheSchema|TestReferenceIsGeneratedFromTheSchema' -update

## docs: rewrite the settings reference (docs/settings.md, chart/README.md) from the schema
docs:
	$(GO) test ./pkg/settings -run 'TestReferenceIsGeneratedFromTheSchema' -update

## lint: gofmt, go vet, and helm lint --strict with the helm command of go.mod
lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./... ./.ci/floor
	$(GO) tool helm lint --strict chart -f $(EXAMPLE)

## dist: release archives in dist/: the generator for linux and darwin on amd64
## and arm64, the chart packaged by helm, and SHA256SUMS
dist:
	bash .ci/dist

## fmt: format the Go code
fmt:
	gofmt -w .
