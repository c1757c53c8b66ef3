// The results of a run: each burst's figures, the ratios against the targets, the table printed at the end
// and the JSON written with -json.

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// ms is a duration that prints, and encodes in JSON, as milliseconds.
type ms time.Duration

func (d ms) String() string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64) + "ms"
}

func (d ms) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, float64(d)/float64(time.Millisecond), 'f', 3, 64), nil
}

// result is one burst: its outcomes, latencies, and what it cost the database and the pool.
type result struct {
	Name        string         `json:"name"`
	Requests    int            `json:"requests"`
	Created     int            `json:"created_201"`
	Conflict    int            `json:"conflict_409"`
	Other       int            `json:"other"`
	OtherDetail map[string]int `json:"other_detail,omitempty"`

	Avg  ms `json:"avg_ms"`
	P50  ms `json:"p50_ms"`
	P95  ms `json:"p95_ms"`
	P99  ms `json:"p99_ms"`
	Max  ms `json:"max_ms"`
	Wall ms `json:"wall_ms"` // from the release of the burst to its last response
	// Dials is the TCP connections the load generator opened during the burst (0 when warm).
	Dials int64 `json:"dials"`
	// CreatedAvg and ConflictAvg are the average latency of the 201s and of the 409s.
	CreatedAvg  ms `json:"avg_201_ms"`
	ConflictAvg ms `json:"avg_409_ms"`

	// Xacts is the transactions the bench database counted from just before the burst until statsSettle
	// after it (Window); IdleXacts is the same over an idle window of equal length right after.
	Xacts     int64 `json:"db_xacts"`
	IdleXacts int64 `json:"db_xacts_idle_window"`
	Window    ms    `json:"window_ms"`
	// Sessions and IdleSessions are the connections established to the bench database in the same windows.
	Sessions     int64 `json:"db_sessions"`
	IdleSessions int64 `json:"db_sessions_idle_window"`
	// WindowStart and IdleEnd bound the two windows (the idle one starts where the burst's ends).
	WindowStart time.Time `json:"window_start"`
	IdleEnd     time.Time `json:"idle_end"`

	PoolWaits    int64 `json:"pool_wait_count"`
	PoolWaitTime ms    `json:"pool_wait_ms"`
	// ServerCPU is the server process's CPU time over the burst (-1: not the server's burst); RedisCommands
	// and RedisCPU are the Redis server's commands and CPU time over it.
	ServerCPU     ms    `json:"server_cpu_ms"`
	RedisCommands int64 `json:"redis_commands"`
	RedisCPU      ms    `json:"redis_cpu_ms"`

	// PeakPoolWaiters is the baseline's most requests waiting for a connection at once (nil for the server).
	PeakPoolWaiters *int64 `json:"peak_pool_waiters,omitempty"`
}

// NetXacts is the burst's transactions less the background.
func (r result) NetXacts() int64 { return r.Xacts - r.IdleXacts }

// verification is what the database holds for a screening after its burst.
type verification struct {
	Screening     string `json:"screening"`
	OK            bool   `json:"ok"`
	Reservations  int    `json:"reservations"`
	SeatRows      int    `json:"seat_rows"`
	DistinctSeats int    `json:"distinct_seats"`
	// Status is the status every reservation must have (held in hold checkout, else confirmed);
	// WithStatus counts those that have it.
	Status     string   `json:"status"`
	WithStatus int      `json:"with_status"`
	Twice      []string `json:"sold_twice,omitempty"`
	Text       string   `json:"text"`
}

// report is the whole run.
type report struct {
	Users       int    `json:"users"`
	Seats       int    `json:"seats"`
	Database    string `json:"database"`
	Postgres    string `json:"postgres"`
	Redis       string `json:"redis"`
	ColdCatalog bool   `json:"cold_catalog"`
	Warm        bool   `json:"warm"`
	// Checkout is the server's booking.checkout for ours (-checkout).
	Checkout string `json:"checkout"`
	// LoadAvg is /proc/loadavg when the bursts began: other work on the machine shows here.
	LoadAvg string `json:"load_avg"`

	Runs []result `json:"runs"`

	// BaselineOverOursAvg is baseline avg ÷ ours avg (target ≥ 20); OursOverFloorP99 is ours p99 ÷ floor p99
	// (target ≤ 1.5).
	BaselineOverOursAvg float64 `json:"baseline_avg_over_ours_avg"`
	OursOverFloorP99    float64 `json:"ours_p99_over_floor_p99"`

	Verification         verification `json:"verification_ours"`
	BaselineVerification verification `json:"verification_baseline"`
	ServerProblems       []string     `json:"server_log_warnings,omitempty"`
	// Maintenance is what autovacuum did in the bench database during the run (its transactions count in
	// pg_stat_database like any other).
	Maintenance []maintenance `json:"autovacuum,omitempty"`
}

// The targets the requirement sets.
const (
	targetAvgRatio = 20.0
	targetP99Ratio = 1.5
)

func (rep *report) run(name string) (result, bool) {
	for _, r := range rep.Runs {
		if r.Name == name {
			return r, true
		}
	}
	return result{}, false
}

// finish computes the ratios.
func (rep *report) finish() {
	ours, _ := rep.run("ours")
	floor, _ := rep.run("floor")
	base, _ := rep.run("baseline")
	rep.BaselineOverOursAvg = ratio(base.Avg, ours.Avg)
	rep.OursOverFloorP99 = ratio(ours.P99, floor.P99)
}

func ratio(a, b ms) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func (rep *report) print(w io.Writer) {
	fmt.Fprintf(w, "\nseed-2 replay: %d admitted users at once on %d seats (A1..A%d); user i wants seat A(i%%%d+1), so %d users per seat\n",
		rep.Users, rep.Seats, rep.Seats, rep.Seats, rep.Users/rep.Seats)
	fmt.Fprintf(w, "PostgreSQL %s, Redis %s, load average %s before the bursts; one burst each, in the order floor, ours, baseline;\n",
		rep.Postgres, rep.Redis, rep.LoadAvg)
	if rep.Warm {
		fmt.Fprintf(w, "warm (-warm): every user's burst request goes on a connection it kept alive from one GET just before (ours: the seat map);\nlatency is client-side, per request, all outcomes\n")
	} else {
		fmt.Fprintf(w, "every burst on fresh connections, one per user, no warm-up; latency is client-side, per request, all outcomes\n")
	}
	fmt.Fprintf(w, "  floor:    POST /api/bench/floor of the server (answers 409 at once, nothing else)\n")
	catalog := "after one GET …/seats (as clients do; fills the seat catalog the socket connect fills)"
	if rep.ColdCatalog {
		catalog = "cold: the server had served no request for the screening (-cold-catalog)"
	}
	fmt.Fprintf(w, "  ours:     POST /api/screenings/%s/reservations of the server, pool of 30, %s checkout; %s\n", oursScreening, rep.Checkout, catalog)
	fmt.Fprintf(w, "  baseline: BEGIN; SELECT … FOR UPDATE on the seat row; check; INSERT; COMMIT (or ROLLBACK, 409) — pool of %d, in the bench process\n\n", baselinePoolSize)
	writeTable(w, rep.Runs)
	fmt.Fprintln(w)
	writeCostTable(w, rep.Runs)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "baseline avg ÷ ours avg = %.1f×  (target ≥ %g×: %s)\n", rep.BaselineOverOursAvg, targetAvgRatio, verdict(rep.BaselineOverOursAvg >= targetAvgRatio))
	fmt.Fprintf(w, "ours p99 ÷ floor p99    = %.2f×  (target ≤ %g×: %s)\n", rep.OursOverFloorP99, targetP99Ratio, verdict(rep.OursOverFloorP99 <= targetP99Ratio && rep.OursOverFloorP99 > 0))
	if base, ok := rep.run("baseline"); ok {
		symptom := "= 0: the seed's symptom did not show"
		if base.PoolWaits > 0 {
			symptom = "> 0: the seed's symptom"
		}
		peak := ""
		if base.PeakPoolWaiters != nil {
			peak = fmt.Sprintf("; up to %d requests at once waited in the pool for a connection, or for one to open (the seed saw 162 threads waiting)", *base.PeakPoolWaiters)
		}
		fmt.Fprintf(w, "baseline pool waits     = %d %s%s\n", base.PoolWaits, symptom, peak)
	}
	fmt.Fprintf(w, "XACTS: pg_stat_database xact_commit+xact_rollback of the bench database, from just before the burst to %s after it;\n", statsSettle)
	fmt.Fprintf(w, "       IDLE: the same over an equally long idle window right after (the server's scheduler lists screenings every 2 s,\n")
	fmt.Fprintf(w, "       autovacuum visits); NET = XACTS − IDLE. SESS: connections opened in the burst window. PostgreSQL counts one\n")
	fmt.Fprintf(w, "       per transaction, one per new connection, and one per lone statement (lib/pq in binary_parameters mode: Parse+Bind+Execute+Sync)\n")
	fmt.Fprintf(w, "POOL WAITS: ours and floor from the server's /metrics (go_sql_wait_*{db_name=\"waitroom\"}), baseline from sql.DB.Stats()\n")
	fmt.Fprintf(w, "SERVER CPU: the server process over the burst (process_cpu_seconds_total; the baseline runs in the bench process);\n")
	fmt.Fprintf(w, "       REDIS: commands and CPU of the whole Redis over the burst (other users of it count too)\n")
	for _, r := range rep.Runs {
		if len(r.OtherDetail) > 0 {
			fmt.Fprintf(w, "OTHER %s: %s\n", r.Name, otherText(r.OtherDetail))
		}
	}
	fmt.Fprintf(w, "VERIFICATION ours:     %s\n", rep.Verification.Text)
	fmt.Fprintf(w, "VERIFICATION baseline: %s\n", rep.BaselineVerification.Text)
	for _, m := range rep.Maintenance {
		fmt.Fprintf(w, "AUTOVACUUM %s of %s at %s, %s\n", m.Kind, m.Table, m.At.Format("15:04:05.000"), rep.windowOf(m.At))
	}
	if n := len(rep.ServerProblems); n > 0 {
		fmt.Fprintf(w, "SERVER LOG: %d warnings/errors, first: %s\n", n, rep.ServerProblems[0])
	}
}

// windowOf names the window t fell in.
func (rep *report) windowOf(t time.Time) string {
	for _, r := range rep.Runs {
		mid := r.WindowStart.Add(r.IdleEnd.Sub(r.WindowStart) / 2)
		switch {
		case !t.Before(r.WindowStart) && t.Before(mid):
			return "in the " + r.Name + " burst's window"
		case !t.Before(mid) && t.Before(r.IdleEnd):
			return "in the " + r.Name + " idle window"
		}
	}
	return "outside every window"
}

// writeTable prints one row per burst.
func writeTable(w io.Writer, runs []result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "RUN\t201\t409\tOTHER\tAVG\tP95\tP99\tMAX\tWALL\tXACTS\tIDLE\tNET\tSESS\tPOOL WAITS\tPOOL WAIT TIME\t")
	for _, r := range runs {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t\n", r.Name, r.Created, r.Conflict, r.Other,
			r.Avg, r.P95, r.P99, r.Max, r.Wall, r.Xacts, r.IdleXacts, r.NetXacts(), r.Sessions, r.PoolWaits, r.PoolWaitTime)
	}
	tw.Flush()
}

// writeCostTable prints what each burst cost the server process and Redis.
func writeCostTable(w io.Writer, runs []result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "RUN\tSERVER CPU\tREDIS COMMANDS\tREDIS CPU\t201 AVG\t409 AVG\tDIALS\t")
	for _, r := range runs {
		cpu := "-"
		if r.ServerCPU >= 0 {
			cpu = r.ServerCPU.String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%d\t\n", r.Name, cpu, r.RedisCommands, r.RedisCPU, r.CreatedAvg, r.ConflictAvg, r.Dials)
	}
	tw.Flush()
}

func otherText(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s × %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func verdict(met bool) string {
	if met {
		return "met"
	}
	return "MISSED"
}

func (rep *report) writeJSON(path string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
