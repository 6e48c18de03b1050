package scheduler

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"kaiops.dev/lab/kai-standin/api"
	"kaiops.dev/lab/kai-standin/internal/boot"
)

func objects(nodes []corev1.Node, pods []corev1.Pod, pgs []api.PodGroup, queues []api.Queue, brs ...api.BindRequest) []client.Object {
	var out []client.Object
	for i := range nodes {
		out = append(out, &nodes[i])
	}
	for i := range pods {
		out = append(out, &pods[i])
	}
	for i := range pgs {
		out = append(out, &pgs[i])
	}
	for i := range queues {
		out = append(out, &queues[i])
	}
	for i := range brs {
		out = append(out, &brs[i])
	}
	return out
}

func newScheduler(objs ...client.Object) (*Scheduler, client.Client, *record.FakeRecorder) {
	c := fake.NewClientBuilder().WithScheme(boot.Scheme()).WithObjects(objs...).
		WithStatusSubresource(&api.BindRequest{}, &api.PodGroup{}, &corev1.Pod{}).Build()
	rec := record.NewFakeRecorder(100)
	s := &Scheduler{Cfg: cfg, Reader: c, Writer: c, Recorder: rec, Log: logr.Discard(), NewGroup: counter(),
		Now: func() time.Time { return epoch.Add(time.Hour) }}
	return s, c, rec
}

func drain(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// TestCycleReplacesFailedBindRequest is the loop KAI runs on a bind that keeps failing:
// the Failed request is deleted at the snapshot and a new one of the same name, with a
// new GPU group, is created in the same cycle.
func TestCycleReplacesFailedBindRequest(t *testing.T) {
	pod := frac("p", 1, "0.5")
	pod.Labels = map[string]string{api.LabelGPUGroup: "group-old"}
	failed := api.BindRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "old-br"},
		Spec: api.BindRequestSpec{PodName: "p", SelectedNode: "n1", SelectedGPUGroups: []string{"group-old"},
			ReceivedResourceType: "Fraction", ReceivedGPU: &api.ReceivedGPU{Count: 1, Portion: "0.50"}},
		Status: api.BindRequestStatus{Phase: api.PhaseFailed, Reason: "Internal Error: assignment to entry in nil map"},
	}
	gone := api.BindRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "ns", UID: "gone-br"},
		Spec:       api.BindRequestSpec{PodName: "q", SelectedNode: "vanished"},
	}
	pods := []corev1.Pod{pod}
	s, c, rec := newScheduler(objects([]corev1.Node{gpuNode("n1", 2, nil)}, pods, pgFor(pods, "default-queue"),
		[]api.Queue{queue("default-queue", nil)}, failed, gone)...)
	if err := s.Cycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "q"}, &api.BindRequest{}); !apierrors.IsNotFound(err) {
		t.Fatalf("BindRequest for a vanished node: %v, want deleted", err)
	}
	br := &api.BindRequest{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "p"}, br); err != nil {
		t.Fatal(err)
	}
	if br.Status.Phase != "" || br.Spec.SelectedGPUGroups[0] != "group-1" || br.Spec.BackoffLimit != nil {
		t.Fatalf("replacement BindRequest = %+v, want a fresh one with a new group", br)
	}
	ev := drain(rec)
	if len(ev) != 1 || ev[0] != "Normal Scheduled Successfully assigned pod ns/p to node n1 at node-pool default" {
		t.Fatalf("events = %q", ev)
	}
	pg := &api.PodGroup{}
	_ = c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "pg-p"}, pg)
	if ts := pg.Annotations[api.AnnLastStartTimestamp]; ts != epoch.Add(time.Hour).Format(time.RFC3339) {
		t.Fatalf("last-start-timestamp = %q", ts)
	}
	// The next cycle must not bind again: the request is in flight.
	if err := s.Cycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ev := drain(rec); len(ev) != 0 {
		t.Fatalf("second cycle events = %q, want none", ev)
	}
}

func TestCycleConditionsAndGates(t *testing.T) {
	blocked := frac("b", 1, "0.5")
	gated := frac("g", 2, "0.5")
	gated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "hold"}}
	pods := []corev1.Pod{blocked, gated}
	pgs := pgFor(pods, "missing")
	s, c, rec := newScheduler(objects([]corev1.Node{gpuNode("n1", 2, nil)}, pods, pgs, []api.Queue{queue("q", nil)})...)
	ctx := context.Background()
	if err := s.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	pg := &api.PodGroup{}
	_ = c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "pg-b"}, pg)
	conds := pg.Status.SchedulingConditions
	if len(conds) != 1 || conds[0].Type != api.CondUnschedulableOnNodePool || conds[0].Reason != api.ReasonUnschedulable ||
		len(conds[0].Reasons) != 1 || conds[0].Reasons[0].Reason != api.ReasonQueueDoesNotExist {
		t.Fatalf("conditions = %+v", conds)
	}
	ev := drain(rec)
	if len(ev) != 1 || ev[0] != "Normal NotReady Job is not ready for scheduling. Waiting for 1 pods, currently 1 exist, 1 are gated" {
		t.Fatalf("events = %q", ev)
	}
	// The queue appears: the pod schedules and the condition goes.
	pg.Spec.Queue = "q"
	if err := c.Update(ctx, pg); err != nil {
		t.Fatal(err)
	}
	if err := s.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	_ = c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "pg-b"}, pg)
	if len(pg.Status.SchedulingConditions) != 0 {
		t.Fatalf("conditions after scheduling = %+v", pg.Status.SchedulingConditions)
	}
	ev = drain(rec)
	if len(ev) != 2 || !strings.HasPrefix(ev[0], "Normal NotReady") || ev[1] != "Normal Scheduled Successfully assigned pod ns/b to node n1 at node-pool default" {
		t.Fatalf("events = %q", ev)
	}
}

// TestCycleUnschedulableCondition: the condition as KAI writes it (kai-contract.md §14),
// read back as JSON from the PodGroup's status.
func TestCycleUnschedulableCondition(t *testing.T) {
	cases := []struct {
		name    string
		queues  []api.Queue
		pgQueue string
		want    string
	}{
		{"queue missing", []api.Queue{queue("q", nil)}, "x", `{"type":"UnschedulableOnNodePool","nodePool":"default",` +
			`"reason":"Unschedulable","message":"QueueDoesNotExist: Queue 'x' does not exist.",` +
			`"reasons":[{"reason":"QueueDoesNotExist","message":"Queue 'x' does not exist"}]}`},
		{"zero limit", []api.Queue{queue("zero", ptr(0))}, "zero", `{"type":"UnschedulableOnNodePool","nodePool":"default",` +
			`"reason":"Unschedulable","message":"OverLimit: zero quota has reached the allowable limit of GPUs. ` +
			`Limit is 0 GPUs, currently 0 GPUs allocated and workload requested 0.5 GPUs.",` +
			`"reasons":[{"reason":"OverLimit","message":"zero quota has reached the allowable limit of GPUs. ` +
			`Limit is 0 GPUs, currently 0 GPUs allocated and workload requested 0.5 GPUs",` +
			`"details":{"queueDetails":{"name":"zero","podGroupRequestedResources":{"nvidia.com/gpu":"500m"},` +
			`"queueAllocatedResources":{"nvidia.com/gpu":"0"},"queueResourceLimits":{"nvidia.com/gpu":"0"}}}}]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pods := []corev1.Pod{frac("b", 1, "0.5")}
			s, c, _ := newScheduler(objects([]corev1.Node{gpuNode("n1", 2, nil)}, pods, pgFor(pods, tc.pgQueue), tc.queues)...)
			ctx := context.Background()
			for i := 0; i < 2; i++ { // the second cycle leaves the condition as it is
				if err := s.Cycle(ctx); err != nil {
					t.Fatal(err)
				}
			}
			pg := &api.PodGroup{}
			_ = c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "pg-b"}, pg)
			if len(pg.Status.SchedulingConditions) != 1 {
				t.Fatalf("conditions = %+v", pg.Status.SchedulingConditions)
			}
			cond := pg.Status.SchedulingConditions[0]
			if cond.Status != corev1.ConditionTrue || cond.TransitionID != "0" || !cond.LastTransitionTime.Equal(&metav1.Time{Time: epoch.Add(time.Hour)}) {
				t.Fatalf("status %q transitionID %q at %v", cond.Status, cond.TransitionID, cond.LastTransitionTime)
			}
			cond.Status, cond.TransitionID, cond.LastTransitionTime = "", "", metav1.Time{}
			raw, _ := json.Marshal(cond)
			got := strings.Replace(string(raw), `"lastTransitionTime":null,`, "", 1)
			if got != tc.want {
				t.Fatalf("condition\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestCycleCreateFailure(t *testing.T) {
	p := frac("p", 1, "0.5")
	pods := []corev1.Pod{p}
	// A BindRequest of that name the snapshot does not count as the pod's (other owner).
	squatter := api.BindRequest{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "an-older-pod"}}},
		Spec: api.BindRequestSpec{PodName: "p", SelectedNode: "n1"}}
	s, c, rec := newScheduler(objects([]corev1.Node{gpuNode("n1", 2, nil)}, pods, pgFor(pods, "default-queue"),
		[]api.Queue{queue("default-queue", nil)}, squatter)...)
	if err := s.Cycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	ev := drain(rec)
	if len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning FailedBinding Failed to bind pod ns/p to node n1. ") {
		t.Fatalf("events = %q", ev)
	}
	got := &corev1.Pod{}
	_ = c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "p"}, got)
	ok := false
	for _, cond := range got.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == "BindingError" {
			ok = true
		}
	}
	if !ok {
		t.Fatalf("pod conditions = %+v", got.Status.Conditions)
	}
}

// TestCycleGangCondition: a gang that does not fit gets KAI's condition, with the specific
// reason first in the message and in reasons[]; no BindRequest is created for any of its
// pods. Once the node has room, both bind in one cycle and the condition goes.
func TestCycleGangCondition(t *testing.T) {
	pods, pg := gang("g", 2, whole("a", 1, 1), whole("b", 2, 1))
	n := gpuNode("n1", 1, nil)
	s, c, rec := newScheduler(objects([]corev1.Node{n}, pods, []api.PodGroup{pg}, []api.Queue{queue("default-queue", nil)})...)
	ctx := context.Background()
	if err := s.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	var brs api.BindRequestList
	if err := c.List(ctx, &brs); err != nil || len(brs.Items) != 0 {
		t.Fatalf("BindRequests = %v (%v), want none", brs.Items, err)
	}
	got := &api.PodGroup{}
	_ = c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "pg-g"}, got)
	if len(got.Status.SchedulingConditions) != 1 {
		t.Fatalf("conditions = %+v", got.Status.SchedulingConditions)
	}
	cond := got.Status.SchedulingConditions[0]
	cond.Status, cond.TransitionID, cond.LastTransitionTime = "", "", metav1.Time{}
	raw, _ := json.Marshal(cond)
	specific := "Resources were found for 1 pods while 2 are required for gang scheduling. Additional pods cannot be " +
		"scheduled due to: no nodes with enough resources were found: 1 node(s) didn't have enough resources: GPUs."
	want := `{"type":"UnschedulableOnNodePool","nodePool":"default","reason":"Unschedulable",` +
		`"message":"PodSchedulingErrors: ` + specific + `.",` +
		`"reasons":[{"reason":"PodSchedulingErrors","message":"` + specific + `"}]}`
	if g := strings.Replace(string(raw), `"lastTransitionTime":null,`, "", 1); g != want {
		t.Fatalf("condition\n%s\nwant\n%s", g, want)
	}
	if ev := drain(rec); len(ev) != 0 {
		t.Fatalf("events = %q, want none", ev)
	}

	n.Status.Allocatable = corev1.ResourceList{api.ResourceGPU: *resource.NewQuantity(2, resource.DecimalSI)}
	cur := &corev1.Node{}
	_ = c.Get(ctx, client.ObjectKey{Name: "n1"}, cur)
	cur.Status.Allocatable = n.Status.Allocatable
	if err := c.Status().Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	if err := s.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, &brs); err != nil || len(brs.Items) != 2 {
		t.Fatalf("BindRequests = %d (%v), want both of the gang", len(brs.Items), err)
	}
	_ = c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "pg-g"}, got)
	if len(got.Status.SchedulingConditions) != 0 {
		t.Fatalf("conditions after scheduling = %+v", got.Status.SchedulingConditions)
	}
	if ev := drain(rec); len(ev) != 2 || !strings.HasPrefix(ev[0], "Normal Scheduled") || !strings.HasPrefix(ev[1], "Normal Scheduled") {
		t.Fatalf("events = %q", ev)
	}
}
