//go:build tools

// Package tools pins the Kubernetes commands this wrapper builds; the build
// itself runs `go build k8s.io/kubernetes/cmd/<name>` inside this module.
package tools
