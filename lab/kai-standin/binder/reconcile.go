// Package binder is the stand-in for KAI's binder: it turns a BindRequest into a bound
// pod, reserving shared GPUs and writing the GPU-sharing ConfigMaps on the way.
package binder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"kaiops.dev/lab/kai-standin/api"
)

const (
	condPodBound      = corev1.PodConditionType("PodBound")
	reasonBound       = "Bound"
	reasonBindingErr  = "BindingError"
	internalErrPrefix = "Internal Error: "
)

// Reconciler reconciles one BindRequest. Reader is the manager cache.
type Reconciler struct {
	Reader   client.Reader
	Writer   client.Client
	Recorder record.EventRecorder
	Binder   *Binder
	Now      func() time.Time
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, err error) {
	l := log.FromContext(ctx)
	l.Info("Reconciling BindRequest", "name", req.NamespacedName)
	br := &api.BindRequest{}
	if err := r.Reader.Get(ctx, req.NamespacedName, br); err != nil {
		if apierrors.IsNotFound(err) {
			l.Info("BindRequest not found, probably deleted")
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if br.DeletionTimestamp != nil || br.Status.Phase == api.PhaseSucceeded {
		return ctrl.Result{}, nil
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: br.Namespace, Name: br.Spec.PodName}}
	defer func() {
		// The panic is recovered here, inside the reconcile, so controller-runtime's own
		// recovery (and its panics metric) never sees it, and rollback never runs.
		var withStack error
		if v := recover(); v != nil {
			err = fmt.Errorf("%s%v", internalErrPrefix, v)
			withStack = fmt.Errorf("%s%v\n%s", internalErrPrefix, v, debug.Stack())
		}
		result, err = r.updateStatus(ctx, br, err)
		r.report(ctx, pod, br, result, err)
		if withStack != nil {
			err = withStack
		}
	}()
	return ctrl.Result{}, r.bind(ctx, br, pod)
}

func (r *Reconciler) bind(ctx context.Context, br *api.BindRequest, pod *corev1.Pod) error {
	l := log.FromContext(ctx)
	if err := r.Reader.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
		return err
	}
	if pod.Spec.NodeName != "" {
		l.Info("Pod is already bound to node", "pod", pod.Name, "namespace", pod.Namespace, "node", pod.Spec.NodeName)
		return nil
	}
	node := &corev1.Node{}
	if err := r.Reader.Get(ctx, client.ObjectKey{Name: br.Spec.SelectedNode}, node); err != nil {
		return err
	}
	l.Info("Binding pod to node", "pod", pod.Name, "namespace", pod.Namespace, "node", node.Name)
	err := r.Binder.Bind(ctx, pod, node, br)
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrInvalidBindRequest) {
		l.Info("This binding request seems to be created by failed conversion from the previous version. Delete it and a new, valid one will be created.")
		return r.Writer.Delete(ctx, br)
	}
	l.Error(err, "Failed to bind pod to node", "pod", pod.Name, "namespace", pod.Namespace, "node", node.Name)
	if rbErr := r.Binder.Rollback(ctx, pod, node, br); rbErr != nil {
		l.Error(rbErr, "Failed to rollback after bind failure")
	}
	return err
}

// updateStatus writes status only when the phase changes. A failure on an object that is
// already Failed writes nothing and its error is dropped: KAI's rule, and the reason a
// repeated failure reads as a success afterwards.
func (r *Reconciler) updateStatus(ctx context.Context, br *api.BindRequest, bindErr error) (ctrl.Result, error) {
	var result ctrl.Result
	updated := br.DeepCopy()
	if bindErr != nil {
		if b := br.Spec.BackoffLimit; b != nil && *b > br.Status.FailedAttempts {
			result.RequeueAfter = time.Duration(1<<br.Status.FailedAttempts) * time.Second
			updated.Status.FailedAttempts++
		}
		updated.Status.Phase = api.PhaseFailed
		updated.Status.Reason = bindErr.Error()
	} else {
		updated.Status.Phase = api.PhaseSucceeded
	}
	if updated.Status.Phase == br.Status.Phase {
		return result, nil
	}
	if err := r.Writer.Status().Patch(ctx, updated, client.MergeFrom(br)); err != nil {
		log.FromContext(ctx).Error(err, "Failed to patch status for BindRequest", "Namespace", br.Namespace, "Name", br.Name)
	}
	return result, bindErr
}

// report emits the event and sets PodBound from the error left after updateStatus.
func (r *Reconciler) report(ctx context.Context, pod *corev1.Pod, br *api.BindRequest, result ctrl.Result, err error) {
	node := br.Spec.SelectedNode
	cond := corev1.PodCondition{Type: condPodBound}
	evType := corev1.EventTypeNormal
	if err == nil || result.RequeueAfter > 0 {
		cond.Status, cond.Reason = corev1.ConditionTrue, reasonBound
		cond.Message = fmt.Sprintf("Pod bound successfully to node %s", node)
	} else {
		evType = corev1.EventTypeWarning
		cond.Status, cond.Reason = corev1.ConditionFalse, reasonBindingErr
		cond.Message = fmt.Sprintf("Failed to bind pod %s/%s to node %s: %s", pod.Namespace, pod.Name, node, err.Error())
	}
	// KAI passes the message as the format string, so a `%` in an error text comes out
	// mangled; the stand-in keeps that.
	r.Recorder.Eventf(pod, evType, cond.Reason, cond.Message)
	r.setPodBound(ctx, pod, cond)
}

func (r *Reconciler) setPodBound(ctx context.Context, pod *corev1.Pod, cond corev1.PodCondition) {
	cond.LastTransitionTime = metav1.NewTime(r.now())
	for _, c := range pod.Status.Conditions {
		if c.Type != condPodBound {
			continue
		}
		if c.Status == cond.Status && c.Reason == cond.Reason && c.Message == cond.Message {
			return
		}
		if c.Status == cond.Status {
			cond.LastTransitionTime = c.LastTransitionTime
		}
	}
	body, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{cond}}})
	if err := r.Writer.Status().Patch(ctx, pod.DeepCopy(), client.RawPatch(types.StrategicMergePatchType, body)); err != nil {
		log.FromContext(ctx).Error(err, "Failed to patch pod status", "namespace", pod.Namespace, "name", pod.Name)
	}
}
