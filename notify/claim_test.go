// A link's promises: it opens once, for the token it was made for; a second click, an expired link and a
// forged one are refused, each with its reason, and a refusal changes nothing.

package notify_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/waitroom/waitroom/notify"
	"github.com/waitroom/waitroom/testenv"
)

// mailedLink subscribes a token, writes and sends its admission, and returns the token and the nonce its
// e-mail carries.
func mailedLink(t *testing.T, env *testenv.Env, svc *service, mp *testenv.Mailpit, id string) (token, nonce string) {
	t.Helper()
	token = subscribed(t, svc, id, "ann@buyer.example", "en")
	due(t, svc, notify.Notice{Screening: id, Kind: notify.Admission, DedupKey: "admit:" + id, Tokens: []string{token}})
	svc.poll(t)
	_, nonce = link(t, mp.WaitMails(t, 1, 5*time.Second)[0])
	return token, nonce
}

// linkRow is a link's row, to see that a refusal changed nothing.
type linkRow struct {
	Token     string     `db:"token"`
	ExpiresAt time.Time  `db:"expires_at"`
	UsedAt    *time.Time `db:"used_at"`
}

func links(t *testing.T, db *sqlx.DB, screening string) []linkRow {
	t.Helper()
	var rows []linkRow
	if err := db.Select(&rows, db.Rebind(`SELECT token, expires_at, used_at FROM notify_links WHERE screening_id = ? ORDER BY nonce_hash`), screening); err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestALinkOpensOnce(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		mp := testenv.StartMailpit(t, testenv.MailpitOptions{})
		svc := newService(t, env.DB, fast(mp, &clock{}))
		id, _ := screening(t, env)
		token, nonce := mailedLink(t, env, svc, mp, id)
		screening, got, err := svc.Claim(t.Context(), nonce)
		if err != nil || screening != id || got != token {
			t.Fatalf("Claim = %q, %q, %v; want %q, %q", screening, got, err, id, token)
		}
		before := links(t, env.DB, id)
		if _, _, err := svc.Claim(t.Context(), nonce); !errors.Is(err, notify.ErrLinkUsed) {
			t.Errorf("a second Claim = %v, want ErrLinkUsed", err)
		}
		if after := links(t, env.DB, id); len(after) != 1 || !after[0].UsedAt.Equal(*before[0].UsedAt) {
			t.Errorf("the second click changed the link: %+v, then %+v", before, after)
		}
		if n := testutil.ToFloat64(svc.metrics.Claims.WithLabelValues("used")); n != 1 {
			t.Errorf("claims_total{outcome=used} = %v, want 1", n)
		}
	})
}

func TestAnExpiredLinkIsRefusedAndStaysUnused(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		mp := testenv.StartMailpit(t, testenv.MailpitOptions{})
		c := &clock{}
		s := fast(mp, c)
		s.LinkTTL = 10 * time.Minute
		svc := newService(t, env.DB, s)
		id, _ := screening(t, env)
		_, nonce := mailedLink(t, env, svc, mp, id)
		c.Advance(10*time.Minute + time.Second)
		before := links(t, env.DB, id)
		if _, _, err := svc.Claim(t.Context(), nonce); !errors.Is(err, notify.ErrLinkExpired) {
			t.Errorf("Claim after link_ttl = %v, want ErrLinkExpired", err)
		}
		if after := links(t, env.DB, id); len(after) != 1 || after[0].UsedAt != nil || !after[0].ExpiresAt.Equal(before[0].ExpiresAt) {
			t.Errorf("the refusal changed the link: %+v, then %+v", before, after)
		}
	})
}

func TestAForgedLinkIsUnknown(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		mp := testenv.StartMailpit(t, testenv.MailpitOptions{})
		svc := newService(t, env.DB, fast(mp, &clock{}))
		id, _ := screening(t, env)
		_, nonce := mailedLink(t, env, svc, mp, id)
		before := links(t, env.DB, id)
		flipped := []byte(nonce)
		flipped[0] ^= 1
		for _, forged := range []string{"", "x", strings.Repeat("A", 43), string(flipped), nonce + "A", nonce[:42], nonce + "=", " " + nonce, strings.ToUpper(nonce)} {
			if forged == nonce {
				continue
			}
			if _, _, err := svc.Claim(t.Context(), forged); !errors.Is(err, notify.ErrLinkUnknown) {
				t.Errorf("Claim(%q) = %v, want ErrLinkUnknown", forged, err)
			}
		}
		if after := links(t, env.DB, id); len(after) != 1 || after[0].UsedAt != nil {
			t.Errorf("the forged claims changed the link: %+v, then %+v", before, after)
		}
		if _, _, err := svc.Claim(t.Context(), nonce); err != nil {
			t.Errorf("the real link after the forged ones: %v, want it to open", err)
		}
	})
}
