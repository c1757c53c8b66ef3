// The notify tests' harness: a clock the tests move, a Service over the test's database that sends to the
// test's own Mailpit, addresses kept as a buyer keeps them, and the link read back out of an e-mail.

package notify_test

import (
	"context"
	"log/slog"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/waitroom/waitroom/ids"
	"github.com/waitroom/waitroom/notify"
	"github.com/waitroom/waitroom/testenv"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// publicURL is the base of every test's links.
const publicURL = "https://tickets.example"

// clock is the real time moved on by what a test adds: the deliverer's back-off still runs in real time,
// and an hour of the per-address limit or a link's lifetime passes at once.
type clock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// fast are settings that poll and retry within milliseconds, sending through mp.
func fast(mp *testenv.Mailpit, c *clock) notify.Settings {
	return notify.Settings{SMTPURL: mp.URL("smtp+insecure"), From: "Waitroom <tickets@tickets.example>", PublicURL: publicURL,
		Every: 20 * time.Millisecond, FirstRetry: 30 * time.Millisecond, MaxRetry: 200 * time.Millisecond, SendTimeout: 5 * time.Second,
		Now: c.Now}
}

// service is a Service with its own metrics and log.
type service struct {
	*notify.Service
	metrics *notify.Metrics
	log     *testenv.SyncBuffer
}

func newService(t *testing.T, db *sqlx.DB, s notify.Settings) *service {
	t.Helper()
	svc := &service{metrics: notify.NewMetrics(prometheus.NewRegistry()), log: &testenv.SyncBuffer{}}
	var err error
	svc.Service, err = notify.New(db, s, svc.metrics, slog.New(slog.NewTextHandler(svc.log, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// run runs svc until the test ends.
func (svc *service) run(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	})
}

// poll polls once, failing t on an error.
func (svc *service) poll(t *testing.T) int {
	t.Helper()
	n, err := svc.Poll(t.Context())
	if err != nil {
		t.Fatalf("Poll: %v", err)
	}
	return n
}

func (svc *service) attempts(outcome string) int {
	return int(testutil.ToFloat64(svc.metrics.Attempts.WithLabelValues(outcome)))
}

// screening creates a screening whose show is an hour away and returns its id and name.
func screening(t *testing.T, env *testenv.Env) (id, name string) {
	t.Helper()
	id = testenv.Unique("s")
	env.Demo(t, id, 1, 4)
	return id, "Test " + id
}

// subscribed keeps email in lang for a new token of screening and returns the token.
func subscribed(t *testing.T, svc *service, screening, email, lang string) string {
	t.Helper()
	token := ids.New()
	if err := svc.Subscribe(t.Context(), screening, token, email, lang); err != nil {
		t.Fatalf("Subscribe(%q, %q): %v", email, lang, err)
	}
	return token
}

// due writes notice n, failing t on an error, and returns how many e-mails it wrote.
func due(t *testing.T, svc *service, n notify.Notice) int {
	t.Helper()
	got, err := svc.Due(t.Context(), n)
	if err != nil {
		t.Fatalf("Due(%+v): %v", n, err)
	}
	return got
}

var claimLink = regexp.MustCompile(`https://tickets\.example/s/([^/?\s]+)\?claim=([A-Za-z0-9_-]{43})\b`)

// link reads the one link out of an e-mail: its screening and nonce.
func link(t *testing.T, m testenv.Mail) (screening, nonce string) {
	t.Helper()
	all := claimLink.FindAllStringSubmatch(m.Text, -1)
	if len(all) != 1 {
		t.Fatalf("e-mail %q carries %d links, want 1:\n%s", m.Subject, len(all), m.Text)
	}
	return all[0][1], all[0][2]
}

// to is the e-mails to address among mails.
func to(mails []testenv.Mail, address string) []testenv.Mail {
	var out []testenv.Mail
	for _, m := range mails {
		for _, a := range m.To {
			if a.Address == address {
				out = append(out, m)
			}
		}
	}
	return out
}

// row is an outbox row as the tests read it.
type row struct {
	State     string  `db:"state"`
	Attempts  int     `db:"attempts"`
	Nonce     *string `db:"link_nonce"`
	LastError *string `db:"last_error"`
}

// outbox reads every outbox row of screening, oldest first.
func outbox(t *testing.T, db *sqlx.DB, screening string) []row {
	t.Helper()
	var rows []row
	if err := db.Select(&rows, db.Rebind(`SELECT state, attempts, link_nonce, last_error FROM notify_outbox WHERE screening_id = ? ORDER BY id`), screening); err != nil {
		t.Fatal(err)
	}
	return rows
}

// eventually waits up to within for ok, failing t with what() if it never holds.
func eventually(t *testing.T, within time.Duration, ok func() bool, what func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", within, what())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
