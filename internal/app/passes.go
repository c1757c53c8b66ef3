// The passes an instance signs and checks, built from pass.keys, pass.keys_file and pass.secret; and the key
// Main draws for a process of its own when none is set.

package app

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/waitroom/waitroom/config"
	"github.com/waitroom/waitroom/fairlog"
	"github.com/waitroom/waitroom/pass"
)

// newPasses builds the passes cfg asks for: EdDSA with the Ed25519 keys of pass.keys then pass.keys_file
// (the first signs) when any are set, and HS256 with pass.secret otherwise. Keys win over a secret.
func newPasses(cfg config.Pass, log *slog.Logger) (*pass.Issuer, error) {
	entries, err := cfg.KeyEntries()
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	if len(entries) == 0 {
		if cfg.Secret == "" {
			return nil, errors.New("app: no pass key and no pass secret: set pass.keys (WAITROOM_PASS_KEYS)")
		}
		log.Info("passes are signed with HS256 and pass.secret; only holders of the secret can check them (set pass.keys for EdDSA and /.well-known/jwks.json)")
		return pass.NewSecretIssuer([]byte(cfg.Secret)), nil
	}
	keys := make([]pass.Key, len(entries))
	for i, e := range entries {
		if keys[i], err = pass.ParseKey(e); err != nil {
			return nil, fmt.Errorf("app: pass key %d: %w", i+1, err)
		}
	}
	p, err := pass.NewIssuer(keys)
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	if cfg.Secret != "" {
		log.Warn("pass.keys and pass.secret are both set: the keys sign and check passes, the secret is not used")
	}
	log.Info("passes are signed with EdDSA", "kid", p.SigningKID(), "keys", len(keys))
	return p, nil
}

// drawPassKey gives cfg an Ed25519 key of this process's own when it sets no key and no secret (the
// embedded default: config refuses a shared Redis without them), so `make run` issues EdDSA passes. Its kid
// is new each start, so a verifier that cached the last process's keys fetches the new ones.
func drawPassKey(cfg *config.Pass, log *slog.Logger) error {
	if cfg.Secret != "" || len(cfg.Keys) > 0 || cfg.KeysFile != "" {
		return nil
	}
	kid, err := localKeyID()
	if err != nil {
		return err
	}
	k, err := pass.GenerateKey(kid)
	if err != nil {
		return fmt.Errorf("app: %w", err)
	}
	cfg.Keys = []string{k.String()}
	log.Warn("pass.keys not set: generated an Ed25519 key for this process; passes will not survive a restart (set WAITROOM_PASS_KEYS)", "kid", k.ID)
	return nil
}

// drawLogKey gives the embedded default an admission log key when fairness.key is not set, so `make run`
// keeps the log and gives receipts: with the database in the data directory, the key kept beside it
// (data.dir/fairness.key), or one drawn and kept there, so the log's checkpoints verify with the same key
// after a restart; with a database set elsewhere, a key for this process only. A shared Redis needs
// the same key on every instance: it is never drawn there (the log is then not kept, with a warning).
func drawLogKey(cfg *config.Config, log *slog.Logger) error {
	if !cfg.Fairness.Enabled || cfg.Fairness.Key != "" || !cfg.Embedded() {
		return nil
	}
	if cfg.Database.URL != "" {
		// The log is kept in a database of its own choosing, not the data directory: a key for this process.
		entry, err := localLogKey()
		if err != nil {
			return err
		}
		cfg.Fairness.Key = entry
		log.Warn("fairness.key not set: drew an Ed25519 key for this process's admission log; its checkpoints will not verify after a restart (set WAITROOM_FAIRNESS_KEY)")
		return nil
	}
	path := filepath.Join(cfg.Data.Dir, "fairness.key")
	if kept, err := os.ReadFile(path); err == nil {
		entry := strings.TrimSpace(string(kept))
		if _, err := fairlog.ParseKey(entry); err != nil {
			return fmt.Errorf("app: %s: %w", path, err)
		}
		cfg.Fairness.Key = entry
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("app: the admission log's key: %w", err)
	}
	entry, err := localLogKey()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.Data.Dir, 0o755); err != nil {
		return fmt.Errorf("app: the admission log's key: %w", err)
	}
	if err := os.WriteFile(path, []byte(entry+"\n"), 0o600); err != nil {
		return fmt.Errorf("app: the admission log's key: %w", err)
	}
	cfg.Fairness.Key = entry
	log.Warn("fairness.key not set: drew an Ed25519 key for the admission log and kept it in the data directory (set WAITROOM_FAIRNESS_KEY)", "file", path)
	return nil
}

// localLogKey draws a log key named as localKeyID names it.
func localLogKey() (string, error) {
	kid, err := localKeyID()
	if err != nil {
		return "", err
	}
	entry, err := fairlog.GenerateKey(kid)
	if err != nil {
		return "", fmt.Errorf("app: %w", err)
	}
	return entry, nil
}

// localKeyID names a key drawn for this process: local-<8 hex digits>, new each start.
func localKeyID() (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("app: draw a key id: %w", err)
	}
	return "local-" + hex.EncodeToString(b[:]), nil
}
