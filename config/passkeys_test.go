package config

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// seed is a valid 32-byte seed in standard base64.
var seed = base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))

func TestPassKeysFromTheEnvironmentAndTheFileInOrder(t *testing.T) {
	file := filepath.Join(t.TempDir(), "keys")
	urlSeed := base64.RawURLEncoding.EncodeToString([]byte("\xfb\xff0123456789abcdef0123456789abcd"))
	if err := os.WriteFile(file, []byte("# the old key, kept until its passes expire\n\nold.1:"+urlSeed+"\n  \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load("", false, env(map[string]string{
		"WAITROOM_REDIS_ADDR":     "127.0.0.1:6379",
		"WAITROOM_PASS_KEYS":      "k2:" + seed + ", k1_b:" + seed,
		"WAITROOM_PASS_KEYS_FILE": file,
		"WAITROOM_DATABASE_URL":   "postgres://x",
	}))
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Pass.KeyEntries()
	want := []string{"k2:" + seed, "k1_b:" + seed, "old.1:" + urlSeed}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("KeyEntries() = %q, %v, want %q", got, err, want)
	}
}

func TestPassKeysRefusedNamingTheEntryNotTheSeed(t *testing.T) {
	short := base64.StdEncoding.EncodeToString([]byte("sixteen-bytes-xx"))
	dir := t.TempDir()
	dupFile := filepath.Join(dir, "dup")
	if err := os.WriteFile(dupFile, []byte("k1:"+seed+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	emptyFile := filepath.Join(dir, "empty")
	if err := os.WriteFile(emptyFile, []byte("# nothing yet\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"WAITROOM_PASS_KEYS": "k1:" + seed + ",k2" + seed}, "pass.keys entry 2: want kid:base64-seed"},
		{map[string]string{"WAITROOM_PASS_KEYS": "k 1:" + seed}, `pass.keys entry 1: kid "k 1"`},
		{map[string]string{"WAITROOM_PASS_KEYS": strings.Repeat("k", 65) + ":" + seed}, "pass.keys entry 1: kid"},
		{map[string]string{"WAITROOM_PASS_KEYS": "k1:" + short}, `kid "k1": the seed is 16 bytes, want 32`},
		{map[string]string{"WAITROOM_PASS_KEYS": "k1:" + seed + "!"}, `kid "k1": the seed is not base64`},
		{map[string]string{"WAITROOM_PASS_KEYS": "k1:" + seed + ",k1:" + seed}, `pass.keys entry 2: kid "k1" is listed twice (first at pass.keys entry 1)`},
		{map[string]string{"WAITROOM_PASS_KEYS": "k1:" + seed, "WAITROOM_PASS_KEYS_FILE": dupFile}, "pass.keys_file " + dupFile + ` line 1: kid "k1" is listed twice`},
		{map[string]string{"WAITROOM_PASS_KEYS_FILE": filepath.Join(dir, "absent")}, "pass.keys_file: open"},
		{map[string]string{"WAITROOM_PASS_KEYS_FILE": emptyFile}, "holds no key"},
		{map[string]string{"WAITROOM_REDIS_ADDR": "127.0.0.1:6379", "WAITROOM_DATABASE_URL": "postgres://x"}, "pass.keys (or pass.secret) is required"},
	}
	for _, tc := range cases {
		_, err := Load("", false, env(tc.env))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load(%v) = %v, want an error naming %q", tc.env, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), seed) || strings.Contains(err.Error(), short) {
			t.Errorf("Load(%v)'s error %q shows a seed", tc.env, err)
		}
	}
}
