package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
)

func TestMatmulCPU32(t *testing.T) {
	tests := []struct {
		name string
		n    int
		a, b []float32
		want []float32
	}{
		{"one by one", 1, []float32{3}, []float32{-2}, []float32{-6}},
		{"identity left", 2, []float32{1, 0, 0, 1}, []float32{1, 2, 3, 4}, []float32{1, 2, 3, 4}},
		{"known 2x2", 2, []float32{1, 2, 3, 4}, []float32{5, 6, 7, 8}, []float32{19, 22, 43, 50}},
		{"row times column", 3,
			[]float32{1, 2, 3, 0, 0, 0, 0, 0, 0},
			[]float32{4, 0, 0, 5, 0, 0, 6, 0, 0},
			[]float32{32, 0, 0, 0, 0, 0, 0, 0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := matmulCPU32(tc.a, tc.b, tc.n)
			for i := range tc.want {
				if got[i] != tc.want[i] {
					t.Fatalf("element %d: got %v, want %v (all: %v)", i, got[i], tc.want[i], got)
				}
			}
		})
	}
}

func TestInputsDeterministic(t *testing.T) {
	a1, b1 := inputs(17)
	a2, b2 := inputs(17)
	for i := range a1 {
		if a1[i] != a2[i] || b1[i] != b2[i] {
			t.Fatalf("inputs differ at %d", i)
		}
		if a1[i] < -0.5 || a1[i] >= 0.5 || b1[i] < -0.5 || b1[i] >= 0.5 {
			t.Fatalf("input out of range at %d: %v %v", i, a1[i], b1[i])
		}
	}
}

func TestCheckDetectsWrongResults(t *testing.T) {
	const n = 64
	a, b := inputs(n)
	good := matmulCPU32(a, b, n)
	perturb := func(f func(c []float32)) []float32 {
		c := append([]float32(nil), good...)
		f(c)
		return c
	}
	tests := []struct {
		name       string
		got        []float32
		wantPassed bool
		mismatches int
	}{
		{"cpu float32 result passes", good, true, 0},
		{"fma-order change within tolerance passes", perturb(func(c []float32) {
			c[5] = math.Nextafter32(c[5], 10)
		}), true, 0},
		{"one element off by 1e-3 fails", perturb(func(c []float32) { c[100] += 1e-3 }), false, 1},
		{"two elements swapped fails", perturb(func(c []float32) { c[0], c[n*n-1] = c[n*n-1], c[0] }), false, 2},
		{"NaN fails", perturb(func(c []float32) { c[7] = float32(math.NaN()) }), false, 1},
		{"Inf fails", perturb(func(c []float32) { c[8] = float32(math.Inf(-1)) }), false, 1},
		{"kernel that wrote nothing fails", make([]float32, n*n), false, -1},
		{"wrong length fails", good[:n], false, n * n},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := check(a, b, tc.got, n)
			if res.Passed != tc.wantPassed {
				t.Fatalf("passed = %v, want %v (mismatches %d, max error %v)",
					res.Passed, tc.wantPassed, res.Mismatches, res.MaxAbsError)
			}
			if tc.mismatches >= 0 && res.Mismatches != tc.mismatches {
				t.Fatalf("mismatches = %d, want %d", res.Mismatches, tc.mismatches)
			}
			if _, err := json.Marshal(res); err != nil {
				t.Fatalf("result does not encode: %v", err)
			}
		})
	}
}

func TestCheckToleranceGrowsWithSize(t *testing.T) {
	for _, n := range []int{1, 16, 256} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			a, b := inputs(n)
			if res := check(a, b, matmulCPU32(a, b, n), n); !res.Passed {
				t.Fatalf("n=%d: CPU float32 result rejected: %+v", n, res)
			}
		})
	}
}

// fakeGPU stands in for a device in tests.
type fakeGPU struct {
	wrong    bool
	failMul  error
	capacity int
	closed   *bool
}

func (f fakeGPU) Driver() Driver { return Driver{Library: "fake", Version: 12090, FreeMemoryMiB: 100} }
func (f fakeGPU) Devices() []Device {
	return []Device{{Index: 0, Name: "Fake", UUID: "GPU-00000000-0000-0000-0000-000000000000", TotalMemoryMiB: 100}}
}
func (f fakeGPU) MatMul(a, b []float32, n int) ([]float32, error) {
	if f.failMul != nil {
		return nil, f.failMul
	}
	c := matmulCPU32(a, b, n)
	if f.wrong {
		c[0] += 1
	}
	return c, nil
}
func (f fakeGPU) Alloc(mib int) (int, error) {
	if mib > f.capacity {
		return f.capacity, errors.New("out of memory")
	}
	return mib, nil
}
func (f fakeGPU) Close() {
	if f.closed != nil {
		*f.closed = true
	}
}

func envOf(m map[string]string) envFunc {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func withGPU(t *testing.T, g gpu, reason string) {
	t.Helper()
	saved := openGPU
	openGPU = func() (gpu, string) { return g, reason }
	t.Cleanup(func() { openGPU = saved })
}

// runOnce runs the probe and returns the exit code and the decoded JSON line.
func runOnce(t *testing.T, args []string, env envFunc) (int, map[string]any) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, env, &out, &errb)
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if len(lines) != 1 {
		t.Fatalf("want exactly one stdout line, got %d: %q", len(lines), out.String())
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
		t.Fatalf("stdout is not JSON: %v: %s", err, lines[0])
	}
	if got := int(m["exit_code"].(float64)); got != code {
		t.Fatalf("exit_code field %d != process exit code %d", got, code)
	}
	return code, m
}

func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		gpu    gpu
		want   int
		errSub string
	}{
		{"cpu reference passes", []string{"--size", "8"}, nil, ExitPassed, ""},
		{"size zero is usage", []string{"--size", "0"}, nil, ExitUsage, "--size"},
		{"size too large is usage", []string{"--size", "4096"}, nil, ExitUsage, "--size"},
		{"negative alloc is usage", []string{"--alloc-mib", "-1"}, nil, ExitUsage, "--alloc-mib"},
		{"unbounded hold is usage", []string{"--hold-seconds", "99999"}, nil, ExitUsage, "--hold-seconds"},
		{"stray argument is usage", []string{"extra"}, nil, ExitUsage, "unexpected"},
		{"unknown flag is usage", []string{"--nope"}, nil, ExitUsage, "nope"},
		{"require gpu without one", []string{"--require-gpu", "--size", "4"}, nil, ExitNoGPU, "no GPU present"},
		{"gpu passes", []string{"--require-gpu", "--size", "8"}, fakeGPU{capacity: 10}, ExitPassed, ""},
		{"gpu wrong result", []string{"--size", "8"}, fakeGPU{wrong: true, capacity: 10}, ExitMismatch, "mismatch"},
		{"gpu driver error", []string{"--size", "8"}, fakeGPU{failMul: errors.New("cuLaunchKernel failed")}, ExitGPUError,
			"cuLaunchKernel"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			withGPU(t, tc.gpu, "test: no device")
			code, m := runOnce(t, tc.args, envOf(nil))
			if code != tc.want {
				t.Fatalf("exit %d, want %d: %v", code, tc.want, m["error"])
			}
			if !strings.Contains(m["error"].(string), tc.errSub) {
				t.Fatalf("error %q does not mention %q", m["error"], tc.errSub)
			}
		})
	}
}

// schemaKeys is the documented top-level layout (README.md, "Output").
var schemaKeys = []string{
	"alloc", "build", "check", "devices", "driver", "error", "exit_code", "finished_at",
	"gpu_detail", "gpu_present", "host", "mode", "note", "probe_version", "schema",
	"started_at", "visible",
}

func TestJSONSchema(t *testing.T) {
	env := envOf(map[string]string{
		"NVIDIA_VISIBLE_DEVICES": "GPU-1234",
		"GPU_PORTION":            "0.5",
		"KAIOPS_GPU_CONFIGMAP":   "probe-abc-0",
		"POD_NAME":               "probe-abc",
		"POD_NAMESPACE":          "gpu-access",
	})
	tests := []struct {
		name       string
		gpu        gpu
		gpuPresent bool
		mode       string
		note       string
		computedOn string
	}{
		{"no gpu is labelled cpu-reference", nil, false, "cpu-reference", "no GPU present", "cpu"},
		{"gpu", fakeGPU{capacity: 100}, true, "gpu", "", "gpu"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			withGPU(t, tc.gpu, "test: no device")
			_, m := runOnce(t, []string{"--size", "4", "--alloc-mib", "50"}, env)
			var keys []string
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			if strings.Join(keys, ",") != strings.Join(schemaKeys, ",") {
				t.Fatalf("keys %v, want %v", keys, schemaKeys)
			}
			if m["schema"] != Schema || m["gpu_present"] != tc.gpuPresent || m["mode"] != tc.mode {
				t.Fatalf("labels: schema %v gpu_present %v mode %v", m["schema"], m["gpu_present"], m["mode"])
			}
			if tc.note != "" && m["note"] != tc.note {
				t.Fatalf("note %q, want %q", m["note"], tc.note)
			}
			vis := m["visible"].(map[string]any)
			if vis["NVIDIA_VISIBLE_DEVICES"] != "GPU-1234" || vis["GPU_PORTION"] != "0.5" ||
				vis["RUNAI_NUM_OF_GPUS"] != nil || vis["configmap"] != "probe-abc-0" {
				t.Fatalf("visible = %v", vis)
			}
			host := m["host"].(map[string]any)
			if host["pod_name"] != "probe-abc" || host["pod_namespace"] != "gpu-access" {
				t.Fatalf("host = %v", host)
			}
			chk := m["check"].(map[string]any)
			if chk["computed_on"] != tc.computedOn || chk["passed"] != true {
				t.Fatalf("check = %v", chk)
			}
			alloc := m["alloc"].(map[string]any)
			if tc.gpuPresent != (alloc["on_device"] == true) {
				t.Fatalf("alloc on_device %v with gpu_present %v", alloc["on_device"], tc.gpuPresent)
			}
			if !tc.gpuPresent && alloc["allocated_mib"].(float64) != 0 {
				t.Fatalf("no-GPU run claims device memory: %v", alloc)
			}
			if _, ok := m["devices"].([]any); !ok {
				t.Fatalf("devices is not a list: %v", m["devices"])
			}
		})
	}
}

func TestConfigMapUnknownByDefault(t *testing.T) {
	withGPU(t, nil, "none")
	_, m := runOnce(t, []string{"--size", "2"}, envOf(map[string]string{"NVIDIA_VISIBLE_DEVICES": ""}))
	vis := m["visible"].(map[string]any)
	if vis["configmap"] != "unknown" || vis["NVIDIA_VISIBLE_DEVICES"] != "" || vis["GPU_PORTION"] != nil {
		t.Fatalf("visible = %v", vis)
	}
}

func TestAllocShortfallIsRecorded(t *testing.T) {
	withGPU(t, fakeGPU{capacity: 30}, "")
	code, m := runOnce(t, []string{"--size", "4", "--alloc-mib", "50"}, envOf(nil))
	alloc := m["alloc"].(map[string]any)
	if code != ExitPassed || alloc["allocated_mib"].(float64) != 30 || alloc["satisfied"] != false {
		t.Fatalf("code %d alloc %v", code, alloc)
	}
}

func TestHoldEndsOnCancel(t *testing.T) {
	closed := false
	withGPU(t, fakeGPU{capacity: 10, closed: &closed}, "")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	code := run(ctx, []string{"--size", "2", "--alloc-mib", "1", "--hold-seconds", "60"}, envOf(nil), &out, &errb)
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	alloc := m["alloc"].(map[string]any)
	if code != ExitPassed || alloc["hold_interrupted"] != true || !closed {
		t.Fatalf("code %d alloc %v closed %v", code, alloc, closed)
	}
}

func TestJSONFloatEncodesNonFinite(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{1.5, "1.5"}, {math.NaN(), `"NaN"`}, {math.Inf(1), `"+Inf"`}, {math.Inf(-1), `"-Inf"`},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			b, err := json.Marshal(jsonFloat(tc.in))
			if err != nil || string(b) != tc.want {
				t.Fatalf("got %s, %v; want %s", b, err, tc.want)
			}
		})
	}
}
