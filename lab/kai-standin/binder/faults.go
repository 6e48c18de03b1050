package binder

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"kaiops.dev/lab/kai-standin/api"
)

// The binder's stand-in faults (package faults; CONTRACT.md, "Faults"). Each plays what
// an operator saw of a KAI issue; none is on unless --standin-faults names it.

// unauthorizedBody is the Status the API server answers a request whose bearer token it
// does not accept.
const unauthorizedBody = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",` +
	`"message":"Unauthorized","reason":"Unauthorized","code":401}`

// unauthorized answers every request 401 Unauthorized, as the API server does for a
// token it no longer accepts, without sending it anywhere; discovery alone (GET /api,
// /apis and their group versions) reaches the API server. KAI #1536's binder lost its
// token while it ran, when it had long read discovery, which it keeps: a binder that
// cannot even read discovery exits at start (controller-runtime's mapping fails), which
// is not what an operator saw.
type unauthorized struct{ next http.RoundTripper }

// discoveryPath: /api, /apis, /api/v1, /apis/<group>, /apis/<group>/<version>.
var discoveryPath = regexp.MustCompile(`^/(api(/v1)?|apis(/[^/]+(/[^/]+)?)?)/?$`)

func (u unauthorized) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet && discoveryPath.MatchString(req.URL.Path) && u.next != nil {
		return u.next.RoundTrip(req)
	}
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		_ = req.Body.Close()
	}
	return &http.Response{
		Status: "401 Unauthorized", StatusCode: http.StatusUnauthorized,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": []string{"application/json"}, "Cache-Control": []string{"no-cache, private"}},
		Body:          io.NopCloser(strings.NewReader(unauthorizedBody)),
		ContentLength: int64(len(unauthorizedBody)),
		Request:       req,
	}, nil
}

// UnauthorizedConfig is the api-unauthorized fault (KAI #1536; the consequence #1751
// met, #1817): every call of a client built from it but discovery gets 401 Unauthorized, so
// client-go's reflectors log "Failed to watch ... Unauthorized" and retry with backoff
// while the process stays up. cfg itself is left as it is.
func UnauthorizedConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Wrap(func(next http.RoundTripper) http.RoundTripper { return unauthorized{next: next} })
	return c
}

// legacyReservationPodName is the name KAI's binder gave reservation pods before v0.16.0
// (#1693): node and 5 random characters, so two binds of one group that miss each
// other's pod in the cache make two pods (duplicate-reservation, KAI #1673).
func legacyReservationPodName(node, random string) string {
	return fmt.Sprintf("%s-%s-%s", reservationPrefix, node, random)
}

func random5() string { return utilrand.String(5) }

// What the kubelet writes on a pod it does not admit because the device plugin has no
// GPU left (kubelet rejectPod; cm/admission's unexpected admission error): the
// admission-failure fault (KAI #848).
const (
	ReasonUnexpectedAdmission = "UnexpectedAdmissionError"
	admissionMessage          = "Allocate failed due to requested number of devices unavailable for " +
		api.ResourceGPU + ". Requested: 1, Available: 0, which is unexpected"
)

// rejectAsKubelet makes a reservation pod read as a kubelet rejection: phase Failed,
// reason UnexpectedAdmissionError, "Pod was rejected: <message>", no container ever
// ready, no GPU id (a rejected pod never runs the reservation image that writes it), and
// once the kubelet's Warning event. It says again what a node agent overwrote (KWOK
// marks a pod Running once; a real kubelet drops the reason when its own phase changes),
// and returns whether it wrote anything.
func (r *Reservation) rejectAsKubelet(ctx context.Context, p *corev1.Pod, first bool) (bool, error) {
	l := log.FromContext(ctx).WithValues("namespace", p.Namespace, "name", p.Name, "node", p.Spec.NodeName)
	wrote := false
	if p.Status.Phase != corev1.PodFailed || p.Status.Reason != ReasonUnexpectedAdmission || len(p.Status.ContainerStatuses) > 0 {
		body, _ := json.Marshal(map[string]any{"status": map[string]any{
			"phase": corev1.PodFailed, "reason": ReasonUnexpectedAdmission, "message": "Pod was rejected: " + admissionMessage,
			"containerStatuses": nil, "conditions": nil,
		}})
		if err := r.Writer.Status().Patch(ctx, p.DeepCopy(), client.RawPatch(types.MergePatchType, body)); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		l.Info("Stand-in fault admission-failure: reservation pod marked Failed as the kubelet does when it cannot admit it",
			"reason", ReasonUnexpectedAdmission)
		wrote = true
	}
	if p.Annotations[api.AnnReserveForGPUIndex] != "" {
		body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{api.AnnReserveForGPUIndex: nil}}})
		if err := r.Writer.Patch(ctx, p.DeepCopy(), client.RawPatch(types.MergePatchType, body)); err != nil {
			return wrote, client.IgnoreNotFound(err)
		}
		wrote = true
	}
	if first && r.KubeletEvents != nil {
		r.KubeletEvents(p.Spec.NodeName).Event(p, corev1.EventTypeWarning, ReasonUnexpectedAdmission, admissionMessage)
	}
	return wrote, nil
}
