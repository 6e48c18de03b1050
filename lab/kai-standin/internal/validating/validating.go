// Package validating serves a validating webhook for one kind the way controller-runtime's
// typed validators answer, which is how KAI's components serve theirs: the object (and on
// UPDATE the old one) read from the request's JSON, a read failure answered 400, a refusal
// as Denied (HTTP 403, the error's text) with the warnings, anything else allowed with them.
// KAI registers these webhooks for CREATE and UPDATE only, so DELETE is allowed unread.
package validating

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Rules validate one kind, T being our reading of it.
type Rules[T any] struct {
	Create func(ctx context.Context, obj *T) (admission.Warnings, error)
	Update func(ctx context.Context, old, obj *T) (admission.Warnings, error)
}

type handler[T any] struct{ rules Rules[T] }

// Handler answers admission requests by the rules.
func Handler[T any](rules Rules[T]) admission.Handler { return handler[T]{rules} }

func decode[T any](raw []byte) (*T, error) {
	if len(raw) == 0 {
		return nil, fmt.Errorf("there is no content to decode")
	}
	obj := new(T)
	if err := json.Unmarshal(raw, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

func (h handler[T]) Handle(ctx context.Context, req admission.Request) admission.Response {
	var warnings admission.Warnings
	var err error
	switch req.Operation {
	case admissionv1.Create:
		obj, derr := decode[T](req.Object.Raw)
		if derr != nil {
			return admission.Errored(http.StatusBadRequest, derr)
		}
		warnings, err = h.rules.Create(ctx, obj)
	case admissionv1.Update:
		obj, derr := decode[T](req.Object.Raw)
		if derr != nil {
			return admission.Errored(http.StatusBadRequest, derr)
		}
		old, derr := decode[T](req.OldObject.Raw)
		if derr != nil {
			return admission.Errored(http.StatusBadRequest, derr)
		}
		warnings, err = h.rules.Update(ctx, old, obj)
	case admissionv1.Delete, admissionv1.Connect:
	default:
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("unknown operation %q", req.Operation))
	}
	if err != nil {
		return admission.Denied(err.Error()).WithWarnings(warnings...)
	}
	return admission.Allowed("").WithWarnings(warnings...)
}

// DefaultCertDir is where controller-runtime's webhook server looks for tls.crt and
// tls.key when told nothing, as KAI's podgroup-controller and queue-controller are: the
// operator mounts their Secrets there.
func DefaultCertDir() string {
	return filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs")
}
