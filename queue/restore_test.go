// Tests of rebuilding a line Redis lost.

package queue_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// forgetLine makes Redis forget everything of the screening, as a restart without persistence does.
func forgetLine(t *testing.T, env *testenv.Env, screening string) {
	t.Helper()
	ctx := context.Background()
	keys, err := env.Redis.Keys(ctx, queue.Key(env.Prefix, screening, "*")).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Redis.Del(ctx, keys...).Err(); err != nil {
		t.Fatal(err)
	}
}

// After Redis lost a line, Restore puts back what an instance's sockets know: the waiting keep their order
// with ranks exact from the returned line, the admitted keep their slot, a newcomer who registered after the
// loss and took a restored token's number moves to the end, and admission holds while the other instances
// rebuild.
func TestRestoreRebuildsALostLine(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		q := queue.New(env.Redis, env.Prefix)
		tokens := registerN(t, q, screening, 4) // seqs 1..4
		now := time.Now()
		res, err := q.Admit(ctx, screening, now, settings(1, 10))
		if err != nil || !slices.Equal(res.Admitted, tokens[:1]) {
			t.Fatalf("Admit = %v, %v; want the first", res.Admitted, err)
		}
		forgetLine(t, env, screening)
		newcomer, err := q.Register(ctx, screening, "")
		if err != nil || newcomer.Seq != 1 {
			t.Fatalf("Register after the loss = seq %d, %v; want 1 (the counter is gone too)", newcomer.Seq, err)
		}

		// This instance knew tokens 0 (admitted), 2 and 3 (waiting); token 1's socket was elsewhere.
		line, restored, err := q.Restore(ctx, screening, []queue.Standing{
			{Token: tokens[0], ExpiresAt: res.ExpiresAt},
			{Token: tokens[2], Seq: 3},
			{Token: tokens[3], Seq: 4},
		})
		if err != nil || restored != 3 {
			t.Fatalf("Restore = %d restored, %v; want 3", restored, err)
		}
		wantOrder := []string{tokens[2], tokens[3], newcomer.Token}
		var got []string
		for _, z := range members(t, env, screening, "waiting") {
			got = append(got, z.Member.(string))
		}
		if !slices.Equal(got, wantOrder) {
			t.Errorf("line after the rebuild = %v, want %v (the newcomer moved to the end)", got, wantOrder)
		}
		for i, tok := range wantOrder {
			e := status(t, q, screening, tok)
			if rank, ok := line.Rank(e.Seq); !ok || rank != e.ZeroBasedRank || rank != int64(i) {
				t.Errorf("token %d: Line.Rank(%d) = %d, %v; ZRANK %d; want %d", i, e.Seq, rank, ok, e.ZeroBasedRank, i)
			}
		}
		if e := status(t, q, screening, tokens[0]); e.State != queue.Admitted || !e.ExpiresAt.Equal(res.ExpiresAt) {
			t.Errorf("the admitted token after the rebuild = %s until %v, want admitted until %v", e.State, e.ExpiresAt, res.ExpiresAt)
		}

		// Token 1's instance rebuilds a moment later: it takes its place back, ahead of the others.
		line, restored, err = q.Restore(ctx, screening, []queue.Standing{{Token: tokens[1], Seq: 2}})
		if err != nil || restored != 1 {
			t.Fatalf("second Restore = %d restored, %v; want 1", restored, err)
		}
		if e := status(t, q, screening, tokens[1]); e.State != queue.Waiting || e.ZeroBasedRank != 0 {
			t.Errorf("token 1 after its instance rebuilt = %s at rank %d, want waiting first", e.State, e.ZeroBasedRank)
		}
		if rank, ok := line.Rank(2); !ok || rank != 0 {
			t.Errorf("Line.Rank(2) after the second rebuild = %d, %v; want 0", rank, ok)
		}

		// Nobody is admitted while the instances rebuild; once the hold lapses, the order is the old one.
		if res, err := q.Admit(ctx, screening, time.Now(), settings(5, 10)); err != nil || res.Skip != queue.Rebuilding {
			t.Errorf("Admit during the rebuild hold = skip %q, %v; want %q", res.Skip, err, queue.Rebuilding)
		}
		ttl, err := env.Redis.PTTL(ctx, queue.Key(env.Prefix, screening, "hold")).Result()
		if err != nil || ttl <= 0 || ttl > queue.RebuildHold {
			t.Errorf("the hold's TTL = %v, %v; want within %v", ttl, err, queue.RebuildHold)
		}
		if err := env.Redis.Del(ctx, queue.Key(env.Prefix, screening, "hold")).Err(); err != nil {
			t.Fatal(err)
		}
		res, err = q.Admit(ctx, screening, time.Now(), settings(2, 10))
		if err != nil || !slices.Equal(res.Admitted, []string{tokens[1], tokens[2]}) {
			t.Errorf("Admit after the hold = %v, %v; want tokens 1 and 2", res.Admitted, err)
		}
	})
}

// A socket here that registered after the loss holds a number the empty Redis handed out, of another
// numbering: the rebuild does not take it for a number of the lost line (which would put its token ahead of
// those who waited before it), and its token goes behind everyone put back. A standing whose numbering is
// not known is taken as the lost line's.
func TestRestoreDoesNotTakeANumberGivenAfterTheLossForALostOne(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		q := queue.New(env.Redis, env.Prefix)
		tokens := registerN(t, q, screening, 3) // seqs 1..3
		lost := status(t, q, screening, tokens[0]).Numbering
		if lost == 0 {
			t.Fatalf("the line's numbering before the loss = 0, want one drawn")
		}
		forgetLine(t, env, screening)
		newcomer, err := q.Register(ctx, screening, "")
		if err != nil || newcomer.Seq != 1 || newcomer.Numbering == 0 || newcomer.Numbering == lost {
			t.Fatalf("Register after the loss = seq %d of numbering %d, %v; want 1 of a numbering other than %d", newcomer.Seq, newcomer.Numbering, err, lost)
		}

		// The newcomer's socket is on this instance, beside the sockets of the lost line.
		_, restored, err := q.Restore(ctx, screening, []queue.Standing{
			{Token: newcomer.Token, Seq: newcomer.Seq, Numbering: newcomer.Numbering},
			{Token: tokens[0], Seq: 1, Numbering: lost},
			{Token: tokens[1], Seq: 2, Numbering: lost},
			{Token: tokens[2], Seq: 3},
		})
		if err != nil || restored != 3 {
			t.Fatalf("Restore = %d restored, %v; want 3 (the newcomer is not one)", restored, err)
		}
		want := []string{tokens[0], tokens[1], tokens[2], newcomer.Token}
		var got []string
		for _, z := range members(t, env, screening, "waiting") {
			got = append(got, z.Member.(string))
		}
		if !slices.Equal(got, want) {
			t.Errorf("line after the rebuild = %v, want %v (the newcomer behind the lost line)", got, want)
		}
		seqs, numbering, err := q.Seqs(ctx, screening, []string{newcomer.Token})
		if err != nil || !slices.Equal(seqs, []int64{4}) || numbering != newcomer.Numbering {
			t.Errorf("Seqs(newcomer) after the rebuild = %v of numbering %d, %v; want [4] of %d, the numbering drawn after the loss", seqs, numbering, err, newcomer.Numbering)
		}
	})
}
