package binder

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"kaiops.dev/lab/kai-standin/api"
)

// watchOpened is the reservation's watcher, saying when Reserve's watch is open: the fake
// client's watch, unlike the API server's, does not replay a pod that changed before it.
type watchOpened struct {
	client.WithWatch
	opened chan struct{}
}

func (w *watchOpened) Watch(ctx context.Context, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
	wi, err := w.WithWatch.Watch(ctx, list, opts...)
	close(w.opened)
	return wi, err
}

// TestReserveCreatesAndWaits covers the create path: the GPU side answering in time,
// and the timeout that deletes the reservation pod. The timeout is an injected timer and
// the answer follows the watch's opening, so no case depends on the machine's speed.
func TestReserveCreatesAndWaits(t *testing.T) {
	cases := []struct {
		name    string
		answer  bool
		wantErr string
	}{
		{"annotated in time", true, ""},
		{"timeout", false, "failed waiting for GPU reservation pod to allocate: kai-resource-reservation/" + ReservationPodName(nodeName, group)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, RaceFixGuarded, fractionPod(), node())
			res := f.rec.Binder.Reservation
			w := &watchOpened{WithWatch: f.client, opened: make(chan struct{})}
			res.Watcher = w
			expired := make(chan time.Time, 1)
			res.After = func(d time.Duration) <-chan time.Time {
				if d != res.Timeout {
					t.Errorf("timer for %v, want the reservation timeout %v", d, res.Timeout)
				}
				if !tc.answer {
					expired <- time.Time{}
				}
				return expired // never fires when the GPU side answers
			}
			ctx := context.Background()
			answered := make(chan struct{})
			if tc.answer {
				go func() {
					defer close(answered)
					<-w.opened
					p := &corev1.Pod{}
					key := client.ObjectKey{Namespace: resNS, Name: ReservationPodName(nodeName, group)}
					if err := f.client.Get(ctx, key, p); err != nil {
						t.Errorf("reservation pod: %v", err)
						return
					}
					patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+api.AnnReserveForGPUIndex+`":"`+deviceID+`"}}}`))
					if err := f.client.Patch(ctx, p, patch); err != nil {
						t.Errorf("annotate reservation pod: %v", err)
					}
				}()
			} else {
				close(answered)
			}
			pod := fractionPod()
			id, err := res.Reserve(ctx, pod, nodeName, group)
			<-answered
			rp := &corev1.Pod{}
			getErr := f.get(t, rp, ReservationPodName(nodeName, group), resNS)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				if !apierrors.IsNotFound(getErr) {
					t.Fatalf("reservation pod after timeout: %v, want deleted", getErr)
				}
				return
			}
			if err != nil || id != deviceID {
				t.Fatalf("Reserve = %q, %v", id, err)
			}
			got := &corev1.Pod{}
			_ = f.get(t, got, podName, ns)
			if got.Labels[api.LabelGPUGroup] != group || pod.Labels[api.LabelGPUGroup] != group {
				t.Fatalf("fraction pod labels: stored %v, in memory %v", got.Labels, pod.Labels)
			}
		})
	}
}

func TestReserveExistingWithoutAnnotation(t *testing.T) {
	rp := annotatedReservation()
	rp.Annotations = nil
	f := newFixture(t, RaceFixGuarded, fractionPod(), node(), rp)
	_, err := f.rec.Binder.Reservation.Reserve(context.Background(), fractionPod(), nodeName, group)
	if err == nil || err.Error() != "failed to find annotation on reservation pod "+rp.Name {
		t.Fatalf("error = %v", err)
	}
}

// TestSyncGroup: a reservation pod with no fraction pod goes, unless a BindRequest that
// is neither Succeeded nor Failed still names its group.
func TestSyncGroup(t *testing.T) {
	cases := []struct {
		name     string
		phase    string
		withBR   bool
		withPod  bool
		wantKept bool
	}{
		{"no fraction pod, no request", "", false, false, false},
		{"active request", "", true, false, true},
		{"failed request", api.PhaseFailed, true, false, false},
		{"succeeded request", api.PhaseSucceeded, true, false, false},
		{"pending fraction pod keeps it", "", false, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := []client.Object{annotatedReservation()}
			if tc.withBR {
				br := fractionBR()
				br.Status.Phase = tc.phase
				objs = append(objs, br)
			}
			if tc.withPod {
				p := fractionPod()
				p.Labels = map[string]string{api.LabelGPUGroup: group}
				objs = append(objs, p)
			}
			f := newFixture(t, RaceFixGuarded, objs...)
			if err := f.rec.Binder.Reservation.SyncGroup(context.Background(), group); err != nil {
				t.Fatal(err)
			}
			err := f.get(t, &corev1.Pod{}, ReservationPodName(nodeName, group), resNS)
			if kept := err == nil; kept != tc.wantKept {
				t.Fatalf("reservation pod kept = %v (%v), want %v", kept, err, tc.wantKept)
			}
		})
	}
}

func TestScalingUpBlocksReservation(t *testing.T) {
	scaling := &corev1.Pod{}
	scaling.Name, scaling.Namespace = "scaler", "kai-scale-adjust"
	f := newFixture(t, RaceFixGuarded, fractionPod(), node(), scaling)
	_, err := f.rec.Binder.Reservation.Reserve(context.Background(), fractionPod(), nodeName, group)
	if err == nil || !strings.Contains(err.Error(), "cluster is scaling up, could not create reservation pod") {
		t.Fatalf("error = %v", err)
	}
}
