// An admission whose publisher died before publishing still reaches its sockets.

package faults

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// An instance that admits and dies before it publishes leaves Redis with the admission and every instance
// without its event, and with no later event to show the gap (here no tick comes for an hour). The
// instances holding the sockets find the event missing by themselves: the admitted get their pass, the
// waiting their new rank; and a reconnect gets the pass too. Nobody is lost.
func TestAdmissionWhosePublisherDiedStillReachesItsSockets(t *testing.T) {
	env := testenv.New(t, testenv.Real)
	srv := apptest.Start(t, env, map[string]string{
		"WAITROOM_ADMISSION_INTERVAL":   "1h",
		"WAITROOM_ADMISSION_MAX_ACTIVE": "10",
	})
	// The scheduler opens the demo's line when it first finds the sale, and the instance that opens a line
	// admits at once: users who arrive before that would be admitted by it, not by the test's admission.
	// That tick is over once its number is recorded and its lock released.
	ticked, lock := queue.Key(env.Prefix, "demo", "tick"), queue.Key(env.Prefix, "demo", "lock")
	for deadline := time.Now().Add(10 * time.Second); env.Redis.Exists(context.Background(), ticked).Val() == 0 ||
		env.Redis.Exists(context.Background(), lock).Val() == 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the scheduler did not open the demo's line and tick within 10s")
		}
	}
	clients := make([]*testenv.Socket, 3)
	tokens := make([]string, len(clients))
	for i := range clients {
		clients[i] = srv.Dial(t, "demo", "")
		m := clients[i].Next(t, 5*time.Second)
		if m.Type != "queued" || m.Rank != int64(i+1) {
			t.Fatalf("user %d's first message = %+v, want queued at rank %d", i, m, i+1)
		}
		tokens[i] = m.Token
	}

	// The server follows the screening once it has read its line (the first socket's subscription): an
	// admission before that is simply in the line it reads, not a missed event.
	for deadline := time.Now().Add(10 * time.Second); hubLineReads(t, srv) < 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the server did not read the screening's line within 10s")
		}
	}
	// The read itself, after the count: the counter is raised as the read begins, and its end shows
	// nowhere (it pushes nothing when no rank changed), so this waits for it.
	time.Sleep(200 * time.Millisecond)

	// The dead instance's admission: the script ran, the publish never happened.
	q := queue.New(env.Redis, env.Prefix)
	res, err := q.Admit(context.Background(), "demo", time.Now(), queue.Settings{BatchSize: 2, MaxActive: 10, ActiveTTL: time.Minute})
	if err != nil || len(res.Admitted) != 2 || res.Admitted[0] != tokens[0] || res.Admitted[1] != tokens[1] {
		t.Fatalf("Admit = %v, %v; want the first two users", res.Admitted, err)
	}
	admittedAt := time.Now()
	for i := range 2 {
		adm, before := clients[i].Until(t, "admitted", 15*time.Second)
		if adm.ExpiresAt == "" || adm.Pass == "" {
			t.Errorf("user %d's admission = %+v, want a pass", i, adm)
		}
		if len(before) > 0 {
			t.Logf("user %d got %v first", i, before)
		}
	}
	t.Logf("passes delivered %v after the unpublished admission", time.Since(admittedAt).Round(time.Millisecond))
	var pos testenv.Message
	for pos.Rank != 1 {
		pos, _ = clients[2].Until(t, "position", 15*time.Second)
	}
	if pos.Total != 1 {
		t.Errorf("the third user after the unpublished admission: %+v, want rank 1 of 1", pos)
	}

	// And a reconnect hands the pass over at once.
	clients[0].Close()
	again := srv.Dial(t, "demo", tokens[0])
	if m := again.Next(t, 5*time.Second); m.Type != "admitted" || m.Pass == "" {
		t.Errorf("reconnect of an admitted user = %+v, want admitted with its pass", m)
	}
}

// hubLineReads is the server's waitroom_hub_line_reads_total.
func hubLineReads(t *testing.T, srv *apptest.Server) int {
	t.Helper()
	n, _ := apptest.MetricSeries(t, http.DefaultClient, srv.OpsURL, "waitroom_hub_line_reads_total")
	return n
}
