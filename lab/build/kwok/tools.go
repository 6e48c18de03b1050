//go:build tools

// Package tools pins kwok; the build runs `go build sigs.k8s.io/kwok/cmd/kwok` inside this module.
package tools
