// The room's modules tested without a browser: Node's own test runner over jstest/ (the protocol's
// messages as protocol.js handles them, on the fakes of jstest/fakes.js), as part of go test, so that
// make test stays the one command. Skipped without node, failed without it under CI, as the browser test
// treats chromium.

package web

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestRoomModulesUnderNode runs every jstest/*.test.js with node --test. web/package.json says the .js
// files are ES modules, as the browser loads them; nothing is installed or fetched.
func TestRoomModulesUnderNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set and node is not installed (apt-get install -y nodejs)")
		}
		t.Skip("node is not installed (apt-get install -y nodejs); skipping the room's module tests")
	}
	files, err := filepath.Glob(filepath.Join("jstest", "*.test.js"))
	if err != nil || len(files) == 0 {
		t.Fatalf("jstest/*.test.js: %v, %d files, want the room's module tests", err, len(files))
	}
	cmd := exec.CommandContext(t.Context(), node, append([]string{"--test"}, files...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test %v: %v\n%s", files, err, out)
	}
	if testing.Verbose() {
		t.Logf("node --test %v:\n%s", files, out)
	}
}
