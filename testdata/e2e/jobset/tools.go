//go:build tools

// Package tools names the main package this module builds, so that go mod
// tidy records everything it needs.
package tools

import _ "sigs.k8s.io/jobset"
