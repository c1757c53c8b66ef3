// The log key (an Ed25519 key read from "kid:base64 seed", as pass keys are), and the two things it signs
// as notes: checkpoints of the tree and receipts of places.

package fairlog

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// ErrBadKey is every log key entry that cannot be read.
var ErrBadKey = errors.New("bad admission log key")

// KeyError is an entry ParseKey cannot read; Problem names the kid, never the seed.
type KeyError struct{ Problem string }

func (e *KeyError) Error() string        { return "fairlog: " + ErrBadKey.Error() + ": " + e.Problem }
func (e *KeyError) Is(target error) bool { return target == ErrBadKey }

var kidPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// Key is the log's Ed25519 key: it signs checkpoints and receipts as notes named by its ID.
type Key struct {
	ID       string
	private  ed25519.PrivateKey
	vkey     string
	verifier note.Verifier
	hash     uint32
}

// ParseKey reads "kid:base64 of the 32-byte seed".
func ParseKey(entry string) (*Key, error) {
	kid, seed64, ok := strings.Cut(strings.TrimSpace(entry), ":")
	if !ok {
		return nil, &KeyError{Problem: `want "kid:base64 seed"`}
	}
	if !kidPattern.MatchString(kid) {
		return nil, &KeyError{Problem: fmt.Sprintf("key id %q: want 1 to 64 letters, digits, '.', '_' or '-'", kid)}
	}
	seed, err := base64.StdEncoding.DecodeString(seed64)
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, &KeyError{Problem: fmt.Sprintf("key %s: the seed must be %d bytes in standard base64", kid, ed25519.SeedSize)}
	}
	priv := ed25519.NewKeyFromSeed(seed)
	vkey, err := note.NewEd25519VerifierKey(kid, priv.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, &KeyError{Problem: fmt.Sprintf("key %s: %v", kid, err)}
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, &KeyError{Problem: fmt.Sprintf("key %s: %v", kid, err)}
	}
	return &Key{ID: kid, private: priv, vkey: vkey, verifier: v, hash: v.KeyHash()}, nil
}

// GenerateKey draws a new key named kid and returns its entry, "kid:base64 seed".
func GenerateKey(kid string) (string, error) {
	if !kidPattern.MatchString(kid) {
		return "", &KeyError{Problem: fmt.Sprintf("key id %q: want 1 to 64 letters, digits, '.', '_' or '-'", kid)}
	}
	seed := make([]byte, ed25519.SeedSize)
	if _, err := rand.Read(seed); err != nil {
		return "", fmt.Errorf("fairlog: draw a key: %w", err)
	}
	return kid + ":" + base64.StdEncoding.EncodeToString(seed), nil
}

// VerifierKey is the key's public half as a note verifier key, "<kid>+<hash>+<base64 key>": what
// /.well-known/waitroom-log-key serves and verifiers check with.
func (k *Key) VerifierKey() string { return k.vkey }

// The key as a note.Signer.
func (k *Key) Name() string                    { return k.ID }
func (k *Key) KeyHash() uint32                 { return k.hash }
func (k *Key) Sign(msg []byte) ([]byte, error) { return ed25519.Sign(k.private, msg), nil }

// Checkpoint is a signed statement of a screening's log: its size and its tree's hash.
type Checkpoint struct {
	Screening string
	Size      int64
	Root      tlog.Hash
}

// checkpointOrigin is the first line of a screening's checkpoints.
func checkpointOrigin(screening string) string { return "waitroom/" + screening }

// SignCheckpoint signs the checkpoint of the screening's log of size records and root hash.
func (k *Key) SignCheckpoint(screening string, size int64, root tlog.Hash) ([]byte, error) {
	text := fmt.Sprintf("%s\n%d\n%s\n", checkpointOrigin(screening), size, base64.StdEncoding.EncodeToString(root[:]))
	return note.Sign(&note.Note{Text: text}, k)
}

// ErrBadSignature says a checkpoint or receipt is not signed by the key it is checked with.
var ErrBadSignature = errors.New("not signed by the log's key")

// open checks msg's signature by vkey and returns its text.
func open(msg []byte, vkey string) (string, error) {
	v, err := note.NewVerifier(strings.TrimSpace(vkey))
	if err != nil {
		return "", fmt.Errorf("fairlog: the log key %q: %w", vkey, err)
	}
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		return "", fmt.Errorf("fairlog: %w: %w", ErrBadSignature, err)
	}
	return n.Text, nil
}

// OpenCheckpoint checks a checkpoint's signature by vkey and reads it.
func OpenCheckpoint(msg []byte, vkey string) (Checkpoint, error) {
	text, err := open(msg, vkey)
	if err != nil {
		return Checkpoint{}, err
	}
	lines := strings.Split(text, "\n")
	if len(lines) != 4 || lines[3] != "" || !strings.HasPrefix(lines[0], "waitroom/") {
		return Checkpoint{}, fmt.Errorf("fairlog: a checkpoint is 3 lines, waitroom/<screening>, size, root; got %q", text)
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 || lines[1] != strconv.FormatInt(size, 10) {
		return Checkpoint{}, fmt.Errorf("fairlog: a checkpoint's size %q", lines[1])
	}
	raw, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(raw) != tlog.HashSize {
		return Checkpoint{}, fmt.Errorf("fairlog: a checkpoint's root %q", lines[2])
	}
	c := Checkpoint{Screening: strings.TrimPrefix(lines[0], "waitroom/"), Size: size}
	copy(c.Root[:], raw)
	return c, nil
}

// Receipt is what a place's receipt states: the screening, the place's number in the line (Seq) or, in the
// pre-queue, its entry number (Entry), the token's hash and the server's time (Unix ms).
type Receipt struct {
	Screening string
	Seq       int64
	Entry     int64
	TokenHash string
	Time      int64
}

// text is the receipt's note text.
func (r Receipt) text() string {
	place := "place " + strconv.FormatInt(r.Seq, 10)
	if r.Seq == 0 {
		place = "entry " + strconv.FormatInt(r.Entry, 10)
	}
	return fmt.Sprintf("waitroom receipt\nscreening %s\n%s\ntoken %s\ntime %d\n", r.Screening, place, r.TokenHash, r.Time)
}

// SignReceipt signs r: the same receipt gives the same bytes (Ed25519 signatures are deterministic).
func (k *Key) SignReceipt(r Receipt) ([]byte, error) {
	if (r.Seq > 0) == (r.Entry > 0) || !hexHash(r.TokenHash) {
		return nil, fmt.Errorf("fairlog: a receipt names a place or an entry, and a token hash: %+v", r)
	}
	return note.Sign(&note.Note{Text: r.text()}, k)
}

// OpenReceipt checks a receipt's signature by vkey and reads it.
func OpenReceipt(msg []byte, vkey string) (Receipt, error) {
	text, err := open(msg, vkey)
	if err != nil {
		return Receipt{}, err
	}
	var r Receipt
	var place, entry string
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) != 5 || lines[0] != "waitroom receipt" {
		return Receipt{}, fmt.Errorf("fairlog: not a receipt: %q", text)
	}
	fields := map[string]*string{"screening": &r.Screening, "place": &place, "entry": &entry, "token": &r.TokenHash}
	var timeText string
	fields["time"] = &timeText
	for _, l := range lines[1:] {
		name, value, ok := strings.Cut(l, " ")
		p, known := fields[name]
		if !ok || !known || *p != "" {
			return Receipt{}, fmt.Errorf("fairlog: a receipt's line %q", l)
		}
		*p = value
	}
	num := func(s string) int64 {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			return -1
		}
		return n
	}
	if place != "" {
		r.Seq = num(place)
	} else {
		r.Entry = num(entry)
	}
	r.Time = num(timeText)
	if r.Seq < 0 || r.Entry < 0 || r.Time < 0 || r.Screening == "" || !hexHash(r.TokenHash) {
		return Receipt{}, fmt.Errorf("fairlog: a receipt's fields: %q", text)
	}
	return r, nil
}
