//go:build !cuda

package main

const buildVariant = "nocuda"

// openBackend: this binary was built without the cuda tag (CGO_ENABLED=0), so it has
// no way to reach a GPU and says so.
func openBackend() (gpu, string) {
	return nil, "built without CUDA support (no 'cuda' build tag): the GPU is never probed"
}
