package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// buildkitServerName is the name in buildkitd's certificate.
const buildkitServerName = "buildkitd"

// buildkitSetup is the Dockerfile pod's init container: with -install it
// copies the agent first, as install does. It writes
// what buildkitd needs into -daemon (its config, a server certificate and
// the CA that signs clients) and a client certificate into -client, which
// only the build container mounts. The CA's key is never written: no one
// can sign another client, so a RUN step that reaches buildkitd's port (it
// shares the pod's network) cannot talk to it.
func buildkitSetup(args []string) int {
	fs := flag.NewFlagSet("buildkit-setup", flag.ExitOnError)
	daemon := fs.String("daemon", "", "folder for buildkitd's config, certificate and key")
	client := fs.String("client", "", "folder for the client's certificate and key")
	plain := fs.String("plain-http", "", "registries BuildKit speaks plain HTTP to, comma-separated")
	dest := fs.String("install", "", "copy this binary to DEST first")
	_ = fs.Parse(args)
	if *daemon == "" || *client == "" {
		usage()
	}
	if *dest != "" {
		if err := install(*dest); err != nil {
			fmt.Fprintln(os.Stderr, "tug-build buildkit-setup:", err)
			return 1
		}
	}
	var hosts []string
	if *plain != "" {
		hosts = strings.Split(*plain, ",")
	}
	if err := writeBuildkitSetup(*daemon, *client, hosts, time.Now()); err != nil {
		fmt.Fprintln(os.Stderr, "tug-build buildkit-setup:", err)
		return 1
	}
	return 0
}

// writeBuildkitSetup writes buildkitd's config and a fresh CA's two
// certificates: buildkitd's own into daemonDir, the client's into
// clientDir. The CA's key stays in memory only (see buildkitSetup).
func writeBuildkitSetup(daemonDir, clientDir string, plainHosts []string, now time.Time) error {
	if err := os.WriteFile(filepath.Join(daemonDir, "buildkitd.toml"), buildkitdConfig(plainHosts), 0o644); err != nil {
		return err
	}
	ca, err := newBuildCA(now)
	if err != nil {
		return err
	}
	if err := ca.writeLeaf(daemonDir, x509.ExtKeyUsageServerAuth); err != nil {
		return err
	}
	return ca.writeLeaf(clientDir, x509.ExtKeyUsageClientAuth)
}

// buildCA is the CA of one build pod: made fresh for it, it signs
// exactly the pod's two leaves, which expire with it.
type buildCA struct {
	cert *x509.Certificate
	der  []byte
	key  *ecdsa.PrivateKey
}

func newBuildCA(now time.Time) (*buildCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "tug build " + now.UTC().Format(time.RFC3339)},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(48 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true,
		KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &buildCA{cert: cert, der: der, key: key}, nil
}

// writeLeaf writes into dir a certificate the CA signs for usage (server:
// buildkitd's, named for the address the client dials; client: the build
// container's), its key, and the CA's certificate to check the other side.
func (ca *buildCA) writeLeaf(dir string, usage x509.ExtKeyUsage) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: buildkitServerName},
		NotBefore: ca.cert.NotBefore, NotAfter: ca.cert.NotAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	if usage == x509.ExtKeyUsageServerAuth {
		tmpl.DNSNames, tmpl.IPAddresses = []string{buildkitServerName}, []net.IP{net.IPv4(127, 0, 0, 1)}
	} else {
		tmpl.Subject.CommonName = "tug-build"
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	for name, b := range map[string][]byte{
		"ca.pem":   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.der}),
		"cert.pem": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"key.pem":  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}
