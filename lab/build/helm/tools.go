//go:build tools

// Package tools pins helm; the build runs `go build helm.sh/helm/v3/cmd/helm` inside this module.
package tools
