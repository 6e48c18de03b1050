package binder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"kaiops.dev/lab/kai-standin/api"
)

// ErrInvalidBindRequest marks a Fraction BindRequest without GPU groups: one left by a
// failed conversion, which the reconcile deletes instead of failing.
var ErrInvalidBindRequest = errors.New("invalid binding request")

// Plugin is a binder plugin; only gpusharing does real work in the stand-in.
type Plugin interface {
	Name() string
	PreBind(ctx context.Context, pod *corev1.Pod, br *api.BindRequest, devices []string) error
	Rollback(ctx context.Context, pod *corev1.Pod, br *api.BindRequest) error
}

// noopPlugin keeps KAI's plugin names and order visible where the stand-in has nothing
// to do (volumes and DRA claims are not modelled).
type noopPlugin string

func (n noopPlugin) Name() string { return string(n) }
func (noopPlugin) PreBind(context.Context, *corev1.Pod, *api.BindRequest, []string) error {
	return nil
}
func (noopPlugin) Rollback(context.Context, *corev1.Pod, *api.BindRequest) error { return nil }

type Binder struct {
	Writer      client.Client
	Reservation *Reservation
	Plugins     []Plugin
}

func fraction(br *api.BindRequest) bool {
	return br.Spec.ReceivedResourceType == api.ResourceTypeFraction
}

func (b *Binder) Bind(ctx context.Context, pod *corev1.Pod, node *corev1.Node, br *api.BindRequest) error {
	l := log.FromContext(ctx)
	if err := b.Reservation.SyncNode(ctx, node.Name); err != nil {
		return fmt.Errorf("failed to sync reservation for pod %s/%s on node %s: %w", pod.Namespace, pod.Name, node.Name, err)
	}
	var devices []string
	if fraction(br) {
		if len(br.Spec.SelectedGPUGroups) == 0 {
			return fmt.Errorf("no SelectedGPUGroups for fractional pod: %w", ErrInvalidBindRequest)
		}
		for _, g := range br.Spec.SelectedGPUGroups {
			id, err := b.Reservation.Reserve(ctx, pod, node.Name, g)
			if err != nil {
				return fmt.Errorf("failed to reserve GPUs for pod <%s/%s> in gpu group <%s>: %w", pod.Namespace, pod.Name, g, err)
			}
			devices = append(devices, id)
		}
	}
	for _, p := range b.Plugins {
		if err := p.PreBind(ctx, pod, br, devices); err != nil {
			l.Error(err, "PreBind plugin failed for pod", "plugin", p.Name(), "namespace", pod.Namespace, "name", pod.Name)
			// Formatted, not wrapped: callers see the text only.
			return fmt.Errorf("plugin %s failed in PreBind: %v", p.Name(), err)
		}
	}
	anns := map[string]string{api.AnnReceivedResourceType: br.Spec.ReceivedResourceType}
	if len(br.Spec.PredictedNUMAZones) > 0 {
		z, _ := json.Marshal(br.Spec.PredictedNUMAZones)
		anns[api.AnnNUMAPredicted] = string(z)
	}
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": anns}})
	if err := b.Writer.Patch(ctx, pod.DeepCopy(), client.RawPatch(types.MergePatchType, body)); err != nil {
		return fmt.Errorf("failed to patch pod %s/%s with bind annotations: %w", pod.Namespace, pod.Name, err)
	}
	l.Info("Binding pod", "namespace", pod.Namespace, "name", pod.Name, "hostname", node.Name)
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node.Name},
	}
	if err := b.Writer.SubResource("binding").Create(ctx, pod.DeepCopy(), binding); err != nil {
		return fmt.Errorf("failed to bind pod %s/%s to node %s: %w", pod.Namespace, pod.Name, node.Name, err)
	}
	return nil
}

// Rollback undoes an ordinary failure. Never called after a panic: that is KAI's
// structure, and why a panicking bind leaves its state behind.
func (b *Binder) Rollback(ctx context.Context, pod *corev1.Pod, node *corev1.Node, br *api.BindRequest) error {
	log.FromContext(ctx).Info("Rolling back for failed bind attempt...")
	var errs []error
	for _, p := range b.Plugins {
		if err := p.Rollback(ctx, pod, br); err != nil {
			errs = append(errs, fmt.Errorf("plugin %s failed in Rollback: %w", p.Name(), err))
		}
	}
	if fraction(br) {
		if err := b.removeGroupLabels(ctx, pod); err != nil {
			errs = append(errs, err)
		}
		if err := b.Reservation.SyncNode(ctx, node.Name); err != nil {
			errs = append(errs, err)
		}
	}
	return joinErrs(errs)
}

// removeGroupLabels drops the labels the in-memory pod carries, including the one this
// attempt added. With none there is nothing to send (CONTRACT.md: KAI's body would be
// JSON null).
func (b *Binder) removeGroupLabels(ctx context.Context, pod *corev1.Pod) error {
	type op struct {
		Op   string `json:"op"`
		Path string `json:"path"`
	}
	var ops []op
	for k := range pod.Labels {
		if k == api.LabelGPUGroup || strings.HasPrefix(k, api.LabelGPUGroup+"/") {
			ops = append(ops, op{"remove", "/metadata/labels/" + strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")})
		}
	}
	if len(ops) == 0 {
		return nil
	}
	body, _ := json.Marshal(ops)
	if err := b.Writer.Patch(ctx, pod.DeepCopy(), client.RawPatch(types.JSONPatchType, body)); err != nil {
		return fmt.Errorf("failed to remove GPU group labels from pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

func joinErrs(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return errors.Join(errs...)
}
