package scheduler

import (
	"context"
	"flag"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"kaiops.dev/lab/kai-standin/api"
	"kaiops.dev/lab/kai-standin/internal/boot"
)

// Main runs `kai-standin scheduler`.
func Main(args []string) error {
	fs := flag.NewFlagSet("scheduler", flag.ContinueOnError)
	var common boot.Common
	common.Bind(fs)
	var cfg Config
	var namespace, queueLabelKey, listen, schedulerConf string
	var period time.Duration
	fs.StringVar(&cfg.SchedulerName, "scheduler-name", "kai-scheduler", "pods with this schedulerName are scheduled")
	fs.StringVar(&namespace, "namespace", "kai-scheduler", "the scheduler's own namespace (logged only)")
	fs.StringVar(&cfg.NodePoolLabelKey, "nodepool-label-key", "kai.scheduler/node-pool", "node label that assigns a node to a shard")
	fs.StringVar(&cfg.PartitionLabelValue, "partition-label-value", "", "this shard's node-pool value; empty: nodes without the label")
	fs.StringVar(&cfg.ReservationAppLabel, "resource-reservation-app-label", "kai-resource-reservation", "app label of GPU reservation pods")
	fs.StringVar(&queueLabelKey, "queue-label-key", "kai.scheduler/queue", "accepted; the queue comes from the PodGroup")
	fs.StringVar(&listen, "listen-address", ":8080", "address of /metrics")
	fs.StringVar(&schedulerConf, "scheduler-conf", "", "accepted and ignored: actions and plugins are fixed in the stand-in")
	fs.DurationVar(&period, "schedule-period", time.Second, "cycle period")
	if err := fs.Parse(args); err != nil {
		return err
	}
	setup := common.Start("scheduler")
	rc, err := common.RestConfig()
	if err != nil {
		return err
	}
	scheme := boot.Scheme()
	mgr, err := ctrl.NewManager(rc, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: listen},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return fmt.Errorf("failed to create manager: %w", err)
	}
	rec, stop, err := boot.NewRecorder(rc, scheme, "kai-scheduler")
	if err != nil {
		return err
	}
	defer stop()
	s := &Scheduler{
		Cfg: cfg, Reader: mgr.GetCache(), Writer: mgr.GetClient(), Recorder: rec,
		Log: ctrl.Log.WithName("scheduler"), Metrics: NewMetrics(ctrlmetrics.Registry),
	}
	// Informers up front, so the first cycle does not wait on lazy starts.
	ctx := ctrl.SetupSignalHandler()
	for _, o := range []client.Object{&corev1.Pod{}, &corev1.Node{}, &api.BindRequest{}, &api.PodGroup{}, &api.Queue{}} {
		if _, err := mgr.GetCache().GetInformer(ctx, o); err != nil {
			return fmt.Errorf("failed to start informer for %T: %w", o, err)
		}
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return fmt.Errorf("cache did not sync")
		}
		setup.Info("Scheduler cycle starting", "period", period, "nodePool", cfg.NodePool(), "namespace", namespace)
		return s.Run(ctx, period)
	})); err != nil {
		return err
	}
	setup.Info("starting manager", "listenAddress", listen)
	return mgr.Start(ctx)
}
