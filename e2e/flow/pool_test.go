// The database pool is open before the first request needs it.

package flow

import (
	"net/http"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

// A started server opens database.min_conns connections before any request needs them, so a sale's first
// transactions find them open. PostgreSQL only: SQLite's pool is one connection, open from the migration on.
func TestServerOpensItsDatabasePoolAheadOfDemand(t *testing.T) {
	env := testenv.New(t, testenv.Real)
	s := apptest.Start(t, env, map[string]string{"WAITROOM_DATABASE_MIN_CONNS": "6", "WAITROOM_DEMO_ENABLED": "false"})
	const want = 6
	got := -1
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if n, ok := apptest.MetricSeries(t, http.DefaultClient, s.OpsURL, `go_sql_open_connections{db_name="waitroom"}`); ok {
			got = n
		}
		// At least: the scheduler may open one more if it reads while the warm-up holds the rest.
		if got >= want {
			return
		}
	}
	t.Errorf("go_sql_open_connections = %d within 10s of start, want at least %d (database.min_conns 6)", got, want)
}
