// Mailpit: a real SMTP server with an HTTP API, started for one test on loopback ports of its own, so the
// e-mails package notify sends can be read back as a buyer's mailbox would hold them.

package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// MailpitVersion is the Mailpit the tests build when none is installed (.ci/run installs the same).
const MailpitVersion = "v1.33.1"

// MailpitOptions say how the SMTP listener is protected: plain by default (smtp+insecure://).
type MailpitOptions struct {
	// STARTTLS offers STARTTLS with a certificate made for the test (for 127.0.0.1 and localhost), which
	// Mailpit.RootCAs trusts: smtp://.
	STARTTLS bool
	// ImplicitTLS speaks TLS from the first byte, with the same certificate: smtps://.
	ImplicitTLS bool
}

// Mailpit is a mailpit process of the test's own, in memory of a database file in the test's temp dir,
// which accepts any user and password. Stop and Start it to play an SMTP server that is down; what it took
// before is kept.
type Mailpit struct {
	t testing.TB
	// SMTPAddr is the SMTP listener, 127.0.0.1:port; APIURL the HTTP API's base, http://127.0.0.1:port.
	SMTPAddr string
	APIURL   string
	// RootCAs trusts the SMTP listener's certificate (nil without TLS).
	RootCAs *x509.CertPool
	bin     string
	args    []string
	cmd     *exec.Cmd
	done    <-chan error // the process's exit, from Wait
	out     *SyncBuffer
}

// StartMailpit starts Mailpit on free loopback ports and waits until its API answers; it is stopped when t
// ends. The binary is mailpit on the PATH, or in $(go env GOPATH)/bin, or one built once with go install
// into the user's cache directory (about 30 s, reused afterwards). When none can be had, t is skipped, or
// fails under CI.
func StartMailpit(t testing.TB, opts MailpitOptions) *Mailpit {
	t.Helper()
	bin, err := mailpitBinary()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and Mailpit cannot be had: %v", err)
		}
		t.Skipf("Mailpit is not installed and could not be built (%v); install it with "+
			"GOBIN=$(go env GOPATH)/bin go install github.com/axllent/mailpit@%s", err, MailpitVersion)
	}
	dir := t.TempDir()
	m := &Mailpit{t: t, bin: bin, SMTPAddr: freeAddr(t), out: &SyncBuffer{}}
	m.APIURL = "http://" + freeAddr(t)
	m.args = []string{"--smtp", m.SMTPAddr, "--listen", strings.TrimPrefix(m.APIURL, "http://"),
		"--database", filepath.Join(dir, "mailpit.db"), "--disable-version-check", "--smtp-disable-rdns",
		"--smtp-auth-accept-any", "--quiet"}
	if opts.STARTTLS || opts.ImplicitTLS {
		cert, key := m.certificate(dir)
		m.args = append(m.args, "--smtp-tls-cert", cert, "--smtp-tls-key", key)
	}
	if opts.ImplicitTLS {
		m.args = append(m.args, "--smtp-require-tls")
	} else {
		// PLAIN and LOGIN before STARTTLS, or without it: Mailpit refuses the flag beside --smtp-require-tls.
		m.args = append(m.args, "--smtp-auth-allow-insecure")
	}
	m.Start()
	t.Cleanup(m.Stop)
	return m
}

// Start runs Mailpit (again, on the same ports and database) and waits until its API and SMTP listener
// answer.
func (m *Mailpit) Start() {
	m.t.Helper()
	m.cmd = exec.Command(m.bin, m.args...)
	m.cmd.Stdout, m.cmd.Stderr = m.out, m.out
	if err := m.cmd.Start(); err != nil {
		m.t.Fatalf("start mailpit: %v", err)
	}
	done := make(chan error, 1)
	m.done = done
	go func(cmd *exec.Cmd) { done <- cmd.Wait() }(m.cmd)
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := client.Get(m.APIURL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if c, derr := net.DialTimeout("tcp", m.SMTPAddr, time.Second); derr == nil && resp.StatusCode == http.StatusOK {
				c.Close()
				return
			}
		}
		select {
		case werr := <-done:
			m.cmd = nil
			m.t.Fatalf("mailpit (%s) exited at its start: %v\n%s", strings.Join(m.args, " "), werr, m.out.String())
		default:
		}
		if time.Now().After(deadline) {
			m.Stop()
			m.t.Fatalf("mailpit (%s) did not answer within 15s: %v\n%s", strings.Join(m.args, " "), err, m.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills Mailpit at once: its SMTP listener refuses connections until Start.
func (m *Mailpit) Stop() {
	if m.cmd == nil || m.cmd.Process == nil {
		return
	}
	_ = m.cmd.Process.Kill()
	<-m.done
	m.cmd = nil
}

// URL is the SMTP URL of the listener for package notify: smtp+insecure://, or smtp:// with STARTTLS, or
// smtps://, as the options said, with any user and password.
func (m *Mailpit) URL(scheme string) string {
	if scheme == "smtp+insecure" {
		return "smtp+insecure://" + m.SMTPAddr
	}
	return scheme + "://user:secret@" + m.SMTPAddr
}

// MailAddress is a sender or recipient as Mailpit shows it.
type MailAddress struct {
	Name    string
	Address string
}

// Mail is one message Mailpit took, as its API (GET /api/v1/message/{ID}) shows it: the headers decoded,
// Text the plain-text body decoded from its transfer encoding.
type Mail struct {
	ID        string
	MessageID string
	From      MailAddress
	To        []MailAddress
	Subject   string
	Date      time.Time
	Text      string
	HTML      string
}

// Mails returns every message Mailpit took, the newest first, each read whole.
func (m *Mailpit) Mails(t testing.TB) []Mail {
	t.Helper()
	var list struct {
		Messages []struct{ ID string }
	}
	m.get(t, "/api/v1/messages?limit=1000", &list)
	out := make([]Mail, len(list.Messages))
	for i, s := range list.Messages {
		m.get(t, "/api/v1/message/"+s.ID, &out[i])
	}
	return out
}

// WaitMails waits up to within for at least n messages and returns them all, failing t if they do not come.
func (m *Mailpit) WaitMails(t testing.TB, n int, within time.Duration) []Mail {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := m.Mails(t)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("Mailpit holds %d messages after %v, want %d", len(got), within, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (m *Mailpit) get(t testing.TB, path string, v any) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(m.APIURL + path)
	if err != nil {
		t.Fatalf("mailpit GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("mailpit GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("mailpit GET %s: %v", path, err)
	}
}

// certificate writes a self-signed certificate for 127.0.0.1 and localhost, and its key, into dir, and
// trusts it in m.RootCAs.
func (m *Mailpit) certificate(dir string) (certFile, keyFile string) {
	m.t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		m.t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mailpit test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		m.t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		m.t.Fatal(err)
	}
	m.RootCAs = x509.NewCertPool()
	m.RootCAs.AddCert(cert)
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		m.t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "smtp.crt"), filepath.Join(dir, "smtp.key")
	for path, block := range map[string]*pem.Block{certFile: {Type: "CERTIFICATE", Bytes: der}, keyFile: {Type: "EC PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			m.t.Fatal(err)
		}
	}
	return certFile, keyFile
}

// freeAddr is a loopback address with a port nothing listens on (free when asked).
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

var (
	mailpitOnce sync.Once
	mailpitPath string
	mailpitErr  error
)

// mailpitBinary finds Mailpit, or builds it once per test binary into the user's cache directory.
func mailpitBinary() (string, error) {
	mailpitOnce.Do(func() { mailpitPath, mailpitErr = findOrBuildMailpit() })
	return mailpitPath, mailpitErr
}

func findOrBuildMailpit() (string, error) {
	if p, err := exec.LookPath("mailpit"); err == nil {
		return p, nil
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("no mailpit on the PATH, and no go to build one: %w", err)
	}
	if out, err := exec.Command(goBin, "env", "GOPATH").Output(); err == nil {
		for _, root := range filepath.SplitList(strings.TrimSpace(string(out))) {
			if p := filepath.Join(root, "bin", "mailpit"); isExecutable(p) {
				return p, nil
			}
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no mailpit on the PATH, and no cache directory to build one in: %w", err)
	}
	dir := filepath.Join(cache, "waitroom", "mailpit-"+MailpitVersion)
	bin := filepath.Join(dir, "mailpit")
	if isExecutable(bin) {
		return bin, nil
	}
	// Built into a directory of its own, then renamed into place: another test binary building it at the
	// same time never runs a half-written file.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command(goBin, "install", "github.com/axllent/mailpit@"+MailpitVersion)
	cmd.Dir = tmp // outside any module
	cmd.Env = append(os.Environ(), "GOBIN="+tmp)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install github.com/axllent/mailpit@%s: %v\n%s", MailpitVersion, err, out)
	}
	if err := os.Rename(filepath.Join(tmp, "mailpit"), bin); err != nil {
		return "", err
	}
	return bin, nil
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
