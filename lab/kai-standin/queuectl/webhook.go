package queuectl

import (
	"context"
	"errors"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"kaiops.dev/lab/kai-standin/api"
	"kaiops.dev/lab/kai-standin/internal/validating"
)

// WebhookPath is where KAI's queue-controller serves the Queue v2 validation.
const WebhookPath = "/validate-scheduling-run-ai-v2-queue"

const missingResources = "resources must be specified"

// Validate is KAI's Queue v2 validation as its operator deploys it (CREATE and UPDATE
// alike): a queue without spec.resources is refused, and the same words come back as a
// warning. KAI's optional quota checks (--enable-quota-validation, which its operator never
// passes) are not reproduced: the flag is refused.
func Validate(q *api.Queue) (admission.Warnings, error) {
	if q.Spec.Resources == nil {
		return admission.Warnings{missingResources}, errors.New(missingResources)
	}
	return nil, nil
}

// Webhook is the Queue validation as an admission handler.
func Webhook() admission.Handler {
	return validating.Handler(validating.Rules[api.Queue]{
		Create: func(_ context.Context, q *api.Queue) (admission.Warnings, error) { return Validate(q) },
		Update: func(_ context.Context, _, q *api.Queue) (admission.Warnings, error) { return Validate(q) },
	})
}
