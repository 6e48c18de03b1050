package operator

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"kaiops.dev/lab/kai-standin/admission"
	"kaiops.dev/lab/kai-standin/podgroupctl"
	"kaiops.dev/lab/kai-standin/queuectl"
)

// TestWebhooksServeOverTLS: each component's webhook server, given the Secret the operator
// makes for its Service (mounted as files), answers the API server's AdmissionReview at
// the path the operator registers, over TLS that the registered caBundle verifies.
func TestWebhooksServeOverTLS(t *testing.T) {
	cases := []struct {
		service, path, body, refusal string
		handler                      func() webhook.AdmissionHandler
	}{
		{"podgroup-controller", PodGroupPath, `{"spec": {"subGroups": [{"name": "a"}]}}`, "subgroup a: minMember is required",
			func() webhook.AdmissionHandler { return podgroupctl.Webhook() }},
		{"queue-controller", QueuePath, `{"spec": {}}`, "resources must be specified",
			func() webhook.AdmissionHandler { return queuectl.Webhook() }},
		{"admission", TopologyPath, `{"spec": {"levels": [{"nodeLabel": "a", "alias": "a"}]}}`,
			"invalid topology aliases: an alias must not equal a nodeLabel; conflicting: [a]",
			func() webhook.AdmissionHandler { return admission.TopologyHandler() }},
	}
	for _, tc := range cases {
		t.Run(tc.service, func(t *testing.T) {
			cert, err := NewServingCert(tc.service, "kai-scheduler", time.Now())
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			for name, data := range map[string][]byte{"tls.crt": cert.Cert, "tls.key": cert.Key, "ca.crt": cert.CA} {
				if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			port := l.Addr().(*net.TCPAddr).Port
			_ = l.Close()
			srv := webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir})
			srv.Register(tc.path, &webhook.Admission{Handler: tc.handler()})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() { _ = srv.Start(ctx) }()

			// what the API server does: trust the caBundle, name the Service
			rendered := byName(Render(mustSpec(t, `{}`), Inputs{Certs: map[string]Cert{tc.service: {CABundle: cert.CA}}}))
			var caBundle []byte
			for _, o := range rendered {
				if cfg, ok := o.(*admissionregv1.ValidatingWebhookConfiguration); ok {
					for _, w := range cfg.Webhooks {
						if *w.ClientConfig.Service.Path == tc.path && w.ClientConfig.Service.Name == tc.service {
							caBundle = w.ClientConfig.CABundle
						}
					}
				}
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(caBundle) {
				t.Fatalf("no caBundle registered for %s", tc.path)
			}
			client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
				RootCAs: pool, ServerName: tc.service + ".kai-scheduler.svc",
			}}}
			body, _ := json.Marshal(admissionv1.AdmissionReview{
				TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
				Request: &admissionv1.AdmissionRequest{UID: types.UID("u1"), Operation: admissionv1.Create,
					Object: runtime.RawExtension{Raw: []byte(tc.body)}},
			})
			var resp *http.Response
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				resp, err = client.Post("https://127.0.0.1:"+strconv.Itoa(port)+tc.path, "application/json", bytes.NewReader(body))
				if err == nil || time.Now().After(deadline) {
					break
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = resp.Body.Close() }()
			var got admissionv1.AdmissionReview
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatal(err)
			}
			if got.Response == nil || got.Response.UID != "u1" || got.Response.Allowed || got.Response.Result.Code != 403 ||
				got.Response.Result.Message != tc.refusal {
				t.Fatalf("response %+v", got.Response)
			}
		})
	}
}
