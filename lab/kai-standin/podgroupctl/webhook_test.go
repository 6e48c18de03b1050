package podgroupctl

import (
	"context"
	"net/http"
	"slices"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	cradmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func review(op admissionv1.Operation, obj, old string) cradmission.Request {
	r := cradmission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: op, Object: runtime.RawExtension{Raw: []byte(obj)},
	}}
	if old != "" {
		r.OldObject = runtime.RawExtension{Raw: []byte(old)}
	}
	return r
}

// TestWebhookRefusals: what KAI's PodGroup v2alpha2 validation refuses and warns about,
// on CREATE and on UPDATE (CONTRACT.md, the webhooks section), through the handler.
func TestWebhookRefusals(t *testing.T) {
	const (
		ours  = `{"spec": {"minMember": 1, "queue": "default-queue", "topologyConstraint": {}}}`
		gang  = `{"spec": {"minMember": 2}}`
		empty = `{"spec": {}}`
	)
	cases := []struct {
		name, spec string
		// per operation: "" admitted, else the refusal; and the warnings
		createErr, updateErr   string
		createWarn, updateWarn []string
	}{
		{"the pod grouper's PodGroup", ours, "", "", nil, nil},
		{"a gang", gang, "", "", nil, nil},
		{"no gang fields", empty, "", "", nil, nil},
		{"minMember with minSubGroup", `{"spec": {"minMember": 2, "minSubGroup": 1}}`,
			"minMember and minSubGroup are mutually exclusive: set minMember (2) to schedule a fixed number of pods, or set minSubGroup to require a minimum number of child SubGroups, but not both",
			"minMember and minSubGroup are mutually exclusive: set minMember (2) to schedule a fixed number of pods, or set minSubGroup to require a minimum number of child SubGroups, but not both",
			nil, nil},
		{"duplicate subgroup", `{"spec": {"subGroups": [{"name": "a", "minMember": 1}, {"name": "a", "minMember": 1}]}}`,
			"duplicate subgroup name a", "duplicate subgroup name a", nil, nil},
		{"missing parent", `{"spec": {"subGroups": [{"name": "a", "minMember": 1, "parent": "x"}]}}`,
			"parent x of a was not found", "parent x of a was not found", nil, nil},
		{"cycle", `{"spec": {"subGroups": [{"name": "a", "parent": "b", "minSubGroup": 1}, {"name": "b", "parent": "a", "minSubGroup": 1}]}}`,
			"cycle detected in subgroups", "cycle detected in subgroups", nil, nil},
		{"subgroup with both", `{"spec": {"subGroups": [{"name": "a", "minMember": 1, "minSubGroup": 1}]}}`,
			`subgroup "a": minMember and minSubGroup are mutually exclusive`, `subgroup "a": minMember and minSubGroup are mutually exclusive`, nil, nil},
		{"leaf without minMember, leaf with minSubGroup: both refused, in name order",
			`{"spec": {"subGroups": [{"name": "b", "minSubGroup": 1}, {"name": "a"}]}}`,
			"subgroup a: minMember is required\n" + `subgroup "b": minSubGroup cannot be set on a leaf SubGroup (no child SubGroups)` + "\nsubgroup b: minMember is required",
			"subgroup a: minMember is required\n" + `subgroup "b": minSubGroup cannot be set on a leaf SubGroup (no child SubGroups)` + "\nsubgroup b: minMember is required",
			nil, nil},
		{"minMember on a mid-level subgroup: refused on CREATE, a warning on UPDATE",
			`{"spec": {"subGroups": [{"name": "top", "minMember": 1}, {"name": "leaf", "parent": "top", "minMember": 1}]}}`,
			`subgroup "top": minMember cannot be set on a mid-level SubGroup (has child SubGroups); use minSubGroup instead`, "",
			nil, []string{`subgroup "top": minMember cannot be set on a mid-level SubGroup (has child SubGroups); use minSubGroup instead`}},
		{"minSubGroup above the children: a warning",
			`{"spec": {"minSubGroup": 3, "subGroups": [{"name": "top", "minSubGroup": 2}, {"name": "leaf", "parent": "top", "minMember": 1}]}}`,
			"", "",
			[]string{`subgroup "top": minSubGroup (2) exceeds the number of direct child SubGroups (1)`, "minSubGroup (3) exceeds the number of direct child SubGroups (1)"},
			[]string{`subgroup "top": minSubGroup (2) exceeds the number of direct child SubGroups (1)`, "minSubGroup (3) exceeds the number of direct child SubGroups (1)"}},
		{"a refusal keeps its warnings",
			`{"spec": {"minSubGroup": 5, "subGroups": [{"name": "a"}]}}`,
			"subgroup a: minMember is required", "subgroup a: minMember is required",
			[]string{"minSubGroup (5) exceeds the number of direct child SubGroups (1)"},
			[]string{"minSubGroup (5) exceeds the number of direct child SubGroups (1)"}},
	}
	h := Webhook()
	for _, tc := range cases {
		for _, op := range []struct {
			op   admissionv1.Operation
			err  string
			warn []string
		}{{admissionv1.Create, tc.createErr, tc.createWarn}, {admissionv1.Update, tc.updateErr, tc.updateWarn}} {
			t.Run(tc.name+"/"+string(op.op), func(t *testing.T) {
				resp := h.Handle(context.Background(), review(op.op, tc.spec, ours))
				if op.err == "" {
					if !resp.Allowed {
						t.Fatalf("refused: %+v", resp.Result)
					}
				} else if resp.Allowed || resp.Result.Code != http.StatusForbidden || resp.Result.Message != op.err {
					t.Fatalf("response %v %+v, want 403 %q", resp.Allowed, resp.Result, op.err)
				}
				if !slices.Equal(resp.Warnings, op.warn) {
					t.Fatalf("warnings %q, want %q", resp.Warnings, op.warn)
				}
			})
		}
	}
}

func TestWebhookRequests(t *testing.T) {
	h := Webhook()
	cases := []struct {
		name    string
		req     cradmission.Request
		allowed bool
		code    int32
	}{
		{"malformed object: 400", review(admissionv1.Create, `{"spec": {"minMember": "two"}}`, ""), false, http.StatusBadRequest},
		{"update without the old object: 400", review(admissionv1.Update, `{"spec": {}}`, ""), false, http.StatusBadRequest},
		{"delete is not registered: allowed unread", review(admissionv1.Delete, ``, ""), true, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := h.Handle(context.Background(), tc.req)
			if resp.Allowed != tc.allowed || (!tc.allowed && resp.Result.Code != tc.code) {
				t.Fatalf("response %v %+v", resp.Allowed, resp.Result)
			}
		})
	}
}
