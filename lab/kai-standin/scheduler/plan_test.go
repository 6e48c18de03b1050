package scheduler

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"kaiops.dev/lab/kai-standin/api"
)

var cfg = Config{SchedulerName: "kai-scheduler", NodePoolLabelKey: "kai.scheduler/node-pool", ReservationAppLabel: "kai-resource-reservation"}

var epoch = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func gpuNode(name string, gpus int64, labels map[string]string, taints ...corev1.Taint) corev1.Node {
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{api.ResourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI)},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
}

// kaiPod is a Pending kai-scheduler pod with its PodGroup annotation; i orders creation.
func kaiPod(name string, i int, anns map[string]string) corev1.Pod {
	a := map[string]string{api.AnnPodGroupName: "pg-" + name}
	for k, v := range anns {
		a[k] = v
	}
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Annotations: a,
			CreationTimestamp: metav1.NewTime(epoch.Add(time.Duration(i) * time.Second))},
		Spec:   corev1.PodSpec{SchedulerName: "kai-scheduler", Containers: []corev1.Container{{Name: "c"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

func frac(name string, i int, f string) corev1.Pod {
	return kaiPod(name, i, map[string]string{api.AnnGPUFraction: f})
}

func whole(name string, i int, n int64) corev1.Pod {
	p := kaiPod(name, i, nil)
	p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{api.ResourceGPU: *resource.NewQuantity(n, resource.DecimalSI)}
	return p
}

func bound(p corev1.Pod, node, group string) corev1.Pod {
	p.Spec.NodeName = node
	p.Status.Phase = corev1.PodRunning
	if group != "" {
		p.Labels = map[string]string{api.LabelGPUGroup: group}
	}
	return p
}

func pgFor(pods []corev1.Pod, queue string) []api.PodGroup {
	var out []api.PodGroup
	for _, p := range pods {
		out = append(out, api.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "pg-" + p.Name, Namespace: "ns"}, Spec: api.PodGroupSpec{Queue: queue}})
	}
	return out
}

func queue(name string, limit *float64) api.Queue {
	q := api.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if limit != nil {
		q.Spec.Resources = &api.QueueResources{GPU: &api.ResourceQuota{Limit: limit}}
	}
	return q
}

func counter() func() string {
	n := 0
	return func() string { n++; return fmt.Sprintf("group-%d", n) }
}

func snap(nodes []corev1.Node, pods []corev1.Pod, brs ...api.BindRequest) Snapshot {
	return Snapshot{Nodes: nodes, Pods: pods, BindRequests: brs, PodGroups: pgFor(pods, "default-queue"),
		Queues: []api.Queue{queue("default-queue", nil)}}
}

type placed struct{ pod, node, groups, kind, portion string }

func summary(p Plan) []placed {
	var out []placed
	for _, d := range p.Decisions {
		br := d.BindRequest
		out = append(out, placed{d.Pod.Name, br.Spec.SelectedNode, strings.Join(br.Spec.SelectedGPUGroups, "+"),
			br.Spec.ReceivedResourceType, br.Spec.ReceivedGPU.Portion})
	}
	return out
}

func TestPacking(t *testing.T) {
	n2 := []corev1.Node{gpuNode("n1", 2, nil)}
	cases := []struct {
		name string
		snap Snapshot
		want []placed
	}{
		{
			name: "two halves share a group, a third opens a new one",
			snap: snap(n2, []corev1.Pod{frac("a", 1, "0.5"), frac("b", 2, "0.5"), frac("c", 3, "0.5")}),
			want: []placed{{"a", "n1", "group-1", "Fraction", "0.50"}, {"b", "n1", "group-1", "Fraction", "0.50"}, {"c", "n1", "group-2", "Fraction", "0.50"}},
		},
		{
			name: "joins the group of a bound pod",
			snap: snap(n2, []corev1.Pod{bound(frac("old", 0, "0.5"), "n1", "G"), frac("a", 1, "0.5")}),
			want: []placed{{"a", "n1", "G", "Fraction", "0.50"}},
		},
		{
			name: "a group known only from a Pending pod's label is ignored",
			snap: snap([]corev1.Node{gpuNode("n1", 1, nil)}, []corev1.Pod{
				func() corev1.Pod {
					p := frac("stale", 0, "0.5")
					p.Labels = map[string]string{api.LabelGPUGroup: "G"}
					return p
				}(),
			}),
			want: []placed{{"stale", "n1", "group-1", "Fraction", "0.50"}},
		},
		{
			name: "groups from a non-failed BindRequest count, from a failed one do not",
			snap: snap(n2, []corev1.Pod{frac("binding", 0, "0.5"), frac("failed", 0, "0.5"), frac("a", 1, "0.5")},
				api.BindRequest{ObjectMeta: metav1.ObjectMeta{Name: "binding", Namespace: "ns"},
					Spec: api.BindRequestSpec{PodName: "binding", SelectedNode: "n1", SelectedGPUGroups: []string{"B"},
						ReceivedResourceType: "Fraction", ReceivedGPU: &api.ReceivedGPU{Count: 1, Portion: "0.50"}}},
				api.BindRequest{ObjectMeta: metav1.ObjectMeta{Name: "failed", Namespace: "ns"},
					Spec: api.BindRequestSpec{PodName: "failed", SelectedNode: "n1", SelectedGPUGroups: []string{"F"},
						ReceivedResourceType: "Fraction", ReceivedGPU: &api.ReceivedGPU{Count: 1, Portion: "0.50"}},
					Status: api.BindRequestStatus{Phase: api.PhaseFailed}}),
			want: []placed{{"failed", "n1", "B", "Fraction", "0.50"}, {"a", "n1", "group-1", "Fraction", "0.50"}},
		},
		{
			name: "fullest group first",
			snap: snap(n2, []corev1.Pod{bound(frac("x", 0, "0.25"), "n1", "low"), bound(frac("y", 0, "0.75"), "n1", "high"), frac("a", 1, "0.25")}),
			want: []placed{{"a", "n1", "high", "Fraction", "0.25"}},
		},
		{
			name: "a new group goes to the node with the fewest free GPUs",
			snap: snap([]corev1.Node{gpuNode("big", 8, nil), gpuNode("small", 2, nil)}, []corev1.Pod{frac("a", 1, "0.5")}),
			want: []placed{{"a", "small", "group-1", "Fraction", "0.50"}},
		},
		{
			name: "gpu-memory portion from the node, rounded up",
			snap: snap([]corev1.Node{gpuNode("n1", 1, map[string]string{api.NodeLabelGPUMemMB: "11441"})},
				[]corev1.Pod{kaiPod("m", 1, map[string]string{api.AnnGPUMemory: "2000"})}),
			want: []placed{{"m", "n1", "group-1", "Fraction", "0.18"}},
		},
		{
			name: "whole GPUs and CPU-only pods are Regular",
			snap: snap(n2, []corev1.Pod{whole("w", 1, 2), kaiPod("cpu", 2, nil)}),
			want: []placed{{"w", "n1", "", "Regular", "1.00"}, {"cpu", "n1", "", "Regular", "0.00"}},
		},
		{
			name: "no room: full node, a fraction waits",
			snap: snap([]corev1.Node{gpuNode("n1", 1, nil)}, []corev1.Pod{bound(whole("w", 0, 1), "n1", ""), frac("a", 1, "0.5")}),
		},
		{
			name: "reservation pods neither hold a GPU nor make a group",
			snap: snap([]corev1.Node{gpuNode("n1", 1, nil)}, []corev1.Pod{
				func() corev1.Pod {
					p := bound(whole("gpu-reservation-x", 0, 1), "n1", "R")
					p.Labels["app"] = "kai-resource-reservation"
					return p
				}(), frac("a", 1, "0.5")}),
			want: []placed{{"a", "n1", "group-1", "Fraction", "0.50"}},
		},
		{
			name: "node filters: taint, node-pool label, selector, not ready",
			snap: func() Snapshot {
				notReady := gpuNode("notready", 1, nil)
				notReady.Status.Conditions[0].Status = corev1.ConditionFalse
				nodes := []corev1.Node{
					gpuNode("tainted", 1, map[string]string{"zone": "t"}, corev1.Taint{Key: "kwok.x-k8s.io/node", Value: "fake", Effect: corev1.TaintEffectNoSchedule}),
					gpuNode("pooled", 1, map[string]string{"kai.scheduler/node-pool": "other"}),
					notReady,
					gpuNode("other", 1, map[string]string{"zone": "b"}),
					gpuNode("good", 4, map[string]string{"zone": "a"}),
				}
				p := frac("a", 1, "0.5")
				p.Spec.NodeSelector = map[string]string{"zone": "a"}
				tol := frac("t", 2, "0.5")
				tol.Spec.Tolerations = []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists}}
				tol.Spec.NodeSelector = map[string]string{"zone": "t"}
				intolerant := frac("u", 3, "0.5")
				intolerant.Spec.NodeSelector = map[string]string{"zone": "t"}
				return snap(nodes, []corev1.Pod{p, tol, intolerant})
			}(),
			want: []placed{{"a", "good", "group-1", "Fraction", "0.50"}, {"t", "tainted", "group-2", "Fraction", "0.50"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := summary(BuildPlan(cfg, logr.Discard(), tc.snap, counter()))
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("placed %v\nwant   %v", got, tc.want)
			}
		})
	}
}

func TestBindRequestShape(t *testing.T) {
	cases := []struct {
		name  string
		pod   corev1.Pod
		kind  string
		count int
		port  string
	}{
		{"fraction", frac("f", 0, "0.5"), "Fraction", 1, "0.50"},
		{"whole", whole("w", 0, 1), "Regular", 1, "1.00"},
		{"cpu only", kaiPod("c", 0, nil), "Regular", 0, "0.00"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := BuildPlan(cfg, logr.Discard(), snap([]corev1.Node{gpuNode("n1", 2, nil)}, []corev1.Pod{tc.pod}), counter())
			if len(p.Decisions) != 1 {
				t.Fatalf("decisions = %v", p.Decisions)
			}
			br := p.Decisions[0].BindRequest
			if br.Name != tc.pod.Name || br.Namespace != "ns" || br.Labels[api.LabelSelectedNode] != "n1" || len(br.Labels) != 1 ||
				len(br.OwnerReferences) != 1 || br.OwnerReferences[0].UID != tc.pod.UID || br.OwnerReferences[0].Kind != "Pod" ||
				br.Spec.PodName != tc.pod.Name || br.Spec.BackoffLimit != nil || br.Status != (api.BindRequestStatus{}) ||
				br.Spec.ReceivedResourceType != tc.kind || br.Spec.ReceivedGPU.Count != tc.count || br.Spec.ReceivedGPU.Portion != tc.port {
				t.Fatalf("BindRequest = %+v", br)
			}
		})
	}
}

func TestBindRequestFailed(t *testing.T) {
	three := int32(3)
	cases := []struct {
		name     string
		phase    string
		backoff  *int32
		attempts int32
		want     bool
	}{
		{"failed, no backoffLimit", api.PhaseFailed, nil, 0, true},
		{"failed, attempts left", api.PhaseFailed, &three, 1, false},
		{"failed, attempts used up", api.PhaseFailed, &three, 3, true},
		{"succeeded", api.PhaseSucceeded, nil, 0, false},
		{"no status", "", nil, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			br := &api.BindRequest{Spec: api.BindRequestSpec{BackoffLimit: tc.backoff},
				Status: api.BindRequestStatus{Phase: tc.phase, FailedAttempts: tc.attempts}}
			if got := BindRequestFailed(br); got != tc.want {
				t.Fatalf("BindRequestFailed = %v, want %v", got, tc.want)
			}
		})
	}
}

func ptr(f float64) *float64 { return &f }

func TestQueueChecks(t *testing.T) {
	nodes := []corev1.Node{gpuNode("n1", 4, nil)}
	cases := []struct {
		name        string
		queues      []api.Queue
		pgQueue     string
		pods        []corev1.Pod
		wantReason  string
		wantMessage string
		wantPlaced  int
	}{
		{"queue missing", []api.Queue{queue("default-queue", nil)}, "nope", []corev1.Pod{frac("a", 1, "0.5")},
			api.ReasonQueueDoesNotExist, "Queue 'nope' does not exist", 0},
		{"unlimited (-1)", []api.Queue{queue("q", ptr(-1))}, "q", []corev1.Pod{whole("w", 0, 3), frac("a", 1, "0.5")}, "", "", 2},
		{"within limit", []api.Queue{queue("q", ptr(1))}, "q", []corev1.Pod{frac("a", 1, "0.5"), frac("b", 2, "0.5")}, "", "", 2},
		{"zero limit", []api.Queue{queue("zero", ptr(0))}, "zero", []corev1.Pod{frac("a", 1, "0.5")}, api.ReasonOverLimit,
			"zero quota has reached the allowable limit of GPUs. Limit is 0 GPUs, currently 0 GPUs allocated and workload requested 0.5 GPUs", 0},
		{"over limit counting bound pods", []api.Queue{queue("q", ptr(1))}, "q",
			[]corev1.Pod{bound(whole("w", 0, 1), "n1", ""), frac("a", 1, "0.5")}, api.ReasonOverLimit,
			"q quota has reached the allowable limit of GPUs. Limit is 1 GPUs, currently 1 GPUs allocated and workload requested 0.5 GPUs", 0},
		{"over limit counting this cycle", []api.Queue{queue("q", ptr(1))}, "q",
			[]corev1.Pod{frac("a", 1, "0.5"), frac("b", 2, "0.5"), frac("c", 3, "0.5")}, api.ReasonOverLimit,
			"q quota has reached the allowable limit of GPUs. Limit is 1 GPUs, currently 1 GPUs allocated and workload requested 0.5 GPUs", 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := Snapshot{Nodes: nodes, Pods: tc.pods, PodGroups: pgFor(tc.pods, tc.pgQueue), Queues: tc.queues}
			p := BuildPlan(cfg, logr.Discard(), s, counter())
			if len(p.Decisions) != tc.wantPlaced {
				t.Fatalf("placed %v, want %d", summary(p), tc.wantPlaced)
			}
			var b Blocked
			if len(p.Blocked) > 0 {
				b = p.Blocked[0]
			}
			if b.Reason != tc.wantReason || b.Message != tc.wantMessage {
				t.Fatalf("blocked %q %q, want %q %q", b.Reason, b.Message, tc.wantReason, tc.wantMessage)
			}
			// KAI gives the queue's figures with OverLimit only.
			if (b.Details != nil) != (tc.wantReason == api.ReasonOverLimit) {
				t.Fatalf("details %+v for reason %q", b.Details, b.Reason)
			}
		})
	}
}

func TestHumanize(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 0.5: "0.5", 1: "1", 0.1 + 0.2: "0.3", 1.25: "1.25", 2.0004: "2"} {
		if got := humanize(in); got != want {
			t.Errorf("humanize(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestGatedPods(t *testing.T) {
	p := frac("g", 1, "0.5")
	p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "hold"}}
	plan := BuildPlan(cfg, logr.Discard(), snap([]corev1.Node{gpuNode("n1", 1, nil)}, []corev1.Pod{p}), counter())
	if len(plan.Decisions) != 0 || len(plan.Gated) != 1 {
		t.Fatalf("plan = %+v", plan)
	}
	g := plan.Gated[0]
	if g.Waiting != 1 || g.Exist != 1 || g.NGated != 1 {
		t.Fatalf("gated = %+v", g)
	}
}
