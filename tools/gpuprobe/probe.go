package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
)

// Version is the probe's version; the lab's image tag follows it.
const Version = "0.1.0"

// Schema names the JSON line's layout (documented in README.md).
const Schema = "kaiops.gpuprobe/v1"

// Exit codes (documented in README.md).
const (
	ExitPassed   = 0 // the computation matched the reference
	ExitMismatch = 1 // the computation did not match the reference
	ExitUsage    = 2 // bad flags
	ExitNoGPU    = 3 // --require-gpu was given and no GPU could be used
	ExitGPUError = 4 // a GPU was found but a driver call needed by the check failed
)

// Limits on the flags, so a probe in a shared cluster stays bounded.
const (
	MaxSize        = 1024
	MaxAllocMiB    = 1 << 20 // 1 TiB, far above any device; the driver decides below that
	MaxHoldSeconds = 3600
)

const noGPUNote = "no GPU present"

// Options are the parsed flags.
type Options struct {
	Size        int
	AllocMiB    int
	HoldSeconds int
	RequireGPU  bool
}

// parseFlags turns the command line into Options; errors are usage errors.
func parseFlags(args []string, stderr io.Writer) (Options, error) {
	var o Options
	fs := flag.NewFlagSet("gpuprobe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.Size, "size", 256, fmt.Sprintf("matrix side n of the n x n float32 multiply (1..%d)", MaxSize))
	fs.IntVar(&o.AllocMiB, "alloc-mib", 0, "device memory to allocate and hold, in MiB (0: none)")
	fs.IntVar(&o.HoldSeconds, "hold-seconds", 0,
		fmt.Sprintf("keep the allocation this long before exiting (0..%d)", MaxHoldSeconds))
	fs.BoolVar(&o.RequireGPU, "require-gpu", false, "exit 3 when no GPU can be used")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: gpuprobe [flags]\n\nPrints one JSON line (schema %s). Exit: 0 passed, 1 mismatch,\n"+
			"2 usage, 3 no GPU with --require-gpu, 4 GPU driver error.\n\n", Schema)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	switch {
	case o.Size < 1 || o.Size > MaxSize:
		return o, fmt.Errorf("--size must be in 1..%d, got %d", MaxSize, o.Size)
	case o.AllocMiB < 0 || o.AllocMiB > MaxAllocMiB:
		return o, fmt.Errorf("--alloc-mib must be in 0..%d, got %d", MaxAllocMiB, o.AllocMiB)
	case o.HoldSeconds < 0 || o.HoldSeconds > MaxHoldSeconds:
		return o, fmt.Errorf("--hold-seconds must be in 0..%d, got %d", MaxHoldSeconds, o.HoldSeconds)
	}
	return o, nil
}

// Host identifies where the probe ran.
type Host struct {
	Hostname     string `json:"hostname"`
	PodName      string `json:"pod_name"`
	PodNamespace string `json:"pod_namespace"`
	NodeName     string `json:"node_name"`
}

// Visible records the device assignment the container was given. A nil field means
// the variable was not set (as opposed to set to the empty string).
type Visible struct {
	NvidiaVisibleDevices *string `json:"NVIDIA_VISIBLE_DEVICES"`
	GPUPortion           *string `json:"GPU_PORTION"`
	RunaiNumOfGPUs       *string `json:"RUNAI_NUM_OF_GPUS"`
	ConfigMap            string  `json:"configmap"`
}

// Device is one CUDA device as the driver reports it.
type Device struct {
	Index          int    `json:"index"`
	Name           string `json:"name"`
	UUID           string `json:"uuid"`
	TotalMemoryMiB int64  `json:"total_memory_mib"`
}

// Driver describes the CUDA driver library that was loaded.
type Driver struct {
	Library       string `json:"library"`
	Version       int    `json:"version"`
	FreeMemoryMiB int64  `json:"free_memory_mib"`
}

// Alloc records the memory-allocation part of the probe.
type Alloc struct {
	RequestedMiB    int     `json:"requested_mib"`
	AllocatedMiB    int     `json:"allocated_mib"`
	Satisfied       bool    `json:"satisfied"`
	OnDevice        bool    `json:"on_device"`
	HeldSeconds     float64 `json:"held_seconds"`
	HoldRequested   int     `json:"hold_requested_seconds"`
	HoldInterrupted bool    `json:"hold_interrupted"`
	Error           string  `json:"error"`
}

// Build describes the binary.
type Build struct {
	Variant string `json:"variant"`
	Go      string `json:"go"`
	Arch    string `json:"arch"`
}

// Result is the one JSON line the probe prints.
type Result struct {
	Schema       string       `json:"schema"`
	ProbeVersion string       `json:"probe_version"`
	Build        Build        `json:"build"`
	StartedAt    string       `json:"started_at"`
	FinishedAt   string       `json:"finished_at"`
	Host         Host         `json:"host"`
	Visible      Visible      `json:"visible"`
	GPUPresent   bool         `json:"gpu_present"`
	Mode         string       `json:"mode"`
	Note         string       `json:"note"`
	GPUDetail    string       `json:"gpu_detail"`
	Driver       *Driver      `json:"driver"`
	Devices      []Device     `json:"devices"`
	Check        *CheckResult `json:"check"`
	Alloc        Alloc        `json:"alloc"`
	ExitCode     int          `json:"exit_code"`
	Error        string       `json:"error"`
}

// gpu is what a GPU backend offers; gpu_cuda.go implements it over the CUDA driver API.
type gpu interface {
	Driver() Driver
	Devices() []Device
	MatMul(a, b []float32, n int) ([]float32, error)
	// Alloc allocates up to mib MiB on device 0, keeps it until Close, and returns
	// how many MiB it got (the largest amount that succeeded when the full size did not).
	Alloc(mib int) (int, error)
	Close()
}

// openGPU returns a usable GPU backend, or nil and the reason there is none. It is a
// variable so tests can substitute a fake device.
var openGPU = openBackend

// env reads the environment; a variable so tests can pass their own.
type envFunc func(string) (string, bool)

func optional(env envFunc, key string) *string {
	if v, ok := env(key); ok {
		return &v
	}
	return nil
}

func firstSet(env envFunc, keys ...string) string {
	for _, k := range keys {
		if v, ok := env(k); ok && v != "" {
			return v
		}
	}
	return ""
}

func gatherHost(env envFunc) Host {
	h := Host{
		PodName:      firstSet(env, "POD_NAME", "KAIOPS_POD_NAME"),
		PodNamespace: firstSet(env, "POD_NAMESPACE", "KAIOPS_POD_NAMESPACE"),
		NodeName:     firstSet(env, "NODE_NAME", "KAIOPS_NODE_NAME"),
	}
	if name, err := os.Hostname(); err == nil {
		h.Hostname = name
	} else {
		h.Hostname = firstSet(env, "HOSTNAME")
	}
	if h.PodName == "" {
		// in a pod the hostname is the pod name unless spec.hostname overrides it
		h.PodName = h.Hostname
	}
	return h
}

func gatherVisible(env envFunc) Visible {
	v := Visible{
		NvidiaVisibleDevices: optional(env, "NVIDIA_VISIBLE_DEVICES"),
		GPUPortion:           optional(env, "GPU_PORTION"),
		RunaiNumOfGPUs:       optional(env, "RUNAI_NUM_OF_GPUS"),
		ConfigMap:            "unknown",
	}
	if cm := firstSet(env, "KAIOPS_GPU_CONFIGMAP"); cm != "" {
		v.ConfigMap = cm
	}
	return v
}

func newResult(env envFunc, now time.Time) Result {
	return Result{
		Schema:       Schema,
		ProbeVersion: Version,
		Build:        Build{Variant: buildVariant, Go: runtime.Version(), Arch: runtime.GOARCH},
		StartedAt:    now.UTC().Format(time.RFC3339Nano),
		Host:         gatherHost(env),
		Visible:      gatherVisible(env),
		Devices:      []Device{},
	}
}

// probe runs the whole check and returns the result (ExitCode set). It never prints.
func probe(ctx context.Context, o Options, env envFunc) Result {
	res := newResult(env, time.Now())
	res.Alloc.RequestedMiB = o.AllocMiB
	res.Alloc.HoldRequested = o.HoldSeconds

	dev, reason := openGPU()
	if dev == nil {
		res.GPUPresent = false
		res.Mode = "cpu-reference"
		res.Note = noGPUNote
		res.GPUDetail = reason
		a, b := inputs(o.Size)
		start := time.Now()
		c := matmulCPU32(a, b, o.Size)
		elapsed := time.Since(start)
		chk := check(a, b, c, o.Size)
		chk.ElapsedMS = float64(elapsed.Microseconds()) / 1000
		chk.ComputedOn = "cpu"
		res.Check = &chk
		if o.AllocMiB > 0 {
			res.Alloc.Error = "no GPU present: no device memory was allocated"
		}
		res.Alloc.Satisfied = o.AllocMiB == 0
		if o.RequireGPU {
			// the CPU check above is still reported, labelled cpu-reference
			res.ExitCode = ExitNoGPU
			res.Error = "no GPU present and --require-gpu was given: " + reason
			return finish(res)
		}
		hold(ctx, o, &res)
		return finish(res)
	}
	defer dev.Close()

	res.GPUPresent = true
	res.Mode = "gpu"
	res.Note = "computed on the GPU and checked against a CPU float64 reference"
	d := dev.Driver()
	res.Driver = &d
	res.Devices = append(res.Devices, dev.Devices()...)

	a, b := inputs(o.Size)
	start := time.Now()
	c, err := dev.MatMul(a, b, o.Size)
	elapsed := time.Since(start)
	if err != nil {
		res.ExitCode = ExitGPUError
		res.Error = err.Error()
		return finish(res)
	}
	chk := check(a, b, c, o.Size)
	chk.ElapsedMS = float64(elapsed.Microseconds()) / 1000
	chk.ComputedOn = "gpu"
	res.Check = &chk

	if o.AllocMiB > 0 {
		got, err := dev.Alloc(o.AllocMiB)
		res.Alloc.OnDevice = true
		res.Alloc.AllocatedMiB = got
		if err != nil {
			res.Alloc.Error = err.Error()
		}
	}
	res.Alloc.Satisfied = res.Alloc.AllocatedMiB >= o.AllocMiB
	hold(ctx, o, &res)
	return finish(res)
}

// hold sleeps for --hold-seconds (the allocation, if any, stays in place), ending early
// when ctx is cancelled (SIGTERM from the kubelet, for instance).
func hold(ctx context.Context, o Options, res *Result) {
	if o.HoldSeconds <= 0 {
		return
	}
	start := time.Now()
	t := time.NewTimer(time.Duration(o.HoldSeconds) * time.Second)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		res.Alloc.HoldInterrupted = true
	}
	res.Alloc.HeldSeconds = float64(time.Since(start).Milliseconds()) / 1000
}

// finish stamps the end time and sets the exit code from the check when nothing
// decided it earlier.
func finish(res Result) Result {
	res.FinishedAt = time.Now().UTC().Format(time.RFC3339Nano)
	if res.ExitCode == ExitPassed && res.Check != nil && !res.Check.Passed {
		res.ExitCode = ExitMismatch
		res.Error = fmt.Sprintf("computation mismatch: %d of %d elements outside tolerance",
			res.Check.Mismatches, res.Check.Elements)
	}
	return res
}

// usageResult is the JSON line printed for a usage error.
func usageResult(env envFunc, err error) Result {
	now := time.Now()
	res := newResult(env, now)
	res.Mode = "none"
	res.Note = "usage error: nothing was probed"
	res.ExitCode = ExitUsage
	res.Error = err.Error()
	res.FinishedAt = now.UTC().Format(time.RFC3339Nano)
	return res
}

// run is main without the process: parse, probe, print one line, return the exit code.
func run(ctx context.Context, args []string, env envFunc, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return ExitPassed
	}
	var res Result
	if err != nil {
		res = usageResult(env, err)
	} else {
		res = probe(ctx, o, env)
	}
	line, err := json.Marshal(res)
	if err != nil {
		// cannot happen with the types above; still keep the one-line contract
		fmt.Fprintf(stdout, "{\"schema\":%q,\"exit_code\":%d,\"error\":%q}\n", Schema, ExitGPUError, err.Error())
		return ExitGPUError
	}
	fmt.Fprintln(stdout, string(line))
	if res.Error != "" {
		fmt.Fprintln(stderr, "gpuprobe:", res.Error)
	}
	return res.ExitCode
}
