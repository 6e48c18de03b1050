package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"kaiops.dev/lab/kai-standin/admission"
	"kaiops.dev/lab/kai-standin/api"
	"kaiops.dev/lab/kai-standin/binder"
	"kaiops.dev/lab/kai-standin/gpustatus"
	"kaiops.dev/lab/kai-standin/internal/boot"
	"kaiops.dev/lab/kai-standin/podgrouper"
	"kaiops.dev/lab/kai-standin/scheduler"
)

const (
	fakeNode = "kwok-gpu-0"
	resNS    = "kai-resource-reservation"
)

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func webhooks() ([]*admissionv1.MutatingWebhookConfiguration, []*admissionv1.ValidatingWebhookConfiguration) {
	fail, none := admissionv1.Fail, admissionv1.SideEffectClassNone
	again := admissionv1.IfNeededReinvocationPolicy
	mpath, vpath := admission.MutatePath, admission.ValidatePath
	rule := func(ops ...admissionv1.OperationType) []admissionv1.RuleWithOperations {
		return []admissionv1.RuleWithOperations{{Operations: ops,
			Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}
	}
	nsSel := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", "kai-scheduler"}}}}
	match := []admissionv1.MatchCondition{{Name: "scheduler-name-match", Expression: "object.spec.schedulerName == 'kai-scheduler'"}}
	svc := func(p *string) admissionv1.WebhookClientConfig {
		return admissionv1.WebhookClientConfig{Service: &admissionv1.ServiceReference{Name: "admission", Namespace: "kai-scheduler", Path: p}}
	}
	m := &admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "mutating-kai-admission"},
		Webhooks: []admissionv1.MutatingWebhook{{Name: "admission.kai-scheduler.svc", ClientConfig: svc(&mpath),
			Rules: rule(admissionv1.Create), FailurePolicy: &fail, SideEffects: &none, ReinvocationPolicy: &again,
			NamespaceSelector: nsSel, MatchConditions: match, AdmissionReviewVersions: []string{"v1"}}}}
	v := &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "validating-kai-admission"},
		Webhooks: []admissionv1.ValidatingWebhook{{Name: "admission.kai-scheduler.svc", ClientConfig: svc(&vpath),
			Rules: rule(admissionv1.Create, admissionv1.Update), FailurePolicy: &fail, SideEffects: &none,
			NamespaceSelector: nsSel, MatchConditions: match, AdmissionReviewVersions: []string{"v1"}}}}
	return []*admissionv1.MutatingWebhookConfiguration{m}, []*admissionv1.ValidatingWebhookConfiguration{v}
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		ok, detail := cond()
		if ok {
			return
		}
		last = detail
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s; last: %s", what, last)
}

func fractionPod(ns, name string, gated bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{api.AnnGPUFraction: "0.5"}},
		Spec: corev1.PodSpec{SchedulerName: "kai-scheduler", Containers: []corev1.Container{{Name: "main", Image: "busybox"}},
			Tolerations: []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists}}},
	}
	if gated {
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "hold"}}
	}
	return p
}

func events(ctx context.Context, c client.Client, ns, object, reason string) []corev1.Event {
	var list corev1.EventList
	_ = c.List(ctx, &list, client.InNamespace(ns))
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Name == object && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// TestPipeline runs admission, pod grouper, scheduler, binder (race-fix-unguarded) and
// the GPU status updater against a real API server: the happy path first, then the
// data-less ConfigMap loop of kai-contract.md section 13 and its manual recovery.
func TestPipeline(t *testing.T) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Skip("KUBEBUILDER_ASSETS not set: no kube-apiserver/etcd to test against")
	}
	logs := &syncBuffer{}
	ctrl.SetLogger(zap.New(zap.WriteTo(logs), zap.UseDevMode(true), zap.Level(zapcore.Level(-2))))
	mw, vw := webhooks()
	env := &envtest.Environment{
		CRDDirectoryPaths: []string{"testdata"}, ErrorIfCRDPathMissing: true, BinaryAssetsDirectory: assets,
		WebhookInstallOptions: envtest.WebhookInstallOptions{MutatingWebhooks: mw, ValidatingWebhooks: vw},
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	defer func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	}()
	c, err := client.New(cfg, client.Options{Scheme: boot.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	for _, n := range []string{"team-a", "edge", resNS, "kai-scale-adjust"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	// fake-gpu-operator's RuntimeClass; the API server rejects pods naming a missing one.
	if err := c.Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "nvidia"}, Handler: "runc"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "kai-resource-reservation", Namespace: resNS}}); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fakeNode, Labels: map[string]string{api.NodeLabelGPUMemMB: "11441"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "kwok.x-k8s.io/node", Value: "fake", Effect: corev1.TaintEffectNoSchedule}}}}
	if err := c.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	res := corev1.ResourceList{api.ResourceGPU: resource.MustParse("8"), corev1.ResourceCPU: resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("110")}
	node.Status = corev1.NodeStatus{Capacity: res, Allocatable: res,
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}}
	if err := c.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	// The API server's TaintNodesByCondition adds not-ready:NoSchedule to a new node;
	// with no node lifecycle controller here, take it off as that controller would.
	if err := c.Get(ctx, client.ObjectKey{Name: fakeNode}, node); err != nil {
		t.Fatal(err)
	}
	node.Spec.Taints = []corev1.Taint{{Key: "kwok.x-k8s.io/node", Value: "fake", Effect: corev1.TaintEffectNoSchedule}}
	if err := c.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	minus1 := -1.0
	unlimited := &api.QueueResources{GPU: &api.ResourceQuota{Limit: &minus1}}
	for _, q := range []api.Queue{
		{ObjectMeta: metav1.ObjectMeta{Name: "default-parent-queue"}, Spec: api.QueueSpec{Resources: unlimited}},
		{ObjectMeta: metav1.ObjectMeta{Name: "default-queue"}, Spec: api.QueueSpec{ParentQueue: "default-parent-queue", Resources: unlimited}},
	} {
		q := q
		if err := c.Create(ctx, &q); err != nil {
			t.Fatal(err)
		}
	}

	wio := env.WebhookInstallOptions
	run := func(name string, f func() error) {
		go func() {
			if err := f(); err != nil && ctx.Err() == nil {
				t.Errorf("%s stopped: %v", name, err)
			}
		}()
	}
	run("admission", func() error {
		return admission.Run(ctx, cfg, admission.Options{SchedulerName: "kai-scheduler", GPUSharingEnabled: true, RuntimeClassName: "nvidia"},
			admission.ServerOptions{Port: wio.LocalServingPort, CertDir: wio.LocalServingCertDir, MetricsAddr: "0", ProbeAddr: "0", SkipNameValidation: true})
	})
	run("pod-grouper", func() error {
		return podgrouper.Run(ctx, cfg, podgrouper.Options{SchedulerName: "kai-scheduler", QueueLabelKey: "kai.scheduler/queue",
			MetricsAddr: "0", ProbeAddr: "0", SkipNameValidation: true})
	})
	run("scheduler", func() error {
		return scheduler.Run(ctx, cfg, scheduler.Options{Config: scheduler.Config{SchedulerName: "kai-scheduler",
			NodePoolLabelKey: "kai.scheduler/node-pool", ReservationAppLabel: "kai-resource-reservation"},
			ListenAddress: "0", Period: 300 * time.Millisecond})
	})
	run("binder", func() error {
		return binder.Run(ctx, cfg, binder.Options{
			Reservation: &binder.Reservation{Namespace: resNS, ServiceAccount: "kai-resource-reservation", AppLabel: "kai-resource-reservation",
				Image: "img", ScaleAdjustNamespace: "kai-scale-adjust", FakeGPUNodes: true, Timeout: 10 * time.Second},
			Plugins: binder.DefaultPlugins(), Write: binder.RaceFixUnguarded, SchedulerName: "kai-scheduler",
			ProbeAddr: "0", MetricsAddr: "0", MaxReconciles: 10, BaseDelay: time.Second, MaxDelay: time.Minute, SkipNameValidation: true,
		})
	})
	run("gpu-status-updater", func() error {
		return gpustatus.Run(ctx, cfg, gpustatus.Options{Namespace: resNS, NodeName: "kaiops-node", MetricsAddr: "0", ProbeAddr: "0",
			Devices: func(context.Context, string, string) ([]string, error) { return nil, nil }, SkipNameValidation: true})
	})
	eventually(t, 20*time.Second, "the webhook to listen", func() (bool, string) {
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(wio.LocalServingHost, strconv.Itoa(wio.LocalServingPort)), time.Second)
		if err != nil {
			return false, err.Error()
		}
		conn.Close()
		return true, ""
	})
	if !strings.Contains(logs.String(), "syncing resource reservation") {
		eventually(t, 10*time.Second, "the binder's startup sync", func() (bool, string) {
			return strings.Contains(logs.String(), "syncing resource reservation"), ""
		})
	}

	t.Run("fraction pod binds", func(t *testing.T) {
		pod := fractionPod("team-a", "gpu-sharing", false)
		if err := c.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		prefix := pod.Annotations[api.AnnSharedGPUConfigMap]
		if !strings.HasPrefix(prefix, "gpu-sharing-") || !strings.HasSuffix(prefix, "-shared-gpu") ||
			pod.Spec.RuntimeClassName == nil || *pod.Spec.RuntimeClassName != "nvidia" || len(pod.Spec.Containers[0].Env) != 3 {
			t.Fatalf("admission did not mutate: %+v", pod)
		}
		eventually(t, 20*time.Second, "the pod to be bound", func() (bool, string) {
			got := &corev1.Pod{}
			_ = c.Get(ctx, client.ObjectKeyFromObject(pod), got)
			return got.Spec.NodeName == fakeNode, fmt.Sprintf("node %q labels %v annotations %v", got.Spec.NodeName, got.Labels, got.Annotations)
		})
		capMap := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: prefix + "-0"}, capMap); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"NVIDIA_VISIBLE_DEVICES": gpustatus.DeviceID(fakeNode, 0), "RUNAI_NUM_OF_GPUS": "0.50", "GPU_PORTION": "0.50"}
		if fmt.Sprint(capMap.Data) != fmt.Sprint(want) {
			t.Fatalf("capabilities data = %v, want %v", capMap.Data, want)
		}
		br := &api.BindRequest{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "gpu-sharing"}, br); err != nil || br.Status.Phase != api.PhaseSucceeded {
			t.Fatalf("BindRequest %+v (%v)", br.Status, err)
		}
		for _, reason := range []string{"Scheduled", "Bound"} {
			eventually(t, 5*time.Second, reason+" event", func() (bool, string) {
				return len(events(ctx, c, "team-a", "gpu-sharing", reason)) == 1, ""
			})
		}
		// Gone, its group must go too: the binder's pod handler frees the reservation.
		if err := c.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "the reservation pod to go with its last fraction", func() (bool, string) {
			var list corev1.PodList
			_ = c.List(ctx, &list, client.InNamespace(resNS))
			return len(list.Items) == 0, fmt.Sprintf("%d reservation pods", len(list.Items))
		})
	})

	t.Run("data-less ConfigMap loops at the scheduler cycle until deleted", func(t *testing.T) {
		pod := fractionPod("edge", "edge", true)
		if err := c.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		pgName := "pg-edge-" + string(pod.UID)
		eventually(t, 10*time.Second, "NotReady on the gated pod's PodGroup", func() (bool, string) {
			return len(events(ctx, c, "edge", pgName, "NotReady")) > 0, ""
		})
		capName := pod.Annotations[api.AnnSharedGPUConfigMap] + "-0"
		planted := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: capName, Namespace: "edge",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}}}}
		if err := c.Create(ctx, planted); err != nil {
			t.Fatal(err)
		}
		lift := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"schedulingGates":null}}`))
		if err := c.Patch(ctx, pod, lift); err != nil {
			t.Fatal(err)
		}
		uids, groups := map[types.UID]bool{}, map[string]bool{}
		eventually(t, 30*time.Second, "three failed attempts with new groups", func() (bool, string) {
			br := &api.BindRequest{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: "edge", Name: "edge"}, br); err == nil {
				uids[br.UID] = true
				if br.Status.Phase == api.PhaseSucceeded {
					t.Fatalf("bound despite the data-less ConfigMap: %+v", br.Status)
				}
			}
			got := &corev1.Pod{}
			_ = c.Get(ctx, client.ObjectKeyFromObject(pod), got)
			if g := got.Labels[api.LabelGPUGroup]; g != "" {
				groups[g] = true
			}
			return len(uids) >= 3 && len(groups) >= 3, fmt.Sprintf("%d requests, %d groups, node %q", len(uids), len(groups), got.Spec.NodeName)
		})
		errs := events(ctx, c, "edge", "edge", "BindingError")
		if len(errs) != 1 || errs[0].Message != "Failed to bind pod edge/edge to node kwok-gpu-0: Internal Error: assignment to entry in nil map" || errs[0].Count < 2 {
			t.Fatalf("BindingError events = %+v, want one folded event with a rising count", errs)
		}
		if len(events(ctx, c, "edge", "edge", "Bound")) != 1 {
			t.Fatalf("want the misleading Normal Bound event too")
		}
		still := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(planted), still); err != nil || still.Data != nil {
			t.Fatalf("planted ConfigMap = %v (%v), want it never written", still.Data, err)
		}
		if err := c.Delete(ctx, planted); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, "the pod to bind after the ConfigMap is deleted", func() (bool, string) {
			got := &corev1.Pod{}
			_ = c.Get(ctx, client.ObjectKeyFromObject(pod), got)
			return got.Spec.NodeName == fakeNode, fmt.Sprintf("node %q", got.Spec.NodeName)
		})
		fresh := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(planted), fresh); err != nil || len(fresh.Data) != 3 {
			t.Fatalf("recreated ConfigMap = %v (%v)", fresh.Data, err)
		}
		// The final group's reservation pod is there and answered. The previous
		// attempt's may outlive the loop: the last bind synced the node while the pod
		// still carried that group (CONTRACT.md, "stale reservation pod").
		final := &corev1.Pod{}
		_ = c.Get(ctx, client.ObjectKeyFromObject(pod), final)
		rp := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: resNS, Name: binder.ReservationPodName(fakeNode, final.Labels[api.LabelGPUGroup])}, rp); err != nil ||
			rp.Annotations[api.AnnReserveForGPUIndex] == "" {
			t.Fatalf("final reservation pod: %v %v", err, rp.Annotations)
		}
		var list corev1.PodList
		_ = c.List(ctx, &list, client.InNamespace(resNS))
		if len(list.Items) > 2 {
			t.Fatalf("%d reservation pods left, want the final one and at most one stale", len(list.Items))
		}
	})
}
