// Package podgrouper is the stand-in for KAI's pod grouper: one PodGroup per pod,
// then the pod's `pod-group-name` annotation.
package podgrouper

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/yaml"

	"kaiops.dev/lab/kai-standin/api"
	"kaiops.dev/lab/kai-standin/internal/boot"
)

// Topology annotations are read as KAI names them (CONTRACT.md marks the names as
// inferred from "kai.scheduler/topology*").
const (
	annTopology          = "kai.scheduler/topology"
	annTopologyRequired  = "kai.scheduler/topology-required-placement"
	annTopologyPreferred = "kai.scheduler/topology-preferred-placement"
)

type Grouper struct {
	Client        client.Client
	Recorder      record.EventRecorder
	SchedulerName string
	QueueLabelKey string
}

// topOwner is the shape KAI writes into kai.scheduler/top-owner-metadata.
type topOwner struct {
	Name    string    `json:"name"`
	UID     types.UID `json:"uid"`
	Group   string    `json:"group"`
	Version string    `json:"version"`
	Kind    string    `json:"kind"`
}

func PodGroupName(pod *corev1.Pod) string {
	return fmt.Sprintf("pg-%s-%s", pod.Name, pod.UID)
}

func (g *Grouper) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pod := &corev1.Pod{}
	if err := g.Client.Get(ctx, req.NamespacedName, pod); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if pod.Spec.SchedulerName != g.SchedulerName {
		return ctrl.Result{}, nil
	}
	if err := g.group(ctx, pod); err != nil {
		g.Recorder.Event(pod, corev1.EventTypeWarning, "PodGrouperWarning", err.Error())
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

func (g *Grouper) group(ctx context.Context, pod *corev1.Pod) error {
	if pod.Annotations[api.AnnSkipPodGrouper] == "true" {
		return nil
	}
	if len(pod.OwnerReferences) == 0 {
		if _, ok := pod.Annotations[api.AnnPodGroupName]; ok {
			return nil
		}
	}
	want, err := g.desired(ctx, pod)
	if err != nil {
		return err
	}
	have := &api.PodGroup{}
	err = g.Client.Get(ctx, client.ObjectKeyFromObject(want), have)
	switch {
	case apierrors.IsNotFound(err):
		if err := g.Client.Create(ctx, want); err != nil {
			return fmt.Errorf("failed to create PodGroup %s/%s: %w", want.Namespace, want.Name, err)
		}
		log.FromContext(ctx).Info("Created PodGroup", "podGroup", want.Name)
	case err != nil:
		return fmt.Errorf("failed to get PodGroup %s/%s: %w", want.Namespace, want.Name, err)
	case differs(have, want):
		if err := g.patchPodGroup(ctx, have, want); err != nil {
			return err
		}
	}
	if pod.Annotations[api.AnnPodGroupName] == want.Name {
		return nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{api.AnnPodGroupName: want.Name}}})
	if err := g.Client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("failed to patch pod %s/%s with pod group annotation: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

func differs(have, want *api.PodGroup) bool {
	return !reflect.DeepEqual(have.Labels, want.Labels) ||
		!reflect.DeepEqual(have.Annotations, want.Annotations) ||
		!reflect.DeepEqual(have.Spec, want.Spec)
}

// patchPodGroup merge-patches labels, annotations and spec so that fields our types do
// not know survive.
func (g *Grouper) patchPodGroup(ctx context.Context, have, want *api.PodGroup) error {
	labels := map[string]any{}
	for k := range have.Labels {
		labels[k] = nil
	}
	for k, v := range want.Labels {
		labels[k] = v
	}
	anns := map[string]any{}
	for k := range have.Annotations {
		anns[k] = nil
	}
	for k, v := range want.Annotations {
		anns[k] = v
	}
	body, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"labels": labels, "annotations": anns},
		"spec":     want.Spec,
	})
	if err != nil {
		return err
	}
	if err := g.Client.Patch(ctx, have, client.RawPatch(types.MergePatchType, body)); err != nil {
		return fmt.Errorf("failed to update PodGroup %s/%s: %w", have.Namespace, have.Name, err)
	}
	return nil
}

func (g *Grouper) desired(ctx context.Context, pod *corev1.Pod) (*api.PodGroup, error) {
	owner := topOwner{Name: pod.Name, UID: pod.UID, Version: "v1", Kind: "Pod"}
	if ref := metav1.GetControllerOf(pod); ref != nil || len(pod.OwnerReferences) > 0 {
		if ref == nil {
			ref = &pod.OwnerReferences[0]
		}
		gv, _ := schema.ParseGroupVersion(ref.APIVersion)
		owner = topOwner{Name: ref.Name, UID: ref.UID, Group: gv.Group, Version: gv.Version, Kind: ref.Kind}
	}
	meta, err := yaml.Marshal(owner)
	if err != nil {
		return nil, err
	}
	anns := maps.Clone(pod.Annotations)
	if anns == nil {
		anns = map[string]string{}
	}
	anns[api.AnnTopOwnerMetadata] = string(meta)

	queue := pod.Labels[g.QueueLabelKey]
	if queue == "" {
		queue = api.DefaultQueue
	}
	prio, err := g.priorityClass(ctx, pod)
	if err != nil {
		return nil, err
	}
	one := int32(1)
	return &api.PodGroup{
		TypeMeta: metav1.TypeMeta{APIVersion: api.PodGroupGV.String(), Kind: "PodGroup"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        PodGroupName(pod),
			Namespace:   pod.Namespace,
			Labels:      maps.Clone(pod.Labels),
			Annotations: anns,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
			}},
		},
		Spec: api.PodGroupSpec{
			MinMember:         &one,
			Queue:             queue,
			PriorityClassName: prio,
			Preemptibility:    pod.Labels[api.LabelPreemptibility],
			TopologyConstraint: api.TopologyConstraint{
				Topology:               pod.Annotations[annTopology],
				RequiredTopologyLevel:  pod.Annotations[annTopologyRequired],
				PreferredTopologyLevel: pod.Annotations[annTopologyPreferred],
			},
		},
	}, nil
}

// priorityClass takes the label first, then the pod's own field, and only a class that
// exists; otherwise KAI's default for a bare pod.
func (g *Grouper) priorityClass(ctx context.Context, pod *corev1.Pod) (string, error) {
	for _, name := range []string{pod.Labels[api.LabelPriorityClass], pod.Spec.PriorityClassName} {
		if name == "" {
			continue
		}
		err := g.Client.Get(ctx, client.ObjectKey{Name: name}, &schedulingv1.PriorityClass{})
		if err == nil {
			return name, nil
		}
		if !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("failed to get PriorityClass %s: %w", name, err)
		}
	}
	return api.DefaultPriorityClass, nil
}

// Options is everything the pod grouper runs with.
type Options struct {
	SchedulerName, QueueLabelKey, MetricsAddr, ProbeAddr string
	SkipNameValidation                                   bool
}

// Main runs `kai-standin pod-grouper`.
func Main(args []string) error {
	fs := flag.NewFlagSet("pod-grouper", flag.ContinueOnError)
	var common boot.Common
	common.Bind(fs)
	var o Options
	fs.StringVar(&o.SchedulerName, "scheduler-name", "kai-scheduler", "only pods with this schedulerName are grouped")
	fs.StringVar(&o.QueueLabelKey, "queue-label-key", "kai.scheduler/queue", "pod label that names the queue")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", "metrics address")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "healthz/readyz address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	common.Start("pod-grouper")
	cfg, err := common.RestConfig()
	if err != nil {
		return err
	}
	return Run(ctrl.SetupSignalHandler(), cfg, o)
}

// Run starts the pod grouper and blocks until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	scheme := boot.Scheme()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress: o.ProbeAddr,
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
	rec, stop, err := boot.NewRecorder(cfg, scheme, "pod-grouper")
	if err != nil {
		return err
	}
	defer stop()
	g := &Grouper{Client: mgr.GetClient(), Recorder: rec, SchedulerName: o.SchedulerName, QueueLabelKey: o.QueueLabelKey}
	ours := predicate.NewPredicateFuncs(func(obj client.Object) bool {
		p, ok := obj.(*corev1.Pod)
		return ok && p.Spec.SchedulerName == g.SchedulerName
	})
	if err := ctrl.NewControllerManagedBy(mgr).Named("pod").
		For(&corev1.Pod{}, builder.WithPredicates(ours)).Complete(g); err != nil {
		return err
	}
	ctrl.Log.WithName("setup").Info("starting manager")
	return mgr.Start(ctx)
}
