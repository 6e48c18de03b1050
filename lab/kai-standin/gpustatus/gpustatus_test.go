package gpustatus

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"kaiops.dev/lab/kai-standin/api"
	"kaiops.dev/lab/kai-standin/internal/boot"
)

// The vectors are lab/fakegpu's DeviceIDs for kwok-gpu-0, computed independently.
func TestDeviceID(t *testing.T) {
	cases := []struct {
		i    int
		want string
	}{
		{0, "GPU-3ec3ae08-48ef-c2b4-32e2-f5b8ffd5e0a7"},
		{1, "GPU-326dc24e-e0fe-3166-8317-15bb53a3bd9f"},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			if got := DeviceID("kwok-gpu-0", tc.i); got != tc.want {
				t.Fatalf("DeviceID = %s, want %s", got, tc.want)
			}
		})
	}
}

func reservationPod(name, node string, anns map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kai-resource-reservation", UID: types.UID(name), Annotations: anns},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}
}

func TestUpdater(t *testing.T) {
	held := map[string]string{api.AnnReserveForGPUIndex: DeviceID("kwok-gpu-0", 0)}
	cases := []struct {
		name    string
		objs    []client.Object
		target  string
		devices []string
		want    string
		requeue bool
	}{
		{"fake node: lowest free index", []client.Object{reservationPod("a", "kwok-gpu-0", held), reservationPod("b", "kwok-gpu-0", nil)},
			"b", nil, DeviceID("kwok-gpu-0", 1), false},
		{"fake node: other nodes do not count", []client.Object{reservationPod("a", "kwok-gpu-1", held), reservationPod("b", "kwok-gpu-0", nil)},
			"b", nil, DeviceID("kwok-gpu-0", 0), false},
		{"real node: the kubelet's device", []client.Object{reservationPod("r", "kaiops-node", nil)},
			"r", []string{"GPU-real"}, "GPU-real", false},
		{"real node: not allocated yet", []client.Object{reservationPod("r", "kaiops-node", nil)},
			"r", nil, "", true},
		{"not scheduled", []client.Object{reservationPod("u", "", nil)}, "u", nil, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(boot.Scheme()).WithObjects(tc.objs...).Build()
			u := &Updater{Client: c, NodeName: "kaiops-node", Retry: 1,
				Devices: func(context.Context, string, string) ([]string, error) { return tc.devices, nil }}
			key := types.NamespacedName{Namespace: "kai-resource-reservation", Name: tc.target}
			res, err := u.Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
			if err != nil {
				t.Fatal(err)
			}
			if (res.RequeueAfter > 0) != tc.requeue {
				t.Fatalf("requeue = %v, want %v", res.RequeueAfter, tc.requeue)
			}
			p := &corev1.Pod{}
			_ = c.Get(context.Background(), key, p)
			if got := p.Annotations[api.AnnReserveForGPUIndex]; got != tc.want {
				t.Fatalf("annotation = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestUpdaterNoDoubleAssignment: a second pod reconciled before the cache shows the
// first one's annotation still gets the next GPU.
func TestUpdaterNoDoubleAssignment(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(boot.Scheme()).
		WithObjects(reservationPod("a", "kwok-gpu-0", nil), reservationPod("b", "kwok-gpu-0", nil)).Build()
	u := &Updater{Client: c, NodeName: "kaiops-node"}
	ctx := context.Background()
	pa, pb := &corev1.Pod{}, &corev1.Pod{}
	_ = c.Get(ctx, client.ObjectKey{Namespace: "kai-resource-reservation", Name: "a"}, pa)
	_ = c.Get(ctx, client.ObjectKey{Namespace: "kai-resource-reservation", Name: "b"}, pb)
	ida, _ := u.fakeID(ctx, pa)
	idb, _ := u.fakeID(ctx, pb)
	if ida == idb || ida != DeviceID("kwok-gpu-0", 0) || idb != DeviceID("kwok-gpu-0", 1) {
		t.Fatalf("ids = %s, %s", ida, idb)
	}
}
