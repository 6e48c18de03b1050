package binder

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"kaiops.dev/lab/kai-standin/api"
)

// TestFaultFlags: --standin-faults switches the binder's faults, and only those; an
// unknown name refuses to start.
func TestFaultFlags(t *testing.T) {
	cases := []struct {
		name                string
		faults              string
		unauth, dup, admiss bool
		wantErr             string
	}{
		{"off by default", "", false, false, false, ""},
		{"api-unauthorized", "api-unauthorized", true, false, false, ""},
		{"duplicate-reservation", "duplicate-reservation", false, true, false, ""},
		{"admission-failure", "admission-failure", false, false, true, ""},
		{"another component's fault changes nothing here", "gang-broken,burst-overpack,missing-kai-config", false, false, false, ""},
		{"unknown", "api-unauthorised", false, false, false, `unknown fault "api-unauthorised"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"--plugins", binderPluginsJSON, "--standin-configmap-write=race-fix-guarded"}
			if tc.faults != "" {
				args = append(args, "--standin-faults="+tc.faults)
			}
			o, _, err := ParseFlags(args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || o.Unauthorized != tc.unauth || o.Reservation.Duplicate != tc.dup || o.Reservation.AdmissionFailure != tc.admiss {
				t.Fatalf("unauthorized %v duplicate %v admission %v (%v)", o.Unauthorized, o.Reservation.Duplicate, o.Reservation.AdmissionFailure, err)
			}
		})
	}
}

const binderPluginsJSON = `{"dynamicresources":{"enabled":true,"priority":200,"arguments":{}},"gpusharing":{"enabled":true,"priority":100,"arguments":{"cdiEnabled":"false"}},"hamicore":{"enabled":false,"priority":50,"arguments":{}},"volumebinding":{"enabled":true,"priority":300,"arguments":{}}}`

// TestUnauthorizedConfig: with the api-unauthorized fault every call is answered 401
// Unauthorized as the API server answers it, and nothing reaches the server.
func TestUnauthorizedConfig(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]}`))
	}))
	defer srv.Close()
	healthy := &rest.Config{Host: srv.URL}
	cases := []struct {
		name     string
		cfg      *rest.Config
		wantHits int32
		want401  bool
	}{
		{"healthy: the call reaches the API server", healthy, 1, false},
		{"api-unauthorized: 401, nothing sent", UnauthorizedConfig(healthy), 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hits.Store(0)
			cs, err := kubernetes.NewForConfig(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
			if got := apierrors.IsUnauthorized(err); got != tc.want401 {
				t.Fatalf("error = %v, want 401: %v", err, tc.want401)
			}
			if tc.want401 && err.Error() != "Unauthorized" {
				t.Fatalf("error text = %q, want the API server's %q", err.Error(), "Unauthorized")
			}
			if hits.Load() != tc.wantHits {
				t.Fatalf("requests to the API server = %d, want %d", hits.Load(), tc.wantHits)
			}
		})
	}
	if healthy.WrapTransport != nil {
		t.Fatal("UnauthorizedConfig changed the config it was given")
	}
}

// TestUnauthorizedConfigLetsDiscoveryThrough: a binder whose token is refused while it runs
// (KAI #1536) read discovery long before; discovery reaches the API server, so the binder
// starts and stays up (the contract), and every other call is answered 401.
func TestUnauthorizedConfigLetsDiscoveryThrough(t *testing.T) {
	var paths []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"APIVersions","versions":["v1"]}`))
	}))
	defer srv.Close()
	cfg := UnauthorizedConfig(&rest.Config{Host: srv.URL})
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for path, through := range map[string]bool{
		"/api": true, "/apis": true, "/api/v1": true, "/apis/scheduling.run.ai/v1alpha2": true,
		"/api/v1/pods": false, "/apis/scheduling.run.ai/v1alpha2/bindrequests": false,
	} {
		resp, err := hc.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if got := resp.StatusCode != http.StatusUnauthorized; got != through {
			t.Errorf("%s: status %d, want through=%v", path, resp.StatusCode, through)
		}
	}
	for _, p := range paths {
		if strings.Count(p, "/") > 3 || strings.HasSuffix(p, "/pods") {
			t.Errorf("a call other than discovery reached the API server: %s", p)
		}
	}
}

// reservationPods lists the group's reservation pods, sorted by name.
func reservationPods(t *testing.T, c client.Client) []string {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(context.Background(), &pods, client.InNamespace(resNS), client.MatchingLabels{api.LabelGPUGroup: group}); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pods.Items {
		out = append(out, p.Name)
	}
	return out
}

// TestDuplicateReservation: healthy, one deterministically named reservation pod per
// group; with duplicate-reservation, two of KAI's pre-v0.16.0 random names for the group.
func TestDuplicateReservation(t *testing.T) {
	cases := []struct {
		name      string
		duplicate bool
		want      []string
	}{
		{"healthy: one pod, the deterministic name", false, []string{ReservationPodName(nodeName, group)}},
		{"duplicate-reservation: two pods for the group, legacy random names", true,
			[]string{"gpu-reservation-" + nodeName + "-bbbbb", "gpu-reservation-" + nodeName + "-ccccc"}},
	}
	legacy := regexp.MustCompile(`^gpu-reservation-` + nodeName + `-[a-z0-9]{5}$`)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, RaceFixGuarded, fractionPod(), node())
			res := f.rec.Binder.Reservation
			res.Duplicate = tc.duplicate
			n := 0
			res.Random = func() string { n++; return strings.Repeat(string(rune('a'+n)), 5) }
			w := &watchOpened{WithWatch: f.client, opened: make(chan struct{})}
			res.Watcher = w
			ctx := context.Background()
			go func() { // the GPU side answers the pod the bind waits for
				<-w.opened
				var pods corev1.PodList
				_ = f.client.List(ctx, &pods, client.InNamespace(resNS))
				for i := range pods.Items {
					p := &pods.Items[i]
					patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+api.AnnReserveForGPUIndex+`":"`+deviceID+`"}}}`))
					_ = f.client.Patch(ctx, p, patch)
				}
			}()
			id, err := res.Reserve(ctx, fractionPod(), nodeName, group)
			if err != nil || id != deviceID {
				t.Fatalf("Reserve = %q, %v: the bind itself goes through", id, err)
			}
			got := reservationPods(t, f.client)
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("reservation pods %v, want %v", got, tc.want)
			}
			if tc.duplicate {
				for _, name := range got {
					if !legacy.MatchString(name) {
						t.Fatalf("%s is not a pre-v0.16.0 name", name)
					}
				}
			}
		})
	}
}

// TestAdmissionFailure: with admission-failure the reservation pod reads as the kubelet's
// rejection, also after a node agent wrote over it, the GPU id is never taken, the
// wait ends at the timeout and the pod goes; the bind fails and will be retried.
func TestAdmissionFailure(t *testing.T) {
	f := newFixture(t, RaceFixGuarded, fractionPod(), node())
	res := f.rec.Binder.Reservation
	res.AdmissionFailure = true
	kubelet := record.NewFakeRecorder(10)
	var hosts []string
	res.KubeletEvents = func(n string) record.EventRecorder { hosts = append(hosts, n); return kubelet }
	w := &watchOpened{WithWatch: f.client, opened: make(chan struct{})}
	res.Watcher = w
	expired := make(chan time.Time, 1)
	res.After = func(time.Duration) <-chan time.Time { return expired }
	ctx := context.Background()
	name := ReservationPodName(nodeName, group)
	seen := make(chan corev1.Pod, 1)
	go func() {
		<-w.opened
		p := &corev1.Pod{}
		key := client.ObjectKey{Namespace: resNS, Name: name}
		// what the node side does meanwhile: the GPU side writes an id, KWOK starts the pod
		_ = f.client.Get(ctx, key, p)
		_ = f.client.Patch(ctx, p, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+api.AnnReserveForGPUIndex+`":"`+deviceID+`"}}}`)))
		_ = f.client.Get(ctx, key, p)
		_ = f.client.Status().Patch(ctx, p, client.RawPatch(types.MergePatchType, []byte(
			`{"status":{"phase":"Running","podIP":"10.0.0.9","containerStatuses":[{"name":"resource-reservation","ready":true,"image":"img","imageID":"","restartCount":0}]}}`)))
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			_ = f.client.Get(ctx, key, p)
			if p.Status.Phase == corev1.PodFailed && p.Status.Reason == ReasonUnexpectedAdmission &&
				len(p.Status.ContainerStatuses) == 0 && p.Annotations[api.AnnReserveForGPUIndex] == "" {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		seen <- *p
		expired <- time.Time{}
	}()
	_, err := res.Reserve(ctx, fractionPod(), nodeName, group)
	p := <-seen
	if p.Status.Phase != corev1.PodFailed || p.Status.Reason != ReasonUnexpectedAdmission ||
		p.Status.Message != "Pod was rejected: Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected" ||
		len(p.Status.ContainerStatuses) != 0 || p.Annotations[api.AnnReserveForGPUIndex] != "" {
		t.Fatalf("reservation pod status %+v, annotations %v: not the kubelet's rejection", p.Status, p.Annotations)
	}
	if err == nil || err.Error() != "failed waiting for GPU reservation pod to allocate: "+resNS+"/"+name {
		t.Fatalf("Reserve error = %v", err)
	}
	if got := reservationPods(t, f.client); len(got) != 0 {
		t.Fatalf("reservation pods after the timeout %v, want deleted", got)
	}
	var events []string
	for len(kubelet.Events) > 0 {
		events = append(events, <-kubelet.Events)
	}
	want := "Warning UnexpectedAdmissionError Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected"
	if len(events) != 1 || events[0] != want || len(hosts) != 1 || hosts[0] != nodeName {
		t.Fatalf("kubelet events %q from %v, want once %q from %s", events, hosts, want, nodeName)
	}
}
