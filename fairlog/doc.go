// Package fairlog is the public admission log's format and its checks (docs/admission-log.md): the
// records a server appends as its lines change, the RFC 6962 tree they are hashed into (golang.org/x/mod's
// tlog), the checkpoints and receipts signed with the log's Ed25519 key (signed notes,
// golang.org/x/mod/sumdb/note), the tiles a server serves them in, and the verifier that fetches a log,
// checks its signatures, its consistency with what it saw before and every rule of the line, and says
// where a receipt stands (Verify; `waitroom verify-log`, Main).
//
// It imports nothing else of this project, so anyone can read it, build it and run it against a server
// they do not trust.
//
// Files: keys.go (the log key, checkpoints, receipts), record.go (the records), shuffle.go (token hashes,
// the seed and the shuffle keys), beacon.go (a drand beacon's chain, rounds and signatures, and the seed
// mixed with a round), tile.go (serving tiles), check.go (the rules), verify.go (fetching and
// checking a log over HTTP), main.go (the command).
package fairlog
