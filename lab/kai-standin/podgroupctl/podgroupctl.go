// Package podgroupctl is a minimal stand-in for KAI's podgroup-controller: it keeps a
// PodGroup's status.resourcesStatus in step with its pods, and serves KAI's PodGroup
// v2alpha2 validating webhook over TLS (webhook.go).
package podgroupctl

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"kaiops.dev/lab/kai-standin/api"
	"kaiops.dev/lab/kai-standin/gpushare"
	"kaiops.dev/lab/kai-standin/internal/boot"
	"kaiops.dev/lab/kai-standin/internal/validating"
)

const fieldPodGroup = "metadata.annotations.pod-group-name"

type Controller struct {
	Client client.Client
}

// PodResources is what one pod asks for: cpu, memory and GPUs, a fraction counting as
// its portion of one device.
func PodResources(pod *corev1.Pod, node *corev1.Node) corev1.ResourceList {
	out := corev1.ResourceList{}
	add := func(name corev1.ResourceName, q resource.Quantity) {
		cur := out[name]
		cur.Add(q)
		out[name] = cur
	}
	for _, c := range pod.Spec.Containers {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := c.Resources.Requests[name]; ok {
				add(name, q)
			}
		}
	}
	var gpus float64
	if gpushare.RequestsFraction(pod) {
		if p, ok := gpushare.PodPortion(pod, node); ok {
			gpus = p * float64(gpushare.NumDevices(pod))
		}
	} else {
		gpus = float64(gpushare.WholeGPUs(pod))
	}
	if gpus > 0 {
		out[api.ResourceGPU] = *resource.NewMilliQuantity(int64(gpus*1000+0.5), resource.DecimalSI)
	}
	return out
}

func sumInto(dst, src corev1.ResourceList) {
	for k, v := range src {
		cur := dst[k]
		cur.Add(v)
		dst[k] = cur
	}
}

// EqualResources compares by value, not by text ("1000m" equals "1").
func EqualResources(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

func (c *Controller) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pg := &api.PodGroup{}
	if err := c.Client.Get(ctx, req.NamespacedName, pg); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var pods corev1.PodList
	if err := c.Client.List(ctx, &pods, client.InNamespace(pg.Namespace), client.MatchingFields{fieldPodGroup: pg.Name}); err != nil {
		return ctrl.Result{}, err
	}
	requested, allocated := corev1.ResourceList{}, corev1.ResourceList{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		var node *corev1.Node
		if pod.Spec.NodeName != "" {
			node = &corev1.Node{}
			if err := c.Client.Get(ctx, client.ObjectKey{Name: pod.Spec.NodeName}, node); err != nil {
				node = nil
			}
		}
		r := PodResources(pod, node)
		sumInto(requested, r)
		if pod.Spec.NodeName != "" {
			sumInto(allocated, r)
		}
	}
	cur := pg.Status.ResourcesStatus
	if EqualResources(cur.Requested, requested) && EqualResources(cur.Allocated, allocated) {
		return ctrl.Result{}, nil
	}
	body, _ := json.Marshal(map[string]any{"status": map[string]any{"resourcesStatus": map[string]any{
		"requested": requested, "allocated": allocated,
	}}})
	return ctrl.Result{}, c.Client.Status().Patch(ctx, pg, client.RawPatch(types.MergePatchType, body))
}

// Main runs `kai-standin podgroup-controller`.
func Main(args []string) error {
	fs := flag.NewFlagSet("podgroup-controller", flag.ContinueOnError)
	var common boot.Common
	common.Bind(fs)
	var metricsAddr, probeAddr, schedulerName, certDir string
	var webhookPort int
	var enableWebhook bool
	fs.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "metrics address")
	fs.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "healthz/readyz address")
	fs.StringVar(&schedulerName, "scheduler-name", "kai-scheduler", "accepted; PodGroups are found by annotation")
	fs.BoolVar(&enableWebhook, "enable-podgroup-webhook", true, "serve the PodGroup validating webhook (KAI's flag)")
	fs.IntVar(&webhookPort, "webhook-port", 9443, "the stand-in's: webhook server port (KAI's takes the default 9443)")
	fs.StringVar(&certDir, "cert-dir", validating.DefaultCertDir(), "the stand-in's: folder with tls.crt and tls.key (KAI's takes the default)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	setup := common.Start("podgroup-controller")
	cfg, err := common.RestConfig()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: boot.Scheme(), Metrics: metricsserver.Options{BindAddress: metricsAddr}, HealthProbeBindAddress: probeAddr,
		WebhookServer: webhook.NewServer(webhook.Options{Port: webhookPort, CertDir: certDir}),
	})
	if err != nil {
		return fmt.Errorf("failed to create manager: %w", err)
	}
	if enableWebhook {
		// the manager runs its webhook server once a path is registered
		mgr.GetWebhookServer().Register(WebhookPath, &webhook.Admission{Handler: Webhook()})
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	ctx := ctrl.SetupSignalHandler()
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, fieldPodGroup, func(o client.Object) []string {
		if n := o.GetAnnotations()[api.AnnPodGroupName]; n != "" {
			return []string{n}
		}
		return nil
	}); err != nil {
		return err
	}
	toGroup := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		n := o.GetAnnotations()[api.AnnPodGroupName]
		if n == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: n}}}
	})
	if err := ctrl.NewControllerManagedBy(mgr).Named("podgroup").For(&api.PodGroup{}).
		Watches(&corev1.Pod{}, toGroup).Complete(&Controller{Client: mgr.GetClient()}); err != nil {
		return err
	}
	setup.Info("starting manager", "webhook", enableWebhook, "webhookPort", webhookPort, "certDir", certDir)
	return mgr.Start(ctx)
}
