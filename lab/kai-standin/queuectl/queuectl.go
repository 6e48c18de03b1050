// Package queuectl is a minimal stand-in for KAI's queue-controller: Queue
// status.childQueues and the allocated/requested sums of the queue's subtree, and KAI's
// Queue v2 validating webhook served over TLS (webhook.go).
package queuectl

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"kaiops.dev/lab/kai-standin/api"
	"kaiops.dev/lab/kai-standin/internal/boot"
	"kaiops.dev/lab/kai-standin/internal/validating"
	"kaiops.dev/lab/kai-standin/podgroupctl"
)

// Every change recomputes the whole (small) tree under one key: parents depend on
// children, so per-queue keys would only reorder the same work.
var everything = reconcile.Request{NamespacedName: types.NamespacedName{Name: "all-queues"}}

type Controller struct {
	Client client.Client
}

type QueueStatus struct {
	Children             []string
	Allocated, Requested corev1.ResourceList
}

// Compute is pure, for tests: the status every queue should have.
func Compute(queues []api.Queue, pgs []api.PodGroup) map[string]QueueStatus {
	out := map[string]QueueStatus{}
	children := map[string][]string{}
	for _, q := range queues {
		out[q.Name] = QueueStatus{Allocated: corev1.ResourceList{}, Requested: corev1.ResourceList{}}
		if q.Spec.ParentQueue != "" {
			children[q.Spec.ParentQueue] = append(children[q.Spec.ParentQueue], q.Name)
		}
	}
	direct := map[string][2]corev1.ResourceList{}
	for _, pg := range pgs {
		d, ok := direct[pg.Spec.Queue]
		if !ok {
			d = [2]corev1.ResourceList{{}, {}}
		}
		add(d[0], pg.Status.ResourcesStatus.Allocated)
		add(d[1], pg.Status.ResourcesStatus.Requested)
		direct[pg.Spec.Queue] = d
	}
	var fill func(name string, seen map[string]bool) (corev1.ResourceList, corev1.ResourceList)
	fill = func(name string, seen map[string]bool) (corev1.ResourceList, corev1.ResourceList) {
		st := out[name]
		if seen[name] {
			return st.Allocated, st.Requested
		}
		seen[name] = true
		add(st.Allocated, direct[name][0])
		add(st.Requested, direct[name][1])
		kids := slices.Clone(children[name])
		slices.Sort(kids)
		for _, k := range kids {
			if _, ok := out[k]; !ok {
				continue
			}
			a, r := fill(k, seen)
			add(st.Allocated, a)
			add(st.Requested, r)
		}
		st.Children = kids
		out[name] = st
		return st.Allocated, st.Requested
	}
	seen := map[string]bool{}
	for _, q := range queues {
		fill(q.Name, seen)
	}
	return out
}

func add(dst, src corev1.ResourceList) {
	for k, v := range src {
		cur := dst[k]
		cur.Add(v)
		dst[k] = cur
	}
}

func (c *Controller) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	var queues api.QueueList
	if err := c.Client.List(ctx, &queues); err != nil {
		return ctrl.Result{}, err
	}
	var pgs api.PodGroupList
	if err := c.Client.List(ctx, &pgs); err != nil {
		return ctrl.Result{}, err
	}
	want := Compute(queues.Items, pgs.Items)
	for i := range queues.Items {
		q := &queues.Items[i]
		w := want[q.Name]
		if slices.Equal(q.Status.ChildQueues, w.Children) &&
			podgroupctl.EqualResources(q.Status.Allocated, w.Allocated) &&
			podgroupctl.EqualResources(q.Status.Requested, w.Requested) {
			continue
		}
		body, _ := json.Marshal(map[string]any{"status": map[string]any{
			"childQueues": w.Children, "allocated": w.Allocated, "requested": w.Requested,
		}})
		if err := c.Client.Status().Patch(ctx, q, client.RawPatch(types.MergePatchType, body)); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// Main runs `kai-standin queue-controller`.
func Main(args []string) error {
	fs := flag.NewFlagSet("queue-controller", flag.ContinueOnError)
	var common boot.Common
	common.Bind(fs)
	var metricsAddr, probeAddr, certDir string
	var webhookPort int
	var enableWebhook, quotaValidation bool
	fs.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "metrics address")
	fs.Func("metrics-listen-address", "metrics address (KAI's name for --metrics-bind-address)", func(v string) error {
		metricsAddr = v
		return nil
	})
	fs.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "healthz/readyz address")
	fs.BoolVar(&enableWebhook, "enable-webhook", true, "serve the Queue validating webhook (KAI's flag)")
	fs.BoolVar(&quotaValidation, "enable-quota-validation", false, "KAI's opt-in quota checks: not reproduced, refused when true")
	fs.IntVar(&webhookPort, "webhook-port", 9443, "the stand-in's: webhook server port (KAI's takes the default 9443)")
	fs.StringVar(&certDir, "cert-dir", validating.DefaultCertDir(), "the stand-in's: folder with tls.crt and tls.key (KAI's takes the default)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	setup := common.Start("queue-controller")
	if quotaValidation {
		return fmt.Errorf("--enable-quota-validation is not reproduced by the stand-in (CONTRACT.md)")
	}
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
	all := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{everything}
	})
	if err := ctrl.NewControllerManagedBy(mgr).Named("queue").
		Watches(&api.Queue{}, all).Watches(&api.PodGroup{}, all).
		Complete(&Controller{Client: mgr.GetClient()}); err != nil {
		return err
	}
	setup.Info("starting manager", "webhook", enableWebhook, "webhookPort", webhookPort, "certDir", certDir)
	return mgr.Start(ctrl.SetupSignalHandler())
}
