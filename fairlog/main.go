// The command: waitroom verify-log URL [--receipt FILE] [--key VKEY] [--state FILE]; URL may be an archive
// of the log (a directory or a .tar.gz).

package fairlog

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// Main runs `verify-log` with args (those after the subcommand's name): it prints a short report to stdout
// and returns 0 when the log verified and broke no rule, 1 on a violation (a rule broken, a signature
// that is not the log's key's, records that are not those signed, a fork), 2 when it could not check.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("verify-log", flag.ContinueOnError)
	fs.SetOutput(stderr)
	receipt := fs.String("receipt", "", "a receipt file to find in the log")
	key := fs.String("key", "", "the log's verifier key (default: /.well-known/waitroom-log-key of the log's host, or an archive's key file)")
	state := fs.String("state", "waitroom-log-state.json", "the file that keeps the checkpoints seen before (\"\": none)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: waitroom verify-log URL [--receipt FILE] [--key VKEY] [--state FILE]")
		fmt.Fprintln(stderr, "  URL: a screening's admission log, http(s)://host/api/screenings/{id}/log/, or an archive of it:")
		fmt.Fprintln(stderr, "       the .tar.gz of /api/admin/screenings/{id}/log/export, or the directory it unpacks to")
		fs.PrintDefaults()
	}
	// The URL may come before the flags or after them.
	var url string
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		url, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if url == "" && fs.NArg() == 1 {
		url = fs.Arg(0)
	} else if fs.NArg() != 0 || url == "" {
		fs.Usage()
		return 2
	}
	cfg := VerifyConfig{LogURL: url, Key: *key, StateFile: *state}
	if *receipt != "" {
		b, err := os.ReadFile(*receipt)
		if err != nil {
			fmt.Fprintln(stderr, "verify-log:", err)
			return 2
		}
		cfg.Receipt = b
	}
	rep, err := Verify(ctx, cfg)
	if errors.Is(err, ErrBadSignature) || errors.Is(err, ErrNotSigned) || errors.Is(err, ErrFork) {
		fmt.Fprintln(stdout, "VIOLATION:", err)
		return 1
	}
	if err != nil {
		fmt.Fprintln(stderr, "verify-log: could not verify:", err)
		return 2
	}
	fmt.Fprintln(stdout, rep.String())
	if len(rep.Violations) > 0 {
		return 1
	}
	return 0
}
