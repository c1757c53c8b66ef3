// The entry rules' cache: a read shared by the requests that missed together is not cut short by the
// first of them leaving.

package server

import (
	"context"
	"testing"
	"time"
)

func TestARulesReadSharedByTwoOutlivesTheFirstCaller(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	e := newEntryCache(func(ctx context.Context, id string) (entryRules, error) {
		close(started)
		select {
		case <-release:
			return entryRules{powCost: 7}, ctx.Err()
		case <-ctx.Done():
			return entryRules{}, ctx.Err()
		}
	})
	first, leave := context.WithCancel(context.Background())
	firstDone := make(chan error, 1)
	go func() {
		_, err := e.rules(first, "s1")
		firstDone <- err
	}()
	<-started
	second := make(chan error, 1)
	var got entryRules
	go func() {
		r, err := e.rules(context.Background(), "s1")
		got = r
		second <- err
	}()
	time.Sleep(20 * time.Millisecond) // the second caller joins the read under way
	leave()
	close(release)
	if err := <-second; err != nil || got.powCost != 7 {
		t.Errorf("the second caller got %+v, %v; want the rules read, its first caller's leaving notwithstanding", got, err)
	}
	<-firstDone
	if r, err := e.rules(context.Background(), "s1"); err != nil || r.powCost != 7 {
		t.Errorf("the kept rules = %+v, %v; want those read", r, err)
	}
}
