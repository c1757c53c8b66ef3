package app

import (
	"bytes"
	"encoding/base64"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/config"
	"github.com/waitroom/waitroom/fairlog"
	"github.com/waitroom/waitroom/pass"
)

var testSeed = base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))

func TestKeysWinOverTheSecretAndTheLogSaysWhichSigns(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	p, err := newPasses(config.Pass{Keys: []string{"k2:" + testSeed, "k1:" + testSeed}, Secret: strings.Repeat("s", 32)}, log)
	if err != nil {
		t.Fatal(err)
	}
	if p.Alg() != "EdDSA" || p.SigningKID() != "k2" {
		t.Errorf("keys and a secret: Alg, SigningKID = %s, %s; want EdDSA, k2", p.Alg(), p.SigningKID())
	}
	if out := logs.String(); !strings.Contains(out, "kid=k2") || !strings.Contains(out, "the secret is not used") || strings.Contains(out, testSeed) {
		t.Errorf("log = %q, want the signing kid and that the secret is unused, and no seed", out)
	}
	hs, err := newPasses(config.Pass{Secret: strings.Repeat("s", 32)}, log)
	if err != nil || hs.Alg() != "HS256" {
		t.Errorf("secret alone: Alg = %v, %v; want HS256", hs, err)
	}
	if _, err := newPasses(config.Pass{}, log); err == nil {
		t.Errorf("newPasses(no keys, no secret) = nil error, want one")
	}
	if _, err := newPasses(config.Pass{Keys: []string{"k1:short"}}, log); err == nil || !strings.Contains(err.Error(), "pass.keys entry 1") {
		t.Errorf("newPasses(a bad key) = %v, want an error naming pass.keys entry 1", err)
	}
}

func TestAProcessWithoutKeyOrSecretDrawsAnEd25519Key(t *testing.T) {
	log := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	var a, b config.Pass
	if err := drawPassKey(&a, log); err != nil {
		t.Fatal(err)
	}
	if err := drawPassKey(&b, log); err != nil {
		t.Fatal(err)
	}
	ka, err := pass.ParseKey(a.Keys[0])
	if err != nil || len(a.Keys) != 1 || !strings.HasPrefix(ka.ID, "local-") {
		t.Fatalf("drawn keys = %d, kid %q, %v; want one local- key", len(a.Keys), ka.ID, err)
	}
	if a.Keys[0] == b.Keys[0] {
		t.Errorf("two draws gave the same key")
	}
	kept := config.Pass{Secret: strings.Repeat("s", 32)}
	if err := drawPassKey(&kept, log); err != nil || len(kept.Keys) != 0 {
		t.Errorf("drawPassKey with a secret set = %v, %v; want nothing drawn", kept.Keys, err)
	}
}

// The embedded default draws an admission log key once and keeps it in its data directory, so a restart
// signs with the same key; with a database elsewhere the key is the process's own and nothing is written.
func TestTheEmbeddedDefaultKeepsItsLogKey(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Data.Dir = dir
	if err := drawLogKey(&cfg, log); err != nil {
		t.Fatal(err)
	}
	first := cfg.Fairness.Key
	if _, err := fairlog.ParseKey(first); err != nil {
		t.Fatalf("drawn key %v", err)
	}
	again := config.Default()
	again.Data.Dir = dir
	if err := drawLogKey(&again, log); err != nil || again.Fairness.Key != first {
		t.Errorf("after a restart the key = %v, want the one kept", err)
	}
	elsewhere := config.Default()
	elsewhere.Data.Dir = filepath.Join(dir, "other")
	elsewhere.Database.URL = "sqlite:" + filepath.Join(dir, "x.db")
	if err := drawLogKey(&elsewhere, log); err != nil || elsewhere.Fairness.Key == "" || elsewhere.Fairness.Key == first {
		t.Errorf("with a database elsewhere: key %q, %v; want a new one", elsewhere.Fairness.Key, err)
	}
	if _, err := os.Stat(elsewhere.Data.Dir); !os.IsNotExist(err) {
		t.Errorf("with a database elsewhere the data directory was written: %v", err)
	}
	shared := config.Default()
	shared.Redis.Addr = "127.0.0.1:6379"
	if err := drawLogKey(&shared, log); err != nil || shared.Fairness.Key != "" {
		t.Errorf("with a shared Redis: key %q, %v; want none drawn", shared.Fairness.Key, err)
	}
}
