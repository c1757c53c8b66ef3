// demo.line: the playground's screening for a few browser tabs admits one at a time and two at most, so a
// third tab waits and moves up when one of the first two leaves.

package app_test

import (
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

func TestTheDemoLineAdmitsTwoAtMostAndTheThirdMovesUpWhenOneLeaves(t *testing.T) {
	env := testenv.New(t, testenv.Embedded)
	srv := apptest.Start(t, env, map[string]string{"WAITROOM_DEMO_LINE": "true", "WAITROOM_ADMISSION_INTERVAL": "200ms"})
	const within = 20 * time.Second
	tabs := make([]*testenv.Socket, 3)
	var last testenv.Message // the third tab's
	for i := range tabs {
		tabs[i] = srv.Dial(t, app.DemoLine, "")
		if last = tabs[i].Next(t, within); last.Type != "queued" && last.Type != "prequeue" {
			t.Fatalf("tab %d's first message = %+v, want queued", i+1, last)
		}
	}
	for i := range 2 {
		tabs[i].Until(t, "admitted", within)
	}
	// The third tab alone in line, first: the tick that admitted the second has told it so (or it was so
	// when it joined).
	for last.Rank != 1 || last.Total != 1 {
		if last = tabs[2].Next(t, within); last.Type == "admitted" {
			t.Fatalf("the third tab was admitted while two were: %+v", last)
		}
	}
	// A tick that admits nobody still pushes positions when someone joined: three more tabs join, one after
	// another, and each join's tick finds the third tab first in line and leaves it waiting.
	for joined := 1; joined <= 3; joined++ {
		srv.Dial(t, app.DemoLine, "")
		for {
			m := tabs[2].Next(t, within)
			if m.Type == "admitted" {
				t.Fatalf("the third tab was admitted while two were: %+v", m)
			}
			if m.Type == "position" && m.Total == int64(1+joined) {
				if m.Rank != 1 {
					t.Fatalf("the third tab's position = %+v, want rank 1", m)
				}
				break
			}
		}
	}
	if err := tabs[0].WriteJSON(map[string]string{"type": "leave"}); err != nil {
		t.Fatal(err)
	}
	if m, before := tabs[2].Until(t, "admitted", within); m.Pass == "" {
		t.Errorf("the third tab's admission = %+v (after %+v), want a pass", m, before)
	}
}
