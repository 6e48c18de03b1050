package scheduler

import (
	"context"
	"flag"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"kaiops.dev/lab/kai-standin/api"
	"kaiops.dev/lab/kai-standin/faults"
	"kaiops.dev/lab/kai-standin/internal/boot"
)

// Options is everything the scheduler runs with.
type Options struct {
	Config
	Namespace     string
	ListenAddress string
	Period        time.Duration
}

// Main runs `kai-standin scheduler`.
func Main(args []string) error {
	o, common, err := ParseFlags(args)
	if err != nil {
		return err
	}
	common.Start("scheduler")
	rc, err := common.RestConfig()
	if err != nil {
		return err
	}
	return Run(ctrl.SetupSignalHandler(), rc, o)
}

// ParseFlags turns KAI's scheduler flags and the stand-in's into Options.
func ParseFlags(args []string) (Options, *boot.Common, error) {
	fs := flag.NewFlagSet("scheduler", flag.ContinueOnError)
	common := &boot.Common{}
	common.Bind(fs)
	var o Options
	var queueLabelKey, schedulerConf string
	fs.StringVar(&o.SchedulerName, "scheduler-name", "kai-scheduler", "pods with this schedulerName are scheduled")
	fs.StringVar(&o.Namespace, "namespace", "kai-scheduler", "the scheduler's own namespace (logged only)")
	fs.StringVar(&o.NodePoolLabelKey, "nodepool-label-key", "kai.scheduler/node-pool", "node label that assigns a node to a shard")
	fs.StringVar(&o.PartitionLabelValue, "partition-label-value", "", "this shard's node-pool value; empty: nodes without the label")
	fs.StringVar(&o.ReservationAppLabel, "resource-reservation-app-label", "kai-resource-reservation", "app label of GPU reservation pods")
	fs.StringVar(&queueLabelKey, "queue-label-key", "kai.scheduler/queue", "accepted; the queue comes from the PodGroup")
	fs.StringVar(&o.ListenAddress, "listen-address", ":8080", "address of /metrics")
	fs.StringVar(&schedulerConf, "scheduler-conf", "", "accepted and ignored: actions and plugins are fixed in the stand-in")
	fs.DurationVar(&o.Period, "schedule-period", time.Second, "cycle period")
	if err := fs.Parse(args); err != nil {
		return o, nil, err
	}
	o.GangBroken = common.Faults.Has(faults.GangBroken)
	o.BurstOverpack = common.Faults.Has(faults.BurstOverpack)
	return o, common, nil
}

// Run starts the scheduler and blocks until ctx ends.
func Run(ctx context.Context, rc *rest.Config, o Options) error {
	setup := ctrl.Log.WithName("setup")
	scheme := boot.Scheme()
	mgr, err := ctrl.NewManager(rc, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: o.ListenAddress},
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
		Cfg: o.Config, Reader: mgr.GetCache(), Writer: mgr.GetClient(), Recorder: rec,
		Log: ctrl.Log.WithName("scheduler"), Metrics: NewMetrics(ctrlmetrics.Registry),
	}
	// Informers up front, so the first cycle does not wait on lazy starts.
	for _, obj := range []client.Object{&corev1.Pod{}, &corev1.Node{}, &api.BindRequest{}, &api.PodGroup{}, &api.Queue{}} {
		if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
			return fmt.Errorf("failed to start informer for %T: %w", obj, err)
		}
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return fmt.Errorf("cache did not sync")
		}
		setup.Info("Scheduler cycle starting", "period", o.Period, "nodePool", o.NodePool(), "namespace", o.Namespace)
		return s.Run(ctx, o.Period)
	})); err != nil {
		return err
	}
	setup.Info("starting manager", "listenAddress", o.ListenAddress)
	return mgr.Start(ctx)
}
