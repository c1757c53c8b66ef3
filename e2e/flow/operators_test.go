// What an operator does to a running server: open a sale with no restart, pause, resume and pace it; and
// a user who abandons the line.

package flow

import (
	"net/http"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

// An operator creates a screening on a running server; its sale opens on time with no restart: those who
// came early wait in the pre-queue with the opening time, are placed at the opening, told how long the wait
// is, told when the operator pauses and resumes, and admitted at the pace the operator sets live.
func TestOperatorOpensASaleWithNoRestart(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		srv := apptest.Start(t, env, map[string]string{
			"WAITROOM_ADMIN_KEY":            apptest.AdminKey,
			"WAITROOM_DEMO_ENABLED":         "false",
			"WAITROOM_ADMISSION_MAX_ACTIVE": "100",
		})
		opens := time.Now().Add(2500 * time.Millisecond).UTC().Truncate(time.Millisecond)
		var created struct {
			ID        string `json:"id"`
			State     string `json:"state"`
			Admission struct {
				Interval  string `json:"interval"`
				BatchSize int    `json:"batch_size"`
			} `json:"admission"`
		}
		code := srv.Admin(t, http.MethodPost, "/screenings", map[string]any{
			"id": "live", "name": "Live", "starts_at": opens.Add(time.Hour), "sale_opens_at": opens,
			"rows": 2, "seats_per_row": 5, "admission": map[string]any{"interval": "400ms", "batch_size": 1, "max_active": 10},
		}, &created)
		if code != http.StatusCreated || created.State != "upcoming" || created.Admission.BatchSize != 1 || created.Admission.Interval != "400ms" {
			t.Fatalf("POST /api/admin/screenings = %d %+v, want 201, upcoming, batch 1 every 400ms", code, created)
		}

		clients := make([]*testenv.Socket, 3)
		for i := range clients {
			clients[i] = srv.Dial(t, "live", "")
			m := clients[i].Next(t, 5*time.Second)
			at, _ := time.Parse(time.RFC3339Nano, m.OpensAt)
			if m.Type != "prequeue" || !m.Inserted || m.Total != int64(i+1) || !at.Equal(opens) {
				t.Fatalf("client %d's first message = %+v, want prequeue, inserted, %d waiting, opening at %v", i, m, i+1, opens)
			}
		}
		if time.Now().After(opens) {
			t.Fatal("the sale opened before every client joined the pre-queue")
		}

		// One a tick: three admissions take three ticks; the rate is known from the second on.
		admittedAt := make([]time.Time, len(clients))
		sawETA := false
		for i, c := range clients {
			_, before := c.Until(t, "admitted", 10*time.Second)
			admittedAt[i] = time.Now()
			for _, m := range before {
				if m.Type != "position" {
					t.Errorf("client %d got %+v before its pass, want only positions", i, m)
				}
				if m.ETASeconds != nil {
					sawETA = true
					if *m.ETASeconds < 1 {
						t.Errorf("client %d: position %+v with eta_seconds %d, want at least 1", i, m, *m.ETASeconds)
					}
				}
			}
			if admittedAt[i].Before(opens) {
				t.Errorf("client %d admitted at %v, before the sale opened at %v", i, admittedAt[i], opens)
			}
		}
		if !sawETA {
			t.Error("no position carried eta_seconds, want one once two admissions measured the rate")
		}

		// Pause: the line is told, and nobody is admitted until the operator resumes.
		d, e := srv.Dial(t, "live", ""), srv.Dial(t, "live", "")
		for _, c := range []*testenv.Socket{d, e} {
			if m := c.Next(t, 5*time.Second); m.Type != "queued" {
				t.Fatalf("first message after the opening = %+v, want queued", m)
			}
		}
		var paused struct {
			State string `json:"state"`
		}
		if code := srv.Admin(t, http.MethodPost, "/screenings/live/pause", nil, &paused); code != http.StatusOK || paused.State != "paused" {
			t.Fatalf("pause = %d %+v, want 200, paused", code, paused)
		}
		for _, c := range []*testenv.Socket{d, e} {
			if m, before := c.Until(t, "paused", 5*time.Second); len(before) > 0 && before[len(before)-1].Type == "admitted" {
				t.Fatalf("admitted before the pause reached it: %+v %+v", before, m)
			}
		}
		// A newcomer while paused is told at once.
		f := srv.Dial(t, "live", "")
		if m := f.Next(t, 5*time.Second); m.Type != "queued" || !m.Paused {
			t.Fatalf("first message while paused = %+v, want queued with paused", m)
		}
		// The next tick skips, paused, and counts it: wait for the count (a tick is due every 400 ms).
		var line struct {
			Line struct {
				Waiting int            `json:"waiting"`
				Paused  bool           `json:"paused"`
				Skips   map[string]int `json:"skips"`
			} `json:"line"`
		}
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			code := srv.Admin(t, http.MethodGet, "/screenings/live", nil, &line)
			if code == http.StatusOK && line.Line.Waiting == 3 && line.Line.Paused && line.Line.Skips["PAUSED"] > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET live while paused = %d %+v, want 3 waiting, paused, PAUSED skips counted", code, line)
			}
		}

		// Live change of pace, then resume: the three waiting are admitted in one tick.
		var settings struct {
			BatchSize int `json:"batch_size"`
		}
		if code := srv.Admin(t, http.MethodPatch, "/screenings/live/admission", map[string]any{"batch_size": 5}, &settings); code != http.StatusOK || settings.BatchSize != 5 {
			t.Fatalf("PATCH admission = %d %+v, want 200, batch_size 5", code, settings)
		}
		// The PATCH asks the scheduler to read the settings at once, and it reads them every 2 s anyway;
		// nothing outside shows when its loop took them (no metric or field carries a loop's batch size),
		// so the wait covers a whole refresh.
		time.Sleep(2500 * time.Millisecond)
		if code := srv.Admin(t, http.MethodPost, "/screenings/live/resume", nil, nil); code != http.StatusOK {
			t.Fatalf("resume = %d, want 200", code)
		}
		expires := map[string]bool{}
		for i, c := range []*testenv.Socket{d, e, f} {
			// While paused the line may still move (f joined): positions, without a wait estimate.
			_, before := c.Until(t, "resumed", 5*time.Second)
			for _, m := range before {
				if m.Type != "position" || m.ETASeconds != nil {
					t.Errorf("waiting client %d got %+v while paused, want only positions without eta_seconds", i, m)
				}
			}
			adm, _ := c.Until(t, "admitted", 5*time.Second)
			expires[adm.ExpiresAt] = true
		}
		if len(expires) != 1 {
			t.Errorf("three waiting admitted with expiries %v, want one admission (batch_size 5 applied live)", expires)
		}
	})
}

// A waiting user whose socket stays gone past queue.grace leaves the line, so no admission is spent on
// them; one who comes back within it keeps the place.
func TestAbandonedUserLeavesTheLine(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		srv := apptest.Start(t, env, map[string]string{
			"WAITROOM_ADMIN_KEY":            apptest.AdminKey,
			"WAITROOM_DEMO_ENABLED":         "false",
			"WAITROOM_QUEUE_GRACE":          "1s",
			"WAITROOM_ADMISSION_INTERVAL":   "300ms",
			"WAITROOM_ADMISSION_BATCH_SIZE": "1",
			"WAITROOM_ADMISSION_MAX_ACTIVE": "1",
		})
		now := time.Now().UTC()
		if code := srv.Admin(t, http.MethodPost, "/screenings", map[string]any{
			"id": "gone", "name": "Gone", "starts_at": now.Add(time.Hour), "sale_opens_at": now.Add(-time.Minute), "seats": []string{"A1", "A2"},
		}, nil); code != http.StatusCreated {
			t.Fatalf("create = %d, want 201", code)
		}
		holder := srv.Dial(t, "gone", "")
		if m := holder.Next(t, 5*time.Second); m.Type != "queued" {
			t.Fatalf("first message = %+v, want queued", m)
		}
		holder.Until(t, "admitted", 5*time.Second) // holds the only slot for active_ttl: the line stands still

		b := srv.Dial(t, "gone", "")
		qb := b.Next(t, 5*time.Second)
		c := srv.Dial(t, "gone", "")
		qc := c.Next(t, 5*time.Second)
		if qb.Rank != 1 || qc.Rank != 2 {
			t.Fatalf("b and c queued at ranks %d and %d, want 1 and 2", qb.Rank, qc.Rank)
		}

		// c refreshes within the grace: the same place.
		c.Close()
		// The hub counts a socket off in Redis before it stops counting it among its sockets: once holder
		// and b are all it has, c is noted gone.
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if n, _ := apptest.MetricSeries(t, http.DefaultClient, srv.OpsURL, "waitroom_hub_sockets"); n == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("c's close was not counted off within 5s: the hub still counts 3 sockets")
			}
		}
		c = srv.Dial(t, "gone", qc.Token)
		if m := c.Next(t, 5*time.Second); m.Type != "queued" || m.Inserted || m.Rank != 2 {
			t.Fatalf("c back within the grace: %+v, want queued at rank 2, not inserted", m)
		}

		// b goes for good: after the grace, a tick drops it and c moves up.
		b.Close()
		var pos testenv.Message
		for pos.Rank != 1 {
			pos, _ = c.Until(t, "position", 5*time.Second)
		}
		if pos.Total != 1 {
			t.Errorf("c's position after b was dropped = %+v, want rank 1 of 1", pos)
		}
		// The tick counts after it published: give the metric a moment.
		n := 0
		for deadline := time.Now().Add(2 * time.Second); n != 1 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			n = apptest.MetricValue(t, http.DefaultClient, srv.OpsURL, "waitroom_queue_abandoned_total", "gone")
		}
		if n != 1 {
			t.Errorf("waitroom_queue_abandoned_total{screening=gone} = %d, want 1", n)
		}
		var figures struct {
			Line struct {
				Abandoned int `json:"abandoned_total"`
			} `json:"line"`
		}
		if code := srv.Admin(t, http.MethodGet, "/screenings/gone", nil, &figures); code != http.StatusOK || figures.Line.Abandoned != 1 {
			t.Errorf("GET /api/admin/screenings/gone = %d %+v, want abandoned_total 1", code, figures)
		}
		// b comes back too late: a new place at the end.
		b = srv.Dial(t, "gone", qb.Token)
		if m := b.Next(t, 5*time.Second); m.Type != "queued" || !m.Inserted || m.Rank != 2 {
			t.Errorf("b back after the grace: %+v, want queued anew at rank 2", m)
		}
	})
}
