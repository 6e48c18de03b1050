// Package boot is what every stand-in component does before its own work: flags it
// shares with the others, the logger, the API client config, the scheme and events.
package boot

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"kaiops.dev/lab/kai-standin/api"
	"kaiops.dev/lab/kai-standin/faults"
)

// Common holds the flags every component accepts.
type Common struct {
	Release    string
	Kubeconfig string
	QPS        float64
	Burst      int
	// Accepted because KAI's operator passes it with several replicas; the stand-in
	// runs one replica and never elects.
	LeaderElect bool
	// Faults are the KAI issues this run plays on purpose (package faults); none unless
	// named, an unknown name fails flag parsing.
	Faults faults.Set
	Zap    zap.Options
}

// Bind registers the shared flags. KAI's binaries log in zap development mode unless
// --zap-devel=false, with ISO-8601 times.
func (c *Common) Bind(fs *flag.FlagSet) {
	fs.StringVar(&c.Release, "standin-release", "unknown", "the KAI release whose behaviour this stand-in plays (reported in logs only)")
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "kubeconfig file; default: in-cluster, then $KUBECONFIG, then ~/.kube/config")
	fs.Float64Var(&c.QPS, "qps", 0, "API client QPS (0: client-go default)")
	fs.IntVar(&c.Burst, "burst", 0, "API client burst (0: client-go default)")
	fs.BoolVar(&c.LeaderElect, "leader-elect", false, "accepted and ignored: the stand-in never elects a leader")
	fs.Var(&c.Faults, "standin-faults", "comma-separated KAI issues to play on purpose, off by default: "+strings.Join(faults.Names(), ", "))
	c.Zap.Development = true
	c.Zap.TimeEncoder = zapcore.ISO8601TimeEncoder
	c.Zap.BindFlags(fs)
}

// Start installs the logger and writes the line that says what is running: a stand-in,
// never KAI itself, and which faults it plays on purpose.
func (c *Common) Start(component string) logr.Logger {
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&c.Zap)))
	log := ctrl.Log.WithName("setup")
	kv := []any{"component", component, "standinRelease", c.Release, "standIn", true}
	if on := c.Faults.List(); len(on) > 0 {
		kv = append(kv, "standinFaults", on)
	}
	log.Info("kaiops stand-in starting, not KAI Scheduler itself", kv...)
	for _, f := range c.Faults.PlayedBy(component) {
		log.Info("stand-in fault on: this component plays a KAI issue on purpose", "fault", f.Name, "issue", f.Issue)
	}
	return log
}

// RestConfig builds the API client config with the QPS/burst flags applied.
func (c *Common) RestConfig() (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if c.Kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	} else {
		cfg, err = ctrl.GetConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("failed to load API client config: %w", err)
	}
	if c.QPS > 0 {
		cfg.QPS = float32(c.QPS)
	}
	if c.Burst > 0 {
		cfg.Burst = c.Burst
	}
	return cfg, nil
}

// Scheme knows the built-in types and the stand-in's KAI CRD types.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := api.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// NewRecorder uses client-go's core/v1 broadcaster, as KAI does through
// controller-runtime: its correlator folds repeats into one Event with a rising count
// and its spam filter stops an object's events at 25 per source, both of which an
// operator sees on the real system.
func NewRecorder(cfg *rest.Config, scheme *runtime.Scheme, component string) (record.EventRecorder, func(), error) {
	b, err := NewBroadcaster(cfg)
	if err != nil {
		return nil, nil, err
	}
	return b.NewRecorder(scheme, corev1.EventSource{Component: component}), b.Shutdown, nil
}

// NewBroadcaster is NewRecorder's broadcaster, for a component that records under more
// than one source.
func NewBroadcaster(cfg *rest.Config) (record.EventBroadcaster, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to build events client: %w", err)
	}
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	elog := ctrl.Log.WithName("events")
	b.StartEventWatcher(func(e *corev1.Event) {
		elog.V(1).Info(e.Message, "type", e.Type, "object",
			corev1.ObjectReference{Kind: e.InvolvedObject.Kind, Namespace: e.InvolvedObject.Namespace, Name: e.InvolvedObject.Name},
			"reason", e.Reason)
	})
	return b, nil
}

// Seconds reads a whole-seconds flag value into a duration.
func Seconds(n int) time.Duration { return time.Duration(n) * time.Second }

// Port accepts KAI's bare port numbers ("9443") as well as ":9443".
func Port(v string) (int, error) {
	if len(v) > 0 && v[0] == ':' {
		v = v[1:]
	}
	p, err := strconv.Atoi(v)
	if err != nil || p <= 0 || p > 65535 {
		return 0, fmt.Errorf("invalid port %q", v)
	}
	return p, nil
}
