package operator

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types and reasons on Config kai-config (kai-contract.md §1.2, §14).
const (
	Reconciling           = "Reconciling"
	Deployed              = "Deployed"
	Available             = "Available"
	DependenciesFulfilled = "DependenciesFulfilled"
	Ready                 = "Ready"

	ReasonReconciled = "reconciled"
	ReasonDeployed   = "deployed"
	ReasonAvailable  = "available"
	ReasonReady      = "ready"
	// Seen on the real KAI's operator (v0.16.13 and v0.16.14 built from source, on the lab).
	ReasonDependenciesFulfilled = "dependencies_fulfilled"
)

// RolledOut is Kubernetes' rollout rule (kubectl rollout status): the controller saw
// this generation and every replica is updated and available, no old one left.
func RolledOut(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := d.Status
	return st.ObservedGeneration >= d.Generation && st.UpdatedReplicas == want &&
		st.AvailableReplicas == want && st.Replicas == want
}

// Observation is what one reconcile found: whether every owned object was applied, and
// the owned Deployments by name (absent: not found).
type Observation struct {
	Generation  int64
	ApplyErr    error
	Wanted      []string
	Deployments map[string]*appsv1.Deployment
}

// Conditions is the Config's status for one reconcile, every condition stamped with the
// generation that reconcile read. Available and Ready are true only when every owned
// Deployment has rolled out. The stand-in has no dependencies to wait for, so
// DependenciesFulfilled is true whenever the spec could be applied.
func Conditions(o Observation) []metav1.Condition {
	cond := func(t string, ok bool, reason, msg string) metav1.Condition {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: o.Generation}
	}
	var pending []string
	for _, name := range o.Wanted {
		d := o.Deployments[name]
		switch {
		case d == nil:
			pending = append(pending, name+" (not found)")
		case !RolledOut(d):
			pending = append(pending, fmt.Sprintf("%s (%d/%d updated, %d available)",
				name, d.Status.UpdatedReplicas, replicas(d), d.Status.AvailableReplicas))
		}
	}
	deployed := o.ApplyErr == nil
	available := deployed && len(pending) == 0
	// The healthy messages are the real operator's words; the unhealthy ones are ours.
	applied := "Resources deployed"
	if !deployed {
		applied = "failed to apply: " + o.ApplyErr.Error()
	}
	avail := "System available"
	if len(pending) > 0 {
		avail = "waiting for " + strings.Join(pending, ", ")
	} else if !deployed {
		avail = "not available: " + applied
	}
	ready := "System is ready"
	if !available {
		ready = "not ready: " + avail
		if !deployed {
			ready = "not ready: " + applied
		}
	}
	return []metav1.Condition{
		// Reconciling stays true while the last reconcile could not apply everything.
		cond(Reconciling, !deployed, ReasonReconciled, map[bool]string{true: "Reconciliation completed successfully", false: applied}[deployed]),
		cond(Deployed, deployed, ReasonDeployed, applied),
		cond(Available, available, ReasonAvailable, avail),
		cond(DependenciesFulfilled, deployed, ReasonDependenciesFulfilled, "Dependencies are fulfilled"),
		cond(Ready, available, ReasonReady, ready),
	}
}

func replicas(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas != nil {
		return *d.Spec.Replicas
	}
	return 1
}

// Merge sets the new conditions into the current ones the way metav1 does it (the
// transition time moves only when a status changes) and says whether anything changed.
func Merge(current []metav1.Condition, next []metav1.Condition) ([]metav1.Condition, bool) {
	out := make([]metav1.Condition, len(current))
	copy(out, current)
	changed := false
	for _, c := range next {
		if meta.SetStatusCondition(&out, c) {
			changed = true
		}
	}
	return out, changed
}
