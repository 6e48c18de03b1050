//go:build cuda

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// build compiles the probe (the cuda variant, or the default one) into dir.
func build(t *testing.T, dir string, cuda bool) string {
	t.Helper()
	bin := filepath.Join(dir, "gpuprobe")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if cuda {
		cmd = exec.Command("go", "build", "-tags", "cuda", "-o", bin, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build (cuda %v): %v\n%s", cuda, err, out)
	}
	return bin
}

// runScript runs run-real-gpu.sh with the given environment; returns its exit code, its
// output folder and what it printed.
func runScript(t *testing.T, env ...string) (int, string, string) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	out := filepath.Join(t.TempDir(), "results")
	cmd := exec.Command("bash", "run-real-gpu.sh", out)
	cmd.Env = append(os.Environ(), append([]string{"SIZE=32", "HOLD_SECONDS=2", "ALLOC_MIB=64",
		"FAKECUDA_MEM_MIB=256"}, env...)...)
	printed, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		exit, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("run-real-gpu.sh: %v", err)
		}
		code = exit.ExitCode()
	}
	return code, out, string(printed)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

type pair struct {
	SameDevice bool             `json:"same_device"`
	Devices    []string         `json:"devices"`
	OverlapS   float64          `json:"overlap_s"`
	ExitCodes  []int            `json:"exit_codes"`
	Probes     []map[string]any `json:"probes"`
}

func readPair(t *testing.T, path string) pair {
	t.Helper()
	var p pair
	if err := json.Unmarshal([]byte(readFile(t, path)), &p); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(p.Probes) != 2 {
		t.Fatalf("%s records %d probes, want 2", path, len(p.Probes))
	}
	return p
}

func TestRunRealGPUSaysNoGPUAndExits3(t *testing.T) {
	dir := t.TempDir()
	cudaBin := build(t, filepath.Join(dir, "cuda"), true)
	plainBin := build(t, filepath.Join(dir, "plain"), false)
	tests := []struct {
		name, bin, lib, detail string
	}{
		{"cuda build, no driver library", cudaBin, filepath.Join(dir, "absent.so"), "cannot load"},
		{"build without cuda", plainBin, "", "built without CUDA support"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, printed := runScript(t, "GPUPROBE_BIN="+tc.bin, "GPUPROBE_LIBCUDA="+tc.lib)
			if code != ExitNoGPU {
				t.Fatalf("exit %d, want %d:\n%s", code, ExitNoGPU, printed)
			}
			summary := readFile(t, filepath.Join(out, "summary.txt"))
			if !strings.HasPrefix(summary, "no GPU present: ") || !strings.Contains(summary, tc.detail) {
				t.Fatalf("summary = %q", summary)
			}
			if _, err := os.Stat(filepath.Join(out, "shared-1.json")); err == nil {
				t.Fatal("a shared probe ran without a GPU")
			}
			if !strings.Contains(readFile(t, filepath.Join(out, "preflight.json")), `"gpu_present":false`) {
				t.Fatal("preflight.json does not record gpu_present false")
			}
		})
	}
}

func TestRunRealGPURecordsTwoConcurrentProbesOnOneDevice(t *testing.T) {
	so := fakeDriver(t)
	bin := build(t, t.TempDir(), true)
	shared := filepath.Join(t.TempDir(), "device-memory")
	code, out, printed := runScript(t, "GPUPROBE_BIN="+bin, "GPUPROBE_LIBCUDA="+so,
		"FAKECUDA_SHARED_FILE="+shared)
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, printed)
	}
	p := readPair(t, filepath.Join(out, "shared.json"))
	if !p.SameDevice || p.Devices[0] != "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f" || p.OverlapS < 1 {
		t.Fatalf("shared.json: same device %v %v, overlap %v s", p.SameDevice, p.Devices, p.OverlapS)
	}
	for i, probe := range p.Probes {
		alloc := probe["alloc"].(map[string]any)
		check := probe["check"].(map[string]any)
		if probe["gpu_present"] != true || check["passed"] != true || alloc["allocated_mib"].(float64) != 64 ||
			p.ExitCodes[i] != 0 {
			t.Fatalf("shared probe %d: %v", i+1, probe)
		}
	}
	// Contention: each asks 60 % (153 MiB) of the 256 MiB both share; one gets less.
	c := readPair(t, filepath.Join(out, "contention.json"))
	short, total := 0, 0.0
	for _, probe := range c.Probes {
		alloc := probe["alloc"].(map[string]any)
		total += alloc["allocated_mib"].(float64)
		if alloc["satisfied"] != true {
			short++
			if !strings.Contains(alloc["error"].(string), "CUDA_ERROR_OUT_OF_MEMORY") {
				t.Fatalf("short allocation without out-of-memory: %v", alloc)
			}
		}
	}
	if short != 1 || total > 256 || !c.SameDevice {
		t.Fatalf("contention: %d short, %v MiB in all, same device %v", short, total, c.SameDevice)
	}
	summary := readFile(t, filepath.Join(out, "summary.txt"))
	if !strings.Contains(summary, "shared     same device: true, overlap ") {
		t.Fatalf("summary.txt:\n%s", summary)
	}
	if left := strings.TrimSpace(readFile(t, shared)); left != "0" {
		t.Fatalf("device memory left in use after both probes: %s bytes", left)
	}
}

func TestRunRealGPUFailsWhenTheTwoProbesSawDifferentDevices(t *testing.T) {
	so := fakeDriver(t)
	bin := build(t, t.TempDir(), true)
	code, out, printed := runScript(t, "GPUPROBE_BIN="+bin, "GPUPROBE_LIBCUDA="+so,
		"FAKECUDA_UUID_PER_PROCESS=1", "CONTENTION=0")
	if code != 6 {
		t.Fatalf("exit %d, want 6:\n%s", code, printed)
	}
	if p := readPair(t, filepath.Join(out, "shared.json")); p.SameDevice {
		t.Fatalf("shared.json says one device: %v", p.Devices)
	}
}
