package main

import (
	"encoding/json"
	"math"
	"strconv"
)

// jsonFloat is a float64 that JSON-encodes NaN and infinities as the strings "NaN",
// "+Inf" and "-Inf" (encoding/json refuses them), so a broken result still yields one
// valid JSON line.
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return json.Marshal(strconv.FormatFloat(v, 'g', -1, 64))
	}
	return json.Marshal(v)
}

// float32 unit roundoff (2^-24): the error bound of the check is built from it.
const unitRoundoff = 1.0 / (1 << 24)

// absSlack is added to every per-element bound so that elements whose exact value is
// zero are not judged on rounding noise alone.
const absSlack = 1e-6

// inputs returns the two deterministic n x n float32 matrices (row-major) the probe
// multiplies. Values lie in [-0.5, 0.5) and are not exactly representable sums, so the
// order of accumulation (CPU loop, GPU FMA) matters and the tolerance is exercised.
func inputs(n int) (a, b []float32) {
	a = make([]float32, n*n)
	b = make([]float32, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			a[i*n+j] = float32((i*7+j*13)%31)/31 - 0.5
			b[i*n+j] = float32((i*11+j*5)%29)/29 - 0.5
		}
	}
	return a, b
}

// matmulCPU32 is the CPU stand-in for the device: the same float32 arithmetic a GPU
// thread does, one accumulator per element.
func matmulCPU32(a, b []float32, n int) []float32 {
	c := make([]float32, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			var acc float32
			for k := 0; k < n; k++ {
				acc += a[i*n+k] * b[k*n+j]
			}
			c[i*n+j] = acc
		}
	}
	return c
}

// reference computes C = A x B in float64 from the float32 inputs together with the
// per-element magnitude sum_k |a_ik * b_kj| that bounds the float32 rounding error.
func reference(a, b []float32, n int) (ref, mag []float64) {
	ref = make([]float64, n*n)
	mag = make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			var s, m float64
			for k := 0; k < n; k++ {
				p := float64(a[i*n+k]) * float64(b[k*n+j])
				s += p
				m += math.Abs(p)
			}
			ref[i*n+j] = s
			mag[i*n+j] = m
		}
	}
	return ref, mag
}

// gamma is the classic bound n*u/(1-n*u) on the relative error of an n-term float32
// dot product, whatever the order of summation or use of FMA.
func gamma(n int) float64 {
	nu := float64(n) * unitRoundoff
	return nu / (1 - nu)
}

// CheckResult is the outcome of comparing a computed product to the reference.
type CheckResult struct {
	Operation     string    `json:"operation"`
	Size          int       `json:"size"`
	Elements      int       `json:"elements"`
	Mismatches    int       `json:"mismatches"`
	MaxAbsError   jsonFloat `json:"max_abs_error"`
	WorstIndex    int       `json:"worst_index"`
	ToleranceRule string    `json:"tolerance_rule"`
	Checksum      float64   `json:"checksum"`
	Passed        bool      `json:"passed"`
	ElapsedMS     float64   `json:"elapsed_ms"`
	ComputedOn    string    `json:"computed_on"`
}

const toleranceRule = "|c-ref| <= 2*gamma(n)*sum_k|a_ik*b_kj| + 1e-6, gamma(n)=n*u/(1-n*u), u=2^-24"

// check compares got against the float64 reference element by element. NaN or Inf in
// got, or a wrong length, is always a mismatch.
func check(a, b, got []float32, n int) CheckResult {
	res := CheckResult{
		Operation:     "matmul_f32",
		Size:          n,
		Elements:      n * n,
		ToleranceRule: toleranceRule,
		WorstIndex:    -1,
	}
	ref, mag := reference(a, b, n)
	for _, r := range ref {
		res.Checksum += r
	}
	if len(got) != n*n {
		res.Mismatches = n * n
		res.MaxAbsError = jsonFloat(math.Inf(1))
		return res
	}
	g := 2 * gamma(n)
	worst := math.Inf(-1)
	for i := range ref {
		diff := math.Abs(float64(got[i]) - ref[i])
		bound := g*mag[i] + absSlack
		// written as !(diff <= bound) so that a NaN difference counts as a mismatch
		if !(diff <= bound) {
			res.Mismatches++
		}
		key := diff
		if math.IsNaN(diff) {
			key = math.Inf(1)
		}
		if key > worst {
			worst = key
			res.MaxAbsError = jsonFloat(diff)
			res.WorstIndex = i
		}
	}
	res.Passed = res.Mismatches == 0
	return res
}
