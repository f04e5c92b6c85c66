// Package fuzz holds the fuzz targets of the settings loader and the
// renderer (and the tests that share their helpers), apart from those
// packages' other tests: go test -fuzz compiles every package of the test
// binary with coverage instrumentation, and the other tests of pkg/render and
// pkg/settings import Helm's action and values packages, which nearly double
// what a fuzz run must compile (docs/design.md, "Tests").
package fuzz
