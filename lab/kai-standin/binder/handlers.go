package binder

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"kaiops.dev/lab/kai-standin/api"
	"kaiops.dev/lab/kai-standin/gpushare"
)

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func enqueue(q queue, o client.Object) {
	q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
}

// BindRequestHandler is the second watch on BindRequests: a deleted Fraction request
// frees its groups at once, in the informer's goroutine, as in KAI.
func BindRequestHandler(r *Reservation) handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q queue) { enqueue(q, e.Object) },
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q queue) { enqueue(q, e.ObjectNew) },
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, _ queue) {
			br, ok := e.Object.(*api.BindRequest)
			if !ok || br.Spec.ReceivedResourceType != api.ResourceTypeFraction {
				return
			}
			for _, g := range br.Spec.SelectedGPUGroups {
				if err := r.SyncGroup(ctx, g); err != nil {
					log.FromContext(ctx).Error(err, "Failed to sync reservation for GPU Group", "gpuGroup", g)
				}
			}
		},
	}
}

// PodHandler frees a pod's groups when it goes away or finishes. The pod controller's
// Reconcile itself does nothing.
func PodHandler(r *Reservation, schedulerName string) handler.EventHandler {
	sync := func(ctx context.Context, pod *corev1.Pod) {
		for _, g := range gpushare.GPUGroups(pod) {
			if err := r.SyncGroup(ctx, g); err != nil {
				log.FromContext(ctx).Error(err, "failed to sync reservation on pod", "namespace", pod.Namespace, "name", pod.Name)
			}
		}
	}
	done := func(p corev1.PodPhase) bool { return p == corev1.PodSucceeded || p == corev1.PodFailed }
	return handler.Funcs{
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, _ queue) {
			oldPod, ok1 := e.ObjectOld.(*corev1.Pod)
			newPod, ok2 := e.ObjectNew.(*corev1.Pod)
			if ok1 && ok2 && newPod.Spec.SchedulerName == schedulerName &&
				oldPod.Status.Phase != newPod.Status.Phase && done(newPod.Status.Phase) {
				sync(ctx, newPod)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, _ queue) {
			if pod, ok := e.Object.(*corev1.Pod); ok && pod.Spec.SchedulerName == schedulerName {
				sync(ctx, pod)
			}
		},
	}
}

type noopReconciler struct{}

func (noopReconciler) Reconcile(context.Context, reconcile.Request) (reconcile.Result, error) {
	return reconcile.Result{}, nil
}
