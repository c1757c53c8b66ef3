package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRunRefusesBadFlagsBeforeDialing(t *testing.T) {
	noenv := func(string) string { return "" }
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"swarm", "-users", "0"}, "users = 0"},
		{[]string{"swarm", "-url", "localhost:8080"}, "want http://host"},
		{[]string{"swarm", "-retries", "-1"}, "retries = -1"},
		{[]string{"swarm", "-nope"}, "flag provided but not defined"},
		{[]string{"swarm", "extra"}, "unexpected arguments"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), tc.args, noenv, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}
