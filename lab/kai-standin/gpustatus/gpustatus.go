// Package gpustatus plays the part of fake-gpu-operator's status updater that KAI's
// binder waits for: it writes the GPU id onto each GPU reservation pod.
package gpustatus

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"kaiops.dev/lab/kai-standin/api"
	"kaiops.dev/lab/kai-standin/internal/boot"
)

// DeviceID is the id lab/fakegpu's plugin gives GPU index i of node (its DeviceIDs), so
// that fake nodes and the real node speak of GPUs the same way.
func DeviceID(node string, i int) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", node, i)))
	h := fmt.Sprintf("%x", sum[:16])
	return fmt.Sprintf("GPU-%s-%s-%s-%s-%s", h[0:8], h[8:12], h[12:16], h[16:20], h[20:32])
}

// DeviceLister returns the nvidia.com/gpu device ids the kubelet gave a pod.
type DeviceLister func(ctx context.Context, namespace, name string) ([]string, error)

type Updater struct {
	Client   client.Client
	NodeName string
	Devices  DeviceLister
	// Retry is how soon to look again while the kubelet has not allocated yet.
	Retry time.Duration

	// assigned remembers fake ids handed out that the cache may not show yet, so two
	// reservation pods on one fake node never get the same GPU.
	mu       sync.Mutex
	assigned map[types.UID]string
}

func (u *Updater) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pod := &corev1.Pod{}
	if err := u.Client.Get(ctx, req.NamespacedName, pod); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if pod.Spec.NodeName == "" || pod.DeletionTimestamp != nil ||
		pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return ctrl.Result{}, nil
	}
	if pod.Annotations[api.AnnReserveForGPUIndex] != "" {
		u.mu.Lock()
		delete(u.assigned, pod.UID)
		u.mu.Unlock()
		return ctrl.Result{}, nil
	}
	var id string
	if pod.Spec.NodeName == u.NodeName {
		ids, err := u.Devices(ctx, pod.Namespace, pod.Name)
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("failed to read kubelet pod resources: %w", err)
		}
		if len(ids) == 0 {
			return ctrl.Result{RequeueAfter: u.Retry}, nil
		}
		id = strings.Join(ids, ",")
	} else {
		var err error
		if id, err = u.fakeID(ctx, pod); err != nil {
			return ctrl.Result{}, err
		}
	}
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{api.AnnReserveForGPUIndex: id}}})
	if err := u.Client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, body)); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	log.FromContext(ctx).Info("Annotated reservation pod with its GPU", "node", pod.Spec.NodeName, "gpu", id)
	return ctrl.Result{}, nil
}

// fakeID picks the lowest GPU index of the pod's node that no other reservation pod
// there holds.
func (u *Updater) fakeID(ctx context.Context, pod *corev1.Pod) (string, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.assigned == nil {
		u.assigned = map[types.UID]string{}
	}
	if id, ok := u.assigned[pod.UID]; ok {
		return id, nil
	}
	var pods corev1.PodList
	if err := u.Client.List(ctx, &pods, client.InNamespace(pod.Namespace)); err != nil {
		return "", err
	}
	held := map[string]bool{}
	for _, p := range pods.Items {
		if p.UID == pod.UID || p.Spec.NodeName != pod.Spec.NodeName {
			continue
		}
		if id := p.Annotations[api.AnnReserveForGPUIndex]; id != "" {
			held[id] = true
		}
		if id, ok := u.assigned[p.UID]; ok {
			held[id] = true
		}
	}
	for i := 0; ; i++ {
		if id := DeviceID(pod.Spec.NodeName, i); !held[id] {
			u.assigned[pod.UID] = id
			return id, nil
		}
	}
}

// KubeletDevices asks the kubelet's pod-resources API (v1 List) over its unix socket.
func KubeletDevices(socket string) DeviceLister {
	return func(ctx context.Context, namespace, name string) ([]string, error) {
		conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		resp, err := podresourcesv1.NewPodResourcesListerClient(conn).List(cctx, &podresourcesv1.ListPodResourcesRequest{})
		if err != nil {
			return nil, err
		}
		var ids []string
		for _, pr := range resp.GetPodResources() {
			if pr.GetNamespace() != namespace || pr.GetName() != name {
				continue
			}
			for _, c := range pr.GetContainers() {
				for _, d := range c.GetDevices() {
					if d.GetResourceName() == api.ResourceGPU {
						ids = append(ids, d.GetDeviceIds()...)
					}
				}
			}
		}
		return ids, nil
	}
}

// Options is everything the updater runs with.
type Options struct {
	Namespace, NodeName, MetricsAddr, ProbeAddr string
	Devices                                     DeviceLister
	SkipNameValidation                          bool
}

// Main runs `kai-standin gpu-status-updater`.
func Main(args []string) error {
	fs := flag.NewFlagSet("gpu-status-updater", flag.ContinueOnError)
	var common boot.Common
	common.Bind(fs)
	var o Options
	var socket string
	fs.StringVar(&o.Namespace, "reservation-namespace", "kai-resource-reservation", "namespace of GPU reservation pods")
	fs.StringVar(&o.NodeName, "node-name", "", "the real node this runs on (kubelet pod-resources answer for it)")
	fs.StringVar(&socket, "pod-resources-socket", "/var/lib/kubelet/pod-resources/kubelet.sock", "kubelet pod-resources socket")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", "metrics address")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "healthz/readyz address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	common.Start("gpu-status-updater")
	if o.NodeName == "" {
		return fmt.Errorf("--node-name is required")
	}
	o.Devices = KubeletDevices(socket)
	cfg, err := common.RestConfig()
	if err != nil {
		return err
	}
	ctrl.Log.WithName("setup").Info("kubelet pod-resources", "socket", socket)
	return Run(ctrl.SetupSignalHandler(), cfg, o)
}

// Run starts the updater and blocks until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 boot.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress: o.ProbeAddr,
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{o.Namespace: {}}},
		Controller:             config.Controller{SkipNameValidation: &o.SkipNameValidation},
	})
	if err != nil {
		return fmt.Errorf("failed to create manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	u := &Updater{Client: mgr.GetClient(), NodeName: o.NodeName, Devices: o.Devices, Retry: 250 * time.Millisecond}
	// One worker: fake ids are handed out in order, never twice.
	if err := ctrl.NewControllerManagedBy(mgr).Named("reservationpod").For(&corev1.Pod{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).Complete(u); err != nil {
		return err
	}
	ctrl.Log.WithName("setup").Info("starting manager", "namespace", o.Namespace, "node", o.NodeName)
	return mgr.Start(ctx)
}
