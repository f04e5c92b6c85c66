// Package e2e runs a real Kubernetes API server (etcd and kube-apiserver) on
// 127.0.0.1 for end-to-end tests, from binaries built from Go modules.
//
// The binaries are built by package pinned from the module in
// testdata/e2e/kube, which pins their versions, and cached outside the
// repository (in the user's cache folder, keyed by that module's go.sum), so
// later runs reuse them. Every process started is stopped by Stop, and dies
// with the test process if that is killed first.
//
// It runs on Linux only: its processes die with the test process
// (Pdeathsig), and the simulated cluster runs programs under unshare.
package e2e
