package operator

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"time"
)

// ServingCert is one webhook Service's certificate material, as kept in its Secret.
type ServingCert struct {
	Cert, Key, CA []byte // PEM
}

// Hash names the certificate in the serving pod's template, so a new one rolls the pod.
func (c ServingCert) Hash() string {
	sum := sha256.Sum256(c.Cert)
	return hex.EncodeToString(sum[:])[:16]
}

// certNames are the DNS names a Service answers to.
func certNames(service, namespace string) []string {
	svc := service + "." + namespace + ".svc"
	return []string{service, service + "." + namespace, svc, svc + ".cluster.local"}
}

// NewServingCert makes a self-signed CA and a serving certificate for one webhook
// Service, valid ten years (KAI's operator also makes its own, a self-signed certificate
// per Service; ours is not its code).
func NewServingCert(service, namespace string, now time.Time) (ServingCert, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return ServingCert{}, fmt.Errorf("failed to generate CA key: %w", err)
	}
	serial := func() *big.Int {
		n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
		return n
	}
	caTmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "kai-" + service + "-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(10, 0, 0),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, IsCA: true, BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return ServingCert{}, fmt.Errorf("failed to sign CA: %w", err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return ServingCert{}, fmt.Errorf("failed to generate serving key: %w", err)
	}
	names := certNames(service, namespace)
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: names[2]}, DNSNames: names,
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(10, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return ServingCert{}, fmt.Errorf("failed to sign serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return ServingCert{}, fmt.Errorf("failed to encode serving key: %w", err)
	}
	return ServingCert{
		Cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Key:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		CA:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
	}, nil
}

// Usable says whether kept material still serves the Service: the key pair matches, the
// CA signed it, it names the Service and is valid for another 30 days. Anything else is
// replaced; a usable certificate is never regenerated.
func (c ServingCert) Usable(service, namespace string, now time.Time) bool {
	pair, err := tls.X509KeyPair(c.Cert, c.Key)
	if err != nil || len(pair.Certificate) == 0 {
		return false
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return false
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(c.CA) {
		return false
	}
	_, err = leaf.Verify(x509.VerifyOptions{
		DNSName: service + "." + namespace + ".svc", Roots: pool, CurrentTime: now.Add(30 * 24 * time.Hour),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	return err == nil
}
