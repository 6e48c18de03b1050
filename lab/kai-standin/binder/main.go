package binder

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"kaiops.dev/lab/kai-standin/api"
	"kaiops.dev/lab/kai-standin/faults"
	"kaiops.dev/lab/kai-standin/internal/boot"
)

// PluginConfig is one entry of --plugins, KAI's JSON map keyed by plugin name.
type PluginConfig struct {
	Enabled   *bool             `json:"enabled,omitempty"`
	Priority  *int              `json:"priority,omitempty"`
	Arguments map[string]string `json:"arguments,omitempty"`
}

var defaultPlugins = map[string]struct {
	priority int
	enabled  bool
}{
	"volumebinding":    {300, true},
	"dynamicresources": {200, true},
	"gpusharing":       {100, true},
	"hamicore":         {50, false},
}

type resolvedPlugin struct {
	name     string
	priority int
	args     map[string]string
}

// resolvePlugins applies --plugins over KAI's defaults and orders by descending
// priority, ties by name.
func resolvePlugins(raw string) ([]resolvedPlugin, error) {
	over := map[string]PluginConfig{}
	if raw != "" {
		if err := json.Unmarshal([]byte(raw), &over); err != nil {
			return nil, fmt.Errorf("failed to parse --plugins: %w", err)
		}
	}
	var out []resolvedPlugin
	for name, d := range defaultPlugins {
		enabled, prio, args := d.enabled, d.priority, map[string]string(nil)
		if o, ok := over[name]; ok {
			if o.Enabled != nil {
				enabled = *o.Enabled
			}
			if o.Priority != nil {
				prio = *o.Priority
			}
			args = o.Arguments
		}
		if enabled {
			out = append(out, resolvedPlugin{name, prio, args})
		}
	}
	for name := range over {
		if _, ok := defaultPlugins[name]; !ok {
			return nil, fmt.Errorf("unknown binder plugin %q", name)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].priority != out[j].priority {
			return out[i].priority > out[j].priority
		}
		return out[i].name < out[j].name
	})
	return out, nil
}

// startOnceCache lets the binder start the cache itself, sync reservations over it, and
// only then start the manager (which starts its cache again): KAI's startup order.
type startOnceCache struct {
	cache.Cache
	once sync.Once
}

func (c *startOnceCache) Start(ctx context.Context) error {
	first := false
	c.once.Do(func() { first = true })
	if first {
		return c.Cache.Start(ctx)
	}
	<-ctx.Done()
	return nil
}

func jsonFlag(fs *flag.FlagSet, name, usage string, into any) {
	fs.Func(name, usage, func(v string) error { return json.Unmarshal([]byte(v), into) })
}

// Options is everything the binder runs with; Main fills it from KAI's flags.
type Options struct {
	Reservation   *Reservation
	Plugins       []resolvedPlugin
	Write         ConfigMapWrite
	SchedulerName string
	ProbeAddr     string
	MetricsAddr   string
	MaxReconciles int
	BaseDelay     time.Duration
	MaxDelay      time.Duration
	// SkipNameValidation lets tests run several components in one process; their
	// controllers keep KAI's names.
	SkipNameValidation bool
	// Unauthorized is the api-unauthorized fault: every API call answers 401.
	Unauthorized bool
}

// Main runs `kai-standin binder`.
func Main(args []string) error {
	o, common, err := ParseFlags(args)
	if err != nil {
		return err
	}
	common.Start("binder")
	cfg, err := common.RestConfig()
	if err != nil {
		return err
	}
	return Run(ctrl.SetupSignalHandler(), cfg, o)
}

// ParseFlags turns KAI's binder flags and the stand-in's into Options.
func ParseFlags(args []string) (Options, *boot.Common, error) {
	fs := flag.NewFlagSet("binder", flag.ContinueOnError)
	common := &boot.Common{}
	common.Bind(fs)
	res := &Reservation{}
	o := Options{Reservation: res}
	var plugins, cmWrite string
	var allocTimeout, baseDelay, maxDelay, volumeBindingTimeout int
	fs.StringVar(&o.SchedulerName, "scheduler-name", "kai-scheduler", "pods of this scheduler get reservation syncs")
	fs.StringVar(&res.Namespace, "resource-reservation-namespace", "kai-resource-reservation", "namespace of GPU reservation pods")
	fs.StringVar(&res.ServiceAccount, "resource-reservation-service-account", "kai-resource-reservation", "service account of reservation pods")
	fs.StringVar(&res.AppLabel, "resource-reservation-app-label", "kai-resource-reservation", "app label of reservation pods")
	fs.StringVar(&res.Image, "resource-reservation-pod-image", "registry/local/kai-scheduler/resource-reservation", "reservation pod image")
	fs.StringVar(&res.ScaleAdjustNamespace, "scale-adjust-namespace", "kai-scale-adjust", "namespace of the node-scale-adjuster's scaling pods")
	fs.StringVar(&res.RuntimeClassName, "runtime-class-name", "", "runtimeClassName of reservation pods")
	jsonFlag(fs, "resource-reservation-pod-resources", "JSON ResourceRequirements of reservation pods (any GPU key dropped)", &res.Resources)
	jsonFlag(fs, "resource-reservation-pod-security-context", "JSON PodSecurityContext of reservation pods", &res.PodSecurityContext)
	jsonFlag(fs, "resource-reservation-container-security-context", "JSON SecurityContext of the reservation container", &res.ContainerSecurityContext)
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "probe address (no checks are registered, as in KAI)")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", "metrics address")
	fs.IntVar(&o.MaxReconciles, "max-concurrent-reconciles", 10, "parallel BindRequest reconciles")
	fs.IntVar(&allocTimeout, "resource-reservation-allocation-timeout", 40, "seconds to wait for a reservation pod's GPU id")
	fs.IntVar(&baseDelay, "rate-limiter-base-delay", 1, "first retry delay in seconds")
	fs.IntVar(&maxDelay, "rate-limiter-max-delay", 60, "largest retry delay in seconds")
	fs.IntVar(&volumeBindingTimeout, "volume-binding-timeout-seconds", 120, "accepted; volumes are not modelled")
	fs.StringVar(&plugins, "plugins", "", "JSON map of binder plugins {name: {enabled, priority, arguments}}")
	fs.BoolVar(&res.FakeGPUNodes, "fake-gpu-nodes", false, "reservation pods run `ubuntu sleep infinity`")
	fs.StringVar(&cmWrite, "standin-configmap-write", "", "GPU-sharing ConfigMap write: empty-map, race-fix-unguarded or race-fix-guarded (meta/kai_releases.yml)")
	if err := fs.Parse(args); err != nil {
		return o, nil, err
	}
	var err error
	if o.Write, err = ParseConfigMapWrite(cmWrite); err != nil {
		return o, nil, fmt.Errorf("--standin-configmap-write: %w", err)
	}
	if o.Plugins, err = resolvePlugins(plugins); err != nil {
		return o, nil, err
	}
	res.Timeout = boot.Seconds(allocTimeout)
	o.BaseDelay, o.MaxDelay = boot.Seconds(baseDelay), boot.Seconds(maxDelay)
	o.Unauthorized = common.Faults.Has(faults.APIUnauthorized)
	res.Duplicate = common.Faults.Has(faults.DuplicateReservation)
	res.AdmissionFailure = common.Faults.Has(faults.AdmissionFailure)
	return o, common, nil
}

// Run starts the binder and blocks until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	setup := ctrl.Log.WithName("setup")
	res := o.Reservation
	scheme := boot.Scheme()
	if o.Unauthorized {
		setup.Info("Stand-in fault api-unauthorized: every API call of this binder is answered 401 Unauthorized")
		cfg = UnauthorizedConfig(cfg)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress: o.ProbeAddr,
		Controller:             config.Controller{SkipNameValidation: &o.SkipNameValidation},
		NewCache: func(c *rest.Config, co cache.Options) (cache.Cache, error) {
			inner, err := cache.New(c, co)
			return &startOnceCache{Cache: inner}, err
		},
	})
	if err != nil {
		return fmt.Errorf("failed to create manager: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, FieldNodeName, func(o client.Object) []string {
		return []string{o.(*corev1.Pod).Spec.NodeName}
	}); err != nil {
		return err
	}
	watcher, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("failed to build watch client: %w", err)
	}
	rec, stop, err := boot.NewRecorder(cfg, scheme, "binder")
	if err != nil {
		return err
	}
	defer stop()
	if res.AdmissionFailure {
		// the admission-failure fault writes what the node's kubelet would
		kb, err := boot.NewBroadcaster(cfg)
		if err != nil {
			return err
		}
		defer kb.Shutdown()
		res.KubeletEvents = func(node string) record.EventRecorder {
			return kb.NewRecorder(scheme, corev1.EventSource{Component: "kubelet", Host: node})
		}
	}

	res.Reader, res.Writer, res.Watcher = mgr.GetCache(), mgr.GetClient(), watcher
	b := &Binder{Writer: mgr.GetClient(), Reservation: res}
	flags := map[string]any{"configMapWrite": string(o.Write), "fakeGPUNodes": res.FakeGPUNodes}
	for _, p := range o.Plugins {
		flags[p.name] = map[string]any{"priority": p.priority, "arguments": p.args}
		switch p.name {
		case "gpusharing":
			cdi, _ := strconv.ParseBool(p.args["cdiEnabled"])
			b.Plugins = append(b.Plugins, &GPUSharing{Reader: mgr.GetCache(), Writer: mgr.GetClient(), Write: o.Write, CDIEnabled: cdi})
		case "hamicore":
			return fmt.Errorf("binder plugin hamicore is not reproduced by the stand-in (CONTRACT.md)")
		default:
			b.Plugins = append(b.Plugins, noopPlugin(p.name))
		}
	}
	ctrl.Log.WithName("binder-plugins").Info("Feature flags", "plugins", flags)

	r := &Reconciler{Reader: mgr.GetCache(), Writer: mgr.GetClient(), Recorder: rec, Binder: b}
	err = ctrl.NewControllerManagedBy(mgr).Named("bindrequest").
		For(&api.BindRequest{}).
		Watches(&api.BindRequest{}, BindRequestHandler(res)).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: o.MaxReconciles,
			RateLimiter:             workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](o.BaseDelay, o.MaxDelay),
		}).
		Complete(r)
	if err != nil {
		return err
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("pod").
		Watches(&corev1.Pod{}, PodHandler(res, o.SchedulerName)).
		Complete(noopReconciler{}); err != nil {
		return err
	}

	go func() {
		if err := mgr.GetCache().Start(ctx); err != nil {
			setup.Error(err, "cache stopped")
		}
	}()
	for _, obj := range []client.Object{&corev1.Pod{}, &corev1.Node{}, &corev1.ConfigMap{}, &api.BindRequest{}} {
		if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
			return fmt.Errorf("failed to start informer for %T: %w", obj, err)
		}
	}
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return fmt.Errorf("cache did not sync")
	}
	setup.Info("syncing resource reservation")
	if err := res.SyncAll(ctx); err != nil {
		// KAI panics the process here; the Deployment restarts it.
		setup.Error(err, "unable to sync resource reservation")
		panic(err)
	}
	setup.Info("starting manager")
	return mgr.Start(ctx)
}

// DefaultPlugins is KAI's plugin set with no --plugins override.
func DefaultPlugins() []resolvedPlugin {
	p, _ := resolvePlugins("")
	return p
}
