package gpushare

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kaiops.dev/lab/kai-standin/api"
)

func TestFormatPortion(t *testing.T) {
	cases := []struct {
		in   float64
		want string
	}{{0.5, "0.50"}, {1, "1.00"}, {0, "0.00"}, {0.25, "0.25"}, {0.125, "0.12"}}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			if got := FormatPortion(tc.in); got != tc.want {
				t.Fatalf("FormatPortion(%v) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestMemoryPortion(t *testing.T) {
	cases := []struct {
		name        string
		mem, gpuMem int64
		want        string
	}{
		{"2000 of 11441 rounds up", 2000, 11441, "0.18"},
		{"exact half", 5720, 11440, "0.50"},
		{"all of it", 11441, 11441, "1.00"},
		{"one MiB", 1, 11441, "0.01"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := FormatPortion(MemoryPortion(tc.mem, tc.gpuMem)); got != tc.want {
				t.Fatalf("portion = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestPodPortion(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{api.NodeLabelGPUMemMB: "11441"}}}
	cases := []struct {
		name string
		anns map[string]string
		node *corev1.Node
		want string
		ok   bool
	}{
		{"fraction", map[string]string{api.AnnGPUFraction: "0.5"}, nil, "0.50", true},
		{"memory on a labelled node", map[string]string{api.AnnGPUMemory: "2000"}, node, "0.18", true},
		{"memory without node memory", map[string]string{api.AnnGPUMemory: "2000"}, &corev1.Node{}, "0.00", false},
		{"bad fraction", map[string]string{api.AnnGPUFraction: "x"}, nil, "0.00", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := PodPortion(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: tc.anns}}, tc.node)
			if ok != tc.ok || FormatPortion(p) != tc.want {
				t.Fatalf("PodPortion = %s, %v; want %s, %v", FormatPortion(p), ok, tc.want, tc.ok)
			}
		})
	}
}

func TestGPUGroups(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
		api.LabelGPUGroup: "a", api.LabelGPUGroup + "/c": "c", api.LabelGPUGroup + "/b": "b", "other": "x",
	}}}
	got := GPUGroups(p)
	if len(got) != 3 || got[0] != "a" || got[1] != "b" || got[2] != "c" {
		t.Fatalf("GPUGroups = %v", got)
	}
}
