//go:build cuda

package main

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// fakeDriver builds testdata/fakecuda into a shared library and points the probe at it.
func fakeDriver(t *testing.T) string {
	t.Helper()
	so := filepath.Join(t.TempDir(), "libcuda-fake.so")
	cmd := exec.Command("gcc", "-shared", "-fPIC", "-O1", "-o", so, "testdata/fakecuda/fakecuda.c", "-lm")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("cannot build the fake driver (gcc): %v\n%s", err, out)
	}
	return so
}

func TestCudaBackendAgainstFakeDriver(t *testing.T) {
	so := fakeDriver(t)
	tests := []struct {
		name       string
		lib        string
		mode       string
		args       []string
		want       int
		gpuPresent bool
		allocated  float64
	}{
		{"driver missing is no GPU", filepath.Join(t.TempDir(), "absent.so"), "ok",
			[]string{"--size", "5"}, ExitPassed, false, 0},
		{"driver missing with require-gpu", filepath.Join(t.TempDir(), "absent.so"), "ok",
			[]string{"--require-gpu", "--size", "5"}, ExitNoGPU, false, 0},
		{"cuInit no device", so, "nodevice", []string{"--require-gpu"}, ExitNoGPU, false, 0},
		{"kernel result checked", so, "ok", []string{"--size", "37", "--alloc-mib", "64"}, ExitPassed, true, 64},
		{"allocation shortfall searched", so, "ok", []string{"--size", "3", "--alloc-mib", "300"}, ExitPassed, true, 256},
		{"wrong kernel result detected", so, "wrong", []string{"--size", "20"}, ExitMismatch, true, 0},
		{"launch failure is a GPU error", so, "launchfail", []string{"--size", "20"}, ExitGPUError, true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GPUPROBE_LIBCUDA", tc.lib)
			t.Setenv("FAKECUDA_MODE", tc.mode)
			t.Setenv("FAKECUDA_MEM_MIB", "256")
			code, m := runOnce(t, tc.args, envOf(nil))
			if code != tc.want || m["gpu_present"] != tc.gpuPresent {
				t.Fatalf("exit %d gpu_present %v, want %d %v: %v / %v",
					code, m["gpu_present"], tc.want, tc.gpuPresent, m["error"], m["gpu_detail"])
			}
			if got := m["alloc"].(map[string]any)["allocated_mib"].(float64); got != tc.allocated {
				t.Fatalf("allocated %v MiB, want %v", got, tc.allocated)
			}
			if tc.gpuPresent {
				devs := m["devices"].([]any)
				d := devs[0].(map[string]any)
				if d["uuid"] != "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f" || d["total_memory_mib"].(float64) != 256 {
					t.Fatalf("device = %v", d)
				}
			}
		})
	}
}
