package operator

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"kaiops.dev/lab/kai-standin/internal/boot"
)

// The reconcile against a real API server (no controllers: Deployments roll out only
// when the test says so). Runs when KUBEBUILDER_ASSETS names a folder with
// kube-apiserver and etcd, as the pipeline test does; the CRDs are the chart's.
func TestReconcileAgainstAPIServer(t *testing.T) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Skip("KUBEBUILDER_ASSETS not set: no kube-apiserver/etcd to test against")
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "charts", "kai-scheduler", "crds")},
		ErrorIfCRDPathMissing: true, BinaryAssetsDirectory: assets,
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	c, err := client.New(cfg, client.Options{Scheme: boot.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kai-scheduler"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"run.ai/fake.gpu": "true"}}}); err != nil {
		t.Fatal(err)
	}
	shard := &unstructured.Unstructured{}
	shard.SetGroupVersionKind(ShardGVK)
	shard.SetName("default")
	if err := c.Create(ctx, shard); err != nil {
		t.Fatal(err)
	}
	config := newConfig()
	config.SetName(ConfigName)
	config.SetAnnotations(map[string]string{"meta.helm.sh/release-name": "kai-scheduler"})
	_ = unstructured.SetNestedMap(config.Object, map[string]any{
		"namespace": "kai-scheduler",
		"binder":    map[string]any{"service": map[string]any{"image": map[string]any{"tag": "v2"}}},
		"standin":   map[string]any{"release": "v2", "configmapWrite": "race-fix-guarded"},
	}, "spec")
	if err := c.Create(ctx, config); err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Client: c, Fallbacks: Fallbacks{Namespace: "kai-scheduler", Repository: "reg", Tag: "v1"}, Now: time.Now}
	reconcile := func() map[string]metav1.Condition {
		t.Helper()
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Name: ConfigName}}); err != nil {
			t.Fatal(err)
		}
		got := newConfig()
		if err := c.Get(ctx, types.NamespacedName{Name: ConfigName}, got); err != nil {
			t.Fatal(err)
		}
		raw, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		out := map[string]metav1.Condition{}
		for _, item := range raw {
			m := item.(map[string]any)
			gen, _ := m["observedGeneration"].(int64)
			out[m["type"].(string)] = metav1.Condition{Type: m["type"].(string), Status: metav1.ConditionStatus(m["status"].(string)),
				Reason: m["reason"].(string), ObservedGeneration: gen}
			if gen != got.GetGeneration() {
				t.Fatalf("%s observedGeneration %d, Config generation %d", m["type"], gen, got.GetGeneration())
			}
		}
		return out
	}
	rollOut := func() {
		t.Helper()
		for _, name := range []string{"admission", "binder", "kai-scheduler-default", "pod-grouper", "podgroup-controller", "queue-controller"} {
			d := &appsv1.Deployment{}
			if err := c.Get(ctx, types.NamespacedName{Namespace: "kai-scheduler", Name: name}, d); err != nil {
				t.Fatal(err)
			}
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
			if err := c.Status().Update(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
	}
	binderImage := func() (string, []string) {
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: "kai-scheduler", Name: "binder"}, d); err != nil {
			t.Fatal(err)
		}
		return d.Spec.Template.Spec.Containers[0].Image, d.Spec.Template.Spec.Containers[0].Args
	}

	t.Run("first reconcile makes everything, not yet available", func(t *testing.T) {
		conds := reconcile()
		if conds[Deployed].Status != "True" || conds[Available].Status != "False" || conds[Ready].Status != "False" {
			t.Fatalf("conditions %+v", conds)
		}
		image, args := binderImage()
		if image != "reg/binder:v2" {
			t.Fatalf("binder image %s: the spec's tag must win over MS_TAG", image)
		}
		if !slices.Contains(args, "--fake-gpu-nodes") || !slices.Contains(args, "--standin-configmap-write=race-fix-guarded") {
			t.Fatalf("binder args %v", args)
		}
		for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
			if err := c.Get(ctx, types.NamespacedName{Namespace: "kai-scheduler", Name: "admission"}, obj); err != nil {
				t.Fatal(err)
			}
			ref := metav1.GetControllerOf(obj)
			if ref == nil || ref.Name != ConfigName || ref.Kind != "Config" || obj.GetLabels()[ManagedByLabel] != ManagedBy {
				t.Fatalf("%T owner %+v labels %v", obj, ref, obj.GetLabels())
			}
		}
	})
	sec := &corev1.Secret{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "kai-scheduler", Name: WebhookSecret}, sec); err != nil {
		t.Fatal(err)
	}
	t.Run("each webhook Service has its certificate, and its webhooks trust it", func(t *testing.T) {
		trusted := map[string][]byte{} // Service -> caBundle of every webhook calling it
		vwcs := &admissionv1.ValidatingWebhookConfigurationList{}
		if err := c.List(ctx, vwcs); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, cfg := range vwcs.Items {
			names = append(names, cfg.Name)
			for _, w := range cfg.Webhooks {
				if prev, ok := trusted[w.ClientConfig.Service.Name]; ok && string(prev) != string(w.ClientConfig.CABundle) {
					t.Fatalf("two CAs for %s", w.ClientConfig.Service.Name)
				}
				trusted[w.ClientConfig.Service.Name] = w.ClientConfig.CABundle
			}
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{"kai-podgroup-validation-v2alpha2", "kai-queue-validation-v2", "validating-kai-admission"}) {
			t.Fatalf("validating configurations %v", names)
		}
		for _, ws := range WebhookServices {
			sec := &corev1.Secret{}
			if err := c.Get(ctx, types.NamespacedName{Namespace: "kai-scheduler", Name: ws.Secret}, sec); err != nil {
				t.Fatal(err)
			}
			kept := ServingCert{Cert: sec.Data["tls.crt"], Key: sec.Data["tls.key"], CA: sec.Data["ca.crt"]}
			if !kept.Usable(ws.Service, "kai-scheduler", time.Now()) || string(trusted[ws.Service]) != string(kept.CA) {
				t.Fatalf("%s: not usable for %s, or its webhooks trust another CA", ws.Secret, ws.Service)
			}
			if err := c.Get(ctx, types.NamespacedName{Namespace: "kai-scheduler", Name: ws.Service}, &corev1.Service{}); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("rolled out: Ready", func(t *testing.T) {
		rollOut()
		if conds := reconcile(); conds[Available].Status != "True" || conds[Ready].Status != "True" {
			t.Fatalf("conditions %+v", conds)
		}
	})
	t.Run("the serving certificate is kept across reconciles", func(t *testing.T) {
		again := &corev1.Secret{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: "kai-scheduler", Name: WebhookSecret}, again); err != nil {
			t.Fatal(err)
		}
		if string(again.Data["tls.crt"]) != string(sec.Data["tls.crt"]) {
			t.Fatal("the certificate was regenerated")
		}
	})
	t.Run("a new tag in the spec: not Ready until rolled out again", func(t *testing.T) {
		if err := c.Get(ctx, types.NamespacedName{Name: ConfigName}, config); err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedField(config.Object, "v3", "spec", "binder", "service", "image", "tag")
		if err := c.Update(ctx, config); err != nil {
			t.Fatal(err)
		}
		conds := reconcile()
		if conds[Ready].Status != "False" || conds[Ready].ObservedGeneration != 2 {
			t.Fatalf("conditions %+v", conds)
		}
		if image, _ := binderImage(); image != "reg/binder:v3" {
			t.Fatalf("binder image %s", image)
		}
		rollOut()
		if conds := reconcile(); !meta.IsStatusConditionTrue(toList(conds), Ready) {
			t.Fatalf("conditions %+v", conds)
		}
	})
	t.Run("a removed shard's scheduler goes", func(t *testing.T) {
		if err := c.Delete(ctx, shard); err != nil {
			t.Fatal(err)
		}
		reconcile()
		err := c.Get(ctx, types.NamespacedName{Namespace: "kai-scheduler", Name: "kai-scheduler-default"}, &appsv1.Deployment{})
		if err == nil {
			t.Fatal("kai-scheduler-default still there")
		}
	})
}

func toList(m map[string]metav1.Condition) []metav1.Condition {
	var out []metav1.Condition
	for _, c := range m {
		out = append(out, c)
	}
	return out
}
