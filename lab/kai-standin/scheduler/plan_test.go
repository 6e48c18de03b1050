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
	if len(plan.Decisions) != 0 || len(plan.NotReady) != 1 {
		t.Fatalf("plan = %+v", plan)
	}
	g := plan.NotReady[0]
	if g.Waiting != 1 || g.Exist != 1 || g.NGated != 1 {
		t.Fatalf("gated = %+v", g)
	}
}

// gang is a PodGroup of minMember size and the given pods, all annotated with it.
func gang(name string, size int32, pods ...corev1.Pod) ([]corev1.Pod, api.PodGroup) {
	for i := range pods {
		pods[i].Annotations[api.AnnPodGroupName] = "pg-" + name
	}
	pg := api.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "pg-" + name, Namespace: "ns"},
		Spec: api.PodGroupSpec{Queue: "default-queue", MinMember: &size}}
	return pods, pg
}

// gangSnap is a snapshot of gangs (and single pods with their own PodGroups) in one queue.
func gangSnap(nodes []corev1.Node, q api.Queue, singles []corev1.Pod, gangs ...func() ([]corev1.Pod, api.PodGroup)) Snapshot {
	s := Snapshot{Nodes: nodes, Queues: []api.Queue{q}}
	for _, g := range gangs {
		pods, pg := g()
		s.Pods = append(s.Pods, pods...)
		s.PodGroups = append(s.PodGroups, pg)
	}
	s.Pods = append(s.Pods, singles...)
	for _, pg := range pgFor(singles, q.Name) {
		s.PodGroups = append(s.PodGroups, pg)
	}
	return s
}

const gangDoesNotFit = "Resources were found for %d pods while %d are required for gang scheduling. " +
	"Additional pods cannot be scheduled due to: no nodes with enough resources were found: %d node(s) didn't have enough resources: GPUs."

// TestGangScheduling: a PodGroup with minMember N > 1 is placed all or nothing, the
// pods it still needs together in one cycle; KAI's reason when it does not fit.
func TestGangScheduling(t *testing.T) {
	dq := queue("default-queue", nil)
	one, two, three := []corev1.Node{gpuNode("n1", 1, nil)}, []corev1.Node{gpuNode("n1", 2, nil)}, []corev1.Node{gpuNode("n1", 3, nil)}
	cases := []struct {
		name        string
		snap        Snapshot
		want        []placed
		wantReason  string
		wantMessage string
		notReady    string
	}{
		{
			name: "a gang that fits is placed whole",
			snap: gangSnap(two, dq, nil, func() ([]corev1.Pod, api.PodGroup) { return gang("g", 2, whole("a", 1, 1), whole("b", 2, 1)) }),
			want: []placed{{"a", "n1", "", "Regular", "1.00"}, {"b", "n1", "", "Regular", "1.00"}},
		},
		{
			name:        "a gang that does not fit places none",
			snap:        gangSnap(one, dq, nil, func() ([]corev1.Pod, api.PodGroup) { return gang("g", 2, whole("a", 1, 1), whole("b", 2, 1)) }),
			wantReason:  api.ReasonPodSchedulingErrors,
			wantMessage: fmt.Sprintf(gangDoesNotFit, 1, 2, 1),
		},
		{
			name: "fractions of a gang count what the ones before took: two halves share one GPU",
			snap: gangSnap(one, dq, nil, func() ([]corev1.Pod, api.PodGroup) { return gang("g", 2, frac("a", 1, "0.5"), frac("b", 2, "0.5")) }),
			want: []placed{{"a", "n1", "group-1", "Fraction", "0.50"}, {"b", "n1", "group-1", "Fraction", "0.50"}},
		},
		{
			name: "fractions of a gang over one GPU's worth on a one-GPU node: none",
			snap: gangSnap(one, dq, nil, func() ([]corev1.Pod, api.PodGroup) {
				return gang("g", 3, frac("a", 1, "0.4"), frac("b", 2, "0.4"), frac("c", 3, "0.4"))
			}),
			wantReason:  api.ReasonPodSchedulingErrors,
			wantMessage: fmt.Sprintf(gangDoesNotFit, 2, 3, 1),
		},
		{
			name: "what a failed gang tried is given back to the pods after it",
			snap: gangSnap(one, dq, []corev1.Pod{whole("later", 9, 1)},
				func() ([]corev1.Pod, api.PodGroup) { return gang("g", 2, whole("a", 1, 1), whole("b", 2, 1)) }),
			want:        []placed{{"later", "n1", "", "Regular", "1.00"}},
			wantReason:  api.ReasonPodSchedulingErrors,
			wantMessage: fmt.Sprintf(gangDoesNotFit, 1, 2, 1),
		},
		{
			name: "more pods than minMember: the gang first, then the rest on their own",
			snap: gangSnap(two, dq, nil, func() ([]corev1.Pod, api.PodGroup) {
				return gang("g", 2, whole("a", 1, 1), whole("b", 2, 1), whole("c", 3, 1))
			}),
			want: []placed{{"a", "n1", "", "Regular", "1.00"}, {"b", "n1", "", "Regular", "1.00"}},
		},
		{
			name:     "fewer pods than minMember: not ready, nothing placed",
			snap:     gangSnap(three, dq, nil, func() ([]corev1.Pod, api.PodGroup) { return gang("g", 3, whole("a", 1, 1), whole("b", 2, 1)) }),
			notReady: "pg-g waiting 3, 2 exist, 0 gated",
		},
		{
			name: "a gated pod keeps its gang not ready",
			snap: gangSnap(three, dq, nil, func() ([]corev1.Pod, api.PodGroup) {
				b := whole("b", 2, 1)
				b.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "hold"}}
				return gang("g", 2, whole("a", 1, 1), b)
			}),
			notReady: "pg-g waiting 2, 2 exist, 1 gated",
		},
		{
			name: "a gang partly running places only the missing pods, together",
			snap: gangSnap(three, dq, nil, func() ([]corev1.Pod, api.PodGroup) {
				return gang("g", 3, bound(whole("run", 0, 1), "n1", ""), whole("a", 1, 1), whole("b", 2, 1))
			}),
			want: []placed{{"a", "n1", "", "Regular", "1.00"}, {"b", "n1", "", "Regular", "1.00"}},
		},
		{
			name: "a gang partly running that cannot complete: none, and no condition while pods run",
			snap: gangSnap(two, dq, nil, func() ([]corev1.Pod, api.PodGroup) {
				return gang("g", 3, bound(whole("run", 0, 1), "n1", ""), whole("a", 1, 1), whole("b", 2, 1))
			}),
		},
		{
			name: "a gang over its queue's limit: none, OverLimit for the whole gang",
			snap: gangSnap(three, queue("default-queue", ptr(1)), nil, func() ([]corev1.Pod, api.PodGroup) {
				return gang("g", 2, whole("a", 1, 1), whole("b", 2, 1))
			}),
			wantReason: api.ReasonOverLimit,
			wantMessage: "default-queue quota has reached the allowable limit of GPUs. " +
				"Limit is 1 GPUs, currently 0 GPUs allocated and workload requested 2 GPUs",
		},
		{
			name: "a gang whose queue does not exist",
			snap: func() Snapshot {
				s := gangSnap(two, dq, nil, func() ([]corev1.Pod, api.PodGroup) { return gang("g", 2, whole("a", 1, 1), whole("b", 2, 1)) })
				s.PodGroups[0].Spec.Queue = "nope"
				return s
			}(),
			wantReason:  api.ReasonQueueDoesNotExist,
			wantMessage: "Queue 'nope' does not exist",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := BuildPlan(cfg, logr.Discard(), tc.snap, counter())
			if got := summary(p); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("placed %v\nwant   %v", got, tc.want)
			}
			var b Blocked
			if len(p.Blocked) > 1 {
				t.Fatalf("blocked %+v", p.Blocked)
			}
			if len(p.Blocked) == 1 {
				b = p.Blocked[0]
			}
			if b.Reason != tc.wantReason || b.Message != tc.wantMessage {
				t.Fatalf("blocked %q %q\nwant    %q %q", b.Reason, b.Message, tc.wantReason, tc.wantMessage)
			}
			var nr []string
			for _, n := range p.NotReady {
				nr = append(nr, fmt.Sprintf("%s waiting %d, %d exist, %d gated", n.PodGroup.Name, n.Waiting, n.Exist, n.NGated))
			}
			if strings.Join(nr, "; ") != tc.notReady {
				t.Fatalf("not ready %q, want %q", nr, tc.notReady)
			}
		})
	}
}

func brFor(pod, node, group, portion string) api.BindRequest {
	return api.BindRequest{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: "ns"},
		Spec: api.BindRequestSpec{PodName: pod, SelectedNode: node, SelectedGPUGroups: []string{group},
			ReceivedResourceType: "Fraction", ReceivedGPU: &api.ReceivedGPU{Count: 1, Portion: portion}}}
}

// TestSchedulerFaults: each scheduler fault off (the healthy build) and on.
func TestSchedulerFaults(t *testing.T) {
	dq := queue("default-queue", nil)
	two := []corev1.Node{gpuNode("n1", 2, nil)}
	halves := func() Snapshot {
		return snap(two, []corev1.Pod{frac("a", 1, "0.5"), frac("b", 2, "0.5"), frac("c", 3, "0.5"), frac("d", 4, "0.5")})
	}
	gangAndSingle := func() Snapshot {
		return gangSnap(two, dq, []corev1.Pod{whole("single", 9, 1)},
			func() ([]corev1.Pod, api.PodGroup) { return gang("g", 2, frac("a", 1, "0.5"), frac("b", 2, "0.5")) })
	}
	cases := []struct {
		name string
		cfg  func(*Config)
		snap Snapshot
		want []placed
	}{
		{
			name: "healthy: a gang schedules",
			snap: gangAndSingle(),
			want: []placed{{"a", "n1", "group-1", "Fraction", "0.50"}, {"b", "n1", "group-1", "Fraction", "0.50"}, {"single", "n1", "", "Regular", "1.00"}},
		},
		{
			name: "gang-broken: minMember > 1 never schedules, the rest does",
			cfg:  func(c *Config) { c.GangBroken = true },
			snap: gangAndSingle(),
			want: []placed{{"single", "n1", "", "Regular", "1.00"}},
		},
		{
			name: "gang-broken leaves minMember 1 alone",
			cfg:  func(c *Config) { c.GangBroken = true },
			snap: halves(),
			want: []placed{{"a", "n1", "group-1", "Fraction", "0.50"}, {"b", "n1", "group-1", "Fraction", "0.50"},
				{"c", "n1", "group-2", "Fraction", "0.50"}, {"d", "n1", "group-2", "Fraction", "0.50"}},
		},
		{
			name: "burst-overpack: one cycle's fractions pile onto one GPU past 1.0",
			cfg:  func(c *Config) { c.BurstOverpack = true },
			snap: halves(),
			want: []placed{{"a", "n1", "group-1", "Fraction", "0.50"}, {"b", "n1", "group-1", "Fraction", "0.50"},
				{"c", "n1", "group-1", "Fraction", "0.50"}, {"d", "n1", "group-1", "Fraction", "0.50"}},
		},
		{
			name: "burst-overpack still counts what is bound or binding from earlier cycles",
			cfg:  func(c *Config) { c.BurstOverpack = true },
			snap: snap(two, []corev1.Pod{frac("x", 0, "0.5"), frac("y", 0, "0.5"), frac("a", 1, "0.5")},
				brFor("x", "n1", "G", "0.50"), brFor("y", "n1", "G", "0.50")),
			want: []placed{{"a", "n1", "group-1", "Fraction", "0.50"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg
			if tc.cfg != nil {
				tc.cfg(&c)
			}
			p := BuildPlan(c, logr.Discard(), tc.snap, counter())
			if got := summary(p); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("placed %v\nwant   %v", got, tc.want)
			}
			if len(p.Blocked) != 0 || len(p.NotReady) != 0 {
				t.Fatalf("blocked %+v, not ready %+v: a fault writes no reason", p.Blocked, p.NotReady)
			}
		})
	}
}

// TestFaultFlags: --standin-faults switches the scheduler's faults, and only those;
// an unknown name refuses to start.
func TestFaultFlags(t *testing.T) {
	cases := []struct {
		name          string
		faults        string
		gang, overpck bool
		wantErr       string
	}{
		{"off by default", "", false, false, ""},
		{"gang-broken", "gang-broken", true, false, ""},
		{"burst-overpack", "burst-overpack", false, true, ""},
		{"another component's fault changes nothing here", "api-unauthorized,missing-kai-config", false, false, ""},
		{"unknown", "gang-brokn", false, false, `unknown fault "gang-brokn"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var args []string
			if tc.faults != "" {
				args = []string{"--standin-faults=" + tc.faults}
			}
			o, _, err := ParseFlags(args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || o.GangBroken != tc.gang || o.BurstOverpack != tc.overpck {
				t.Fatalf("options %+v, %v", o.Config, err)
			}
		})
	}
}
