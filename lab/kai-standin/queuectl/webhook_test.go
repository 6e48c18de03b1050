package queuectl

import (
	"context"
	"net/http"
	"slices"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	cradmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// TestWebhookRefusals: KAI's Queue v2 validation as its operator deploys it (no quota
// validation): a queue without spec.resources is refused on CREATE and UPDATE, with the
// same words as a warning; the lab's queues (chart defaults, tests, the gpu_access role)
// all carry resources and pass, whatever their quotas.
func TestWebhookRefusals(t *testing.T) {
	const lab = `{"metadata": {"name": "default-queue"}, "spec": {"parentQueue": "default-parent-queue",
		"resources": {"cpu": {"quota": 0, "limit": -1, "overQuotaWeight": 1}, "gpu": {"quota": 0, "limit": -1, "overQuotaWeight": 1},
		"memory": {"quota": 0, "limit": -1, "overQuotaWeight": 1}}}}`
	cases := []struct {
		name, queue string
		refused     bool
	}{
		{"the chart's default queue", lab, false},
		{"a GPU limit of 0", `{"spec": {"resources": {"gpu": {"quota": 0, "limit": 0, "overQuotaWeight": 1}}}}`, false},
		{"a child quota above its parent's: no quota validation", `{"spec": {"parentQueue": "p", "resources": {"gpu": {"quota": 100}}}}`, false},
		{"empty resources are resources", `{"spec": {"resources": {}}}`, false},
		{"no resources", `{"spec": {"parentQueue": "default-parent-queue"}}`, true},
		{"resources null", `{"spec": {"resources": null}}`, true},
		{"no spec", `{"metadata": {"name": "q"}}`, true},
	}
	h := Webhook()
	for _, tc := range cases {
		for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
			t.Run(tc.name+"/"+string(op), func(t *testing.T) {
				req := cradmission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
					Operation: op, Object: runtime.RawExtension{Raw: []byte(tc.queue)}, OldObject: runtime.RawExtension{Raw: []byte(lab)},
				}}
				resp := h.Handle(context.Background(), req)
				if !tc.refused {
					if !resp.Allowed || len(resp.Warnings) != 0 {
						t.Fatalf("response %v %+v %q", resp.Allowed, resp.Result, resp.Warnings)
					}
					return
				}
				if resp.Allowed || resp.Result.Code != http.StatusForbidden || resp.Result.Message != "resources must be specified" ||
					!slices.Equal(resp.Warnings, []string{"resources must be specified"}) {
					t.Fatalf("response %v %+v %q", resp.Allowed, resp.Result, resp.Warnings)
				}
			})
		}
	}
}
