//go:build tools

// Package tools names the main packages this module builds, so that go mod
// tidy records everything they need.
package tools

import (
	_ "github.com/kubeflow/training-operator/cmd/training-operator.v1"
	_ "github.com/project-codeflare/appwrapper/cmd"
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
