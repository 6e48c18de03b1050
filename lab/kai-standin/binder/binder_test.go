package binder

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"kaiops.dev/lab/kai-standin/api"
	"kaiops.dev/lab/kai-standin/internal/boot"
)

const (
	ns       = "team-a"
	podName  = "frac"
	podUID   = types.UID("pod-uid-1")
	nodeName = "kaiops-node"
	group    = "3f2c0c4e-8f0a-4a43-9d55-0c1f3a1b2c3d"
	prefix   = "frac-k7q2xbd-shared-gpu"
	capCM    = prefix + "-0"
	envCM    = capCM + "-evar"
	deviceID = "GPU-3ec3ae08-48ef-c2b4-32e2-f5b8ffd5e0a7"
	resNS    = "kai-resource-reservation"
)

func fractionPod() *corev1.Pod {
	ref := func(key string) corev1.EnvVar {
		return corev1.EnvVar{Name: key, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: capCM}, Key: key}}}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName, Namespace: ns, UID: podUID,
			Annotations: map[string]string{api.AnnGPUFraction: "0.5", api.AnnSharedGPUConfigMap: prefix}},
		Spec: corev1.PodSpec{SchedulerName: "kai-scheduler", Containers: []corev1.Container{{
			Name: "main", Image: "busybox",
			Env: []corev1.EnvVar{ref("NVIDIA_VISIBLE_DEVICES"), ref("RUNAI_NUM_OF_GPUS"), ref("GPU_PORTION")},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

func fractionBR() *api.BindRequest {
	return &api.BindRequest{
		ObjectMeta: metav1.ObjectMeta{Name: podName, Namespace: ns, UID: "br-uid-1"},
		Spec: api.BindRequestSpec{PodName: podName, SelectedNode: nodeName, ReceivedResourceType: api.ResourceTypeFraction,
			ReceivedGPU: &api.ReceivedGPU{Count: 1, Portion: "0.50"}, SelectedGPUGroups: []string{group}},
	}
}

// annotatedReservation stands for a reservation pod the GPU side already answered, so
// that Reserve needs no watch.
func annotatedReservation() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: ReservationPodName(nodeName, group), Namespace: resNS, UID: "res-uid",
			Labels:      map[string]string{"app": "kai-resource-reservation", api.LabelGPUGroup: group},
			Annotations: map[string]string{api.AnnReserveForGPUIndex: deviceID}},
		Spec:   corev1.PodSpec{NodeName: nodeName},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

func node() *corev1.Node { return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}} }

func cm(name string, owner types.UID, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: podName, UID: owner}}},
		Data: data,
	}
}

type fixture struct {
	client   client.WithWatch
	recorder *record.FakeRecorder
	rec      *Reconciler
	plugin   *GPUSharing
	bindErr  error
}

// newFixture binds through the fake client; `pods/binding` is emulated the way the API
// server answers it (spec.nodeName set).
func newFixture(t *testing.T, write ConfigMapWrite, objs ...client.Object) *fixture {
	t.Helper()
	f := &fixture{recorder: record.NewFakeRecorder(100)}
	f.client = fake.NewClientBuilder().WithScheme(boot.Scheme()).
		WithObjects(objs...).
		WithStatusSubresource(&api.BindRequest{}, &corev1.Pod{}).
		WithIndex(&corev1.Pod{}, FieldNodeName, func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj client.Object, subObj client.Object, _ ...client.SubResourceCreateOption) error {
				if sub != "binding" {
					return errors.New("unexpected subresource " + sub)
				}
				if f.bindErr != nil {
					return f.bindErr
				}
				b := subObj.(*corev1.Binding)
				pod := &corev1.Pod{}
				if err := c.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Name}, pod); err != nil {
					return err
				}
				pod.Spec.NodeName = b.Target.Name
				return c.Update(ctx, pod)
			},
		}).Build()
	res := &Reservation{Reader: f.client, Writer: f.client, Watcher: f.client, Namespace: resNS,
		ServiceAccount: "kai-resource-reservation", AppLabel: "kai-resource-reservation", Image: "img",
		ScaleAdjustNamespace: "kai-scale-adjust", Timeout: time.Second}
	f.plugin = &GPUSharing{Reader: f.client, Writer: f.client, Write: write}
	b := &Binder{Writer: f.client, Reservation: res, Plugins: []Plugin{noopPlugin("volumebinding"), noopPlugin("dynamicresources"), f.plugin}}
	f.rec = &Reconciler{Reader: f.client, Writer: f.client, Recorder: f.recorder, Binder: b}
	return f
}

func (f *fixture) reconcile(t *testing.T) error {
	t.Helper()
	_, err := f.rec.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: podName}})
	return err
}

func (f *fixture) get(t *testing.T, obj client.Object, name, namespace string) error {
	t.Helper()
	return f.client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, obj)
}

func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

var wantKeys = map[string]string{"NVIDIA_VISIBLE_DEVICES": deviceID, "RUNAI_NUM_OF_GPUS": "0.50", "GPU_PORTION": "0.50"}

func with(extra map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range wantKeys {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

func sameData(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestConfigMapWrite runs a whole reconcile for each behaviour of
// meta/kai_releases.yml against each state the capabilities ConfigMap can be in.
func TestConfigMapWrite(t *testing.T) {
	stale := map[string]string{"NVIDIA_VISIBLE_DEVICES": "GPU-old", "RUNAI_NUM_OF_GPUS": "0.25", "GPU_PORTION": "0.25", "keep-me": "1"}
	cases := []struct {
		name     string
		existing *corev1.ConfigMap
		// per behaviour: the reason in status ("" = Succeeded) and the data afterwards
		want map[ConfigMapWrite]string
		data map[string]string
	}{
		{
			name:     "existing pod-owned ConfigMap with nil data",
			existing: cm(capCM, podUID, nil),
			want:     map[ConfigMapWrite]string{RaceFixUnguarded: "Internal Error: assignment to entry in nil map", RaceFixGuarded: "", EmptyMap: ""},
			data:     wantKeys,
		},
		{
			name:     "valid data plus an unrelated key",
			existing: cm(capCM, podUID, stale),
			want:     map[ConfigMapWrite]string{RaceFixUnguarded: "", RaceFixGuarded: "", EmptyMap: ""},
			data:     with(map[string]string{"keep-me": "1"}),
		},
		{
			name: "absent ConfigMap",
			want: map[ConfigMapWrite]string{RaceFixUnguarded: "", RaceFixGuarded: "", EmptyMap: ""},
			data: wantKeys,
		},
		{
			name:     "different owner",
			existing: cm(capCM, "someone-else", stale),
			want:     map[ConfigMapWrite]string{RaceFixUnguarded: "", RaceFixGuarded: "", EmptyMap: ""},
			data:     wantKeys,
		},
	}
	for _, tc := range cases {
		for _, write := range []ConfigMapWrite{EmptyMap, RaceFixUnguarded, RaceFixGuarded} {
			t.Run(tc.name+"/"+string(write), func(t *testing.T) {
				objs := []client.Object{fractionPod(), fractionBR(), annotatedReservation(), node()}
				if tc.existing != nil {
					objs = append(objs, tc.existing.DeepCopy())
				}
				f := newFixture(t, write, objs...)
				err := f.reconcile(t)
				br := &api.BindRequest{}
				if e := f.get(t, br, podName, ns); e != nil {
					t.Fatal(e)
				}
				pod := &corev1.Pod{}
				_ = f.get(t, pod, podName, ns)
				capMap := &corev1.ConfigMap{}
				capErr := f.get(t, capMap, capCM, ns)
				envMap := &corev1.ConfigMap{}
				if e := f.get(t, envMap, envCM, ns); e != nil {
					t.Fatalf("-evar ConfigMap: %v", e)
				}
				if len(envMap.Data) != 0 {
					t.Errorf("-evar ConfigMap data = %v, want none", envMap.Data)
				}
				reason := tc.want[write]
				if reason != "" {
					if br.Status.Phase != api.PhaseFailed || br.Status.Reason != reason {
						t.Fatalf("status = %+v, want Failed %q", br.Status, reason)
					}
					if err == nil || !strings.HasPrefix(err.Error(), reason+"\n") || !strings.Contains(err.Error(), "goroutine") {
						t.Errorf("returned error %v, want the reason followed by a stack", err)
					}
					if pod.Spec.NodeName != "" || pod.Labels[api.LabelGPUGroup] != group || pod.Annotations[api.AnnReceivedResourceType] != "" {
						t.Errorf("pod after panic: node %q labels %v annotations %v; want unbound, group label kept (no rollback), no received-resource-type",
							pod.Spec.NodeName, pod.Labels, pod.Annotations)
					}
					if capErr != nil || capMap.Data != nil {
						t.Errorf("capabilities ConfigMap after panic: %v %v, want it untouched", capErr, capMap.Data)
					}
					ev := f.events()
					if len(ev) != 1 || ev[0] != "Warning BindingError Failed to bind pod team-a/frac to node kaiops-node: "+reason {
						t.Errorf("events = %q", ev)
					}
					return
				}
				if err != nil || br.Status.Phase != api.PhaseSucceeded {
					t.Fatalf("reconcile error %v, status %+v; want Succeeded", err, br.Status)
				}
				if capErr != nil || !sameData(capMap.Data, tc.data) {
					t.Errorf("capabilities data = %v (%v), want %v", capMap.Data, capErr, tc.data)
				}
				if o := capMap.OwnerReferences; len(o) != 1 || o[0].UID != podUID || o[0].Kind != "Pod" || o[0].Name != podName {
					t.Errorf("capabilities owner = %v, want the pod", o)
				}
				if pod.Spec.NodeName != nodeName || pod.Annotations[api.AnnReceivedResourceType] != api.ResourceTypeFraction {
					t.Errorf("pod node %q annotations %v", pod.Spec.NodeName, pod.Annotations)
				}
				if ev := f.events(); len(ev) != 1 || ev[0] != "Normal Bound Pod bound successfully to node kaiops-node" {
					t.Errorf("events = %q", ev)
				}
			})
		}
	}
}

// TestConfigMapWriteRepeated: a second PreBind with the same inputs changes nothing.
func TestConfigMapWriteRepeated(t *testing.T) {
	for _, write := range []ConfigMapWrite{EmptyMap, RaceFixUnguarded, RaceFixGuarded} {
		t.Run(string(write), func(t *testing.T) {
			f := newFixture(t, write, fractionPod())
			ctx := context.Background()
			for i := 0; i < 2; i++ {
				if err := f.plugin.PreBind(ctx, fractionPod(), fractionBR(), []string{deviceID}); err != nil {
					t.Fatalf("call %d: %v", i+1, err)
				}
				got := &corev1.ConfigMap{}
				if err := f.get(t, got, capCM, ns); err != nil || !sameData(got.Data, wantKeys) {
					t.Fatalf("call %d: data %v (%v)", i+1, got.Data, err)
				}
			}
		})
	}
}

// TestRepeatedFailureReadsAsBound is KAI's dropped-error rule: the second failure on an
// already-Failed request writes no status and reports success.
func TestRepeatedFailureReadsAsBound(t *testing.T) {
	f := newFixture(t, RaceFixUnguarded, fractionPod(), fractionBR(), annotatedReservation(), node(), cm(capCM, podUID, nil))
	_ = f.reconcile(t)
	first := &corev1.Pod{}
	_ = f.get(t, first, podName, ns)
	err := f.reconcile(t)
	if err == nil || !strings.HasPrefix(err.Error(), "Internal Error: assignment to entry in nil map\n") {
		t.Fatalf("second reconcile error = %v, want the stack-bearing panic error (requeue)", err)
	}
	ev := f.events()
	want := []string{
		"Warning BindingError Failed to bind pod team-a/frac to node kaiops-node: Internal Error: assignment to entry in nil map",
		"Normal Bound Pod bound successfully to node kaiops-node",
	}
	if len(ev) != 2 || ev[0] != want[0] || ev[1] != want[1] {
		t.Fatalf("events = %q, want %q", ev, want)
	}
	pod := &corev1.Pod{}
	_ = f.get(t, pod, podName, ns)
	var bound *corev1.PodCondition
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == condPodBound {
			bound = &pod.Status.Conditions[i]
		}
	}
	if bound == nil || bound.Status != corev1.ConditionTrue || bound.Reason != reasonBound || pod.Spec.NodeName != "" {
		t.Fatalf("PodBound = %+v on a pod with node %q; want True on an unbound pod", bound, pod.Spec.NodeName)
	}
	br := &api.BindRequest{}
	_ = f.get(t, br, podName, ns)
	if br.Status.Phase != api.PhaseFailed || br.Status.FailedAttempts != 0 {
		t.Fatalf("status = %+v", br.Status)
	}
}

// TestOrdinaryFailureRollsBack: a failing binding call deletes both ConfigMaps and the
// group label; the reservation pod stays while the request is still active.
func TestOrdinaryFailureRollsBack(t *testing.T) {
	f := newFixture(t, RaceFixGuarded, fractionPod(), fractionBR(), annotatedReservation(), node())
	f.bindErr = apierrors.NewConflict(corev1.Resource("pods"), podName, errors.New("boom"))
	err := f.reconcile(t)
	if err == nil || !strings.HasPrefix(err.Error(), "failed to bind pod team-a/frac to node kaiops-node: ") {
		t.Fatalf("error = %v", err)
	}
	for _, n := range []string{capCM, envCM} {
		if e := f.get(t, &corev1.ConfigMap{}, n, ns); !apierrors.IsNotFound(e) {
			t.Errorf("ConfigMap %s after rollback: %v, want deleted", n, e)
		}
	}
	pod := &corev1.Pod{}
	_ = f.get(t, pod, podName, ns)
	if _, ok := pod.Labels[api.LabelGPUGroup]; ok {
		t.Errorf("group label kept after rollback: %v", pod.Labels)
	}
	if pod.Annotations[api.AnnReceivedResourceType] != api.ResourceTypeFraction {
		t.Errorf("received-resource-type is not rolled back in KAI; annotations %v", pod.Annotations)
	}
	if e := f.get(t, &corev1.Pod{}, ReservationPodName(nodeName, group), resNS); e != nil {
		t.Errorf("reservation pod: %v, want kept (the request is still active during rollback)", e)
	}
}

func TestInvalidFractionRequestIsDeleted(t *testing.T) {
	br := fractionBR()
	br.Spec.SelectedGPUGroups = nil
	f := newFixture(t, RaceFixGuarded, fractionPod(), br, node())
	if err := f.reconcile(t); err != nil {
		t.Fatalf("error = %v, want nil (the delete result)", err)
	}
	if e := f.get(t, &api.BindRequest{}, podName, ns); !apierrors.IsNotFound(e) {
		t.Fatalf("BindRequest: %v, want deleted", e)
	}
}

func TestReservationPodName(t *testing.T) {
	cases := []struct{ node, group, want string }{
		{"kaiops-node", "3f2c0c4e-8f0a-4a43-9d55-0c1f3a1b2c3d", "gpu-reservation-6ddacf6f1c820ecb"},
		{"kwok-gpu-0", "g1", "gpu-reservation-e70c6355537050be"},
	}
	for _, tc := range cases {
		t.Run(tc.node, func(t *testing.T) {
			if got := ReservationPodName(tc.node, tc.group); got != tc.want {
				t.Fatalf("ReservationPodName = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestReservationPodShape(t *testing.T) {
	cases := []struct {
		name  string
		fake  bool
		image string
		args  []string
	}{
		{"fake GPU nodes", true, "ubuntu", []string{"sleep", "infinity"}},
		{"real GPUs", false, "img", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reservation{Namespace: resNS, ServiceAccount: "sa", AppLabel: "kai-resource-reservation", Image: "img", FakeGPUNodes: tc.fake}
			src := fractionPod()
			src.Spec.Tolerations = []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists}}
			p := r.reservationPod(src, nodeName, group)
			c := p.Spec.Containers[0]
			if p.Name != ReservationPodName(nodeName, group) || p.Namespace != resNS || p.Spec.NodeName != nodeName ||
				p.Labels["app"] != "kai-resource-reservation" || p.Labels[api.LabelGPUGroup] != group ||
				p.Annotations[api.AnnDoNotDisrupt] != "true" || p.Spec.ServiceAccountName != "sa" ||
				len(p.Spec.Tolerations) != 1 || c.Name != "resource-reservation" || c.Image != tc.image ||
				strings.Join(c.Args, " ") != strings.Join(tc.args, " ") {
				t.Fatalf("reservation pod = %+v", p)
			}
			gpu := c.Resources.Limits[api.ResourceGPU]
			req := c.Resources.Requests[api.ResourceGPU]
			if gpu.Value() != 1 || req.Value() != 1 || len(c.Env) != 2 || c.Env[0].Name != "POD_NAME" || c.Env[1].Name != "POD_NAMESPACE" {
				t.Fatalf("container = %+v", c)
			}
		})
	}
}

func TestResolvePlugins(t *testing.T) {
	cases := []struct {
		name, raw string
		want      []string
	}{
		{"defaults", "", []string{"volumebinding", "dynamicresources", "gpusharing"}},
		{"operator JSON", `{"dynamicresources":{"enabled":true,"priority":200},"gpusharing":{"enabled":true,"priority":100,"arguments":{"cdiEnabled":"false"}},"hamicore":{"enabled":false,"priority":50},"volumebinding":{"enabled":true,"priority":300}}`,
			[]string{"volumebinding", "dynamicresources", "gpusharing"}},
		{"reordered", `{"gpusharing":{"priority":400}}`, []string{"gpusharing", "volumebinding", "dynamicresources"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resolvePlugins(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range got {
				names = append(names, p.name)
			}
			if strings.Join(names, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("plugins = %v, want %v", names, tc.want)
			}
		})
	}
}
