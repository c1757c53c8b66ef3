// A socket's entry as the hub asks it (hub.Entry): the check of package entry on what the socket brought,
// its verdict put in the hub's words (a refusal's close code); the policy itself is entry's.

package server

import (
	"context"

	"github.com/waitroom/waitroom/entry"
	"github.com/waitroom/waitroom/hub"
)

// socketEntry is one socket's hub.Entry: entry's check of it. It is one pointer, so it is handed to the
// hub without an allocation of its own.
type socketEntry struct{ *entry.Socket }

var _ hub.Entry = socketEntry{}

// Check asks entry's policy about the hello, and tells the hub what to do.
func (e socketEntry) Check(ctx context.Context, hello hub.Hello) hub.Verdict {
	v := e.Socket.Check(ctx, hello.Token, hello.Code, hello.Altcha)
	switch v.Outcome {
	case entry.Refuse:
		close := 0 // 1008, policy violation
		if v.Later {
			close = hub.CloseTryAgainLater
		}
		return hub.Verdict{Kind: hub.Refuse, Code: v.Code, Message: v.Message, Reason: v.Reason, Close: close}
	case entry.BotHold:
		return hub.Verdict{Kind: hub.BotHold, Decoy: v.Decoy, For: v.HoldFor}
	}
	return hub.Verdict{Token: v.Token}
}
