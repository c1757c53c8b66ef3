// A user's checkout in hold checkout: after its hold's 201 it pays (confirms the order through the payment
// backend's call) after a pause, or never does and lets the hold lapse; and the operator refunds a share of
// those who paid.

package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"
)

// checkout follows the order r.Code the user holds to its end and sets r's outcome: Unpaid (the user never
// pays), Lapsed (it paid too late: 409 HOLD_EXPIRED), Ticket (confirmed), or Refunded (confirmed, then
// cancelled by the operator).
func (v *visit) checkout(ctx context.Context, r *result) {
	k := v.cfg.Checkout
	if rand.Float64() >= k.PayShare {
		r.Outcome = Unpaid
		return
	}
	if !v.pause(ctx, payDelay(k.PayDelayMin, k.PayDelayMax)) {
		r.fail(stopKind(ctx), errors.New("stopped while paying"))
		return
	}
	r.Paid = true
	sentAt := time.Now()
	status, code, err := v.orderCall(ctx, "/api/orders/"+url.PathEscape(r.Code)+"/confirm", k.ConfirmKey)
	r.ConfirmCall = time.Since(sentAt)
	switch {
	case err != nil:
		r.fail(requestKind(ctx, "confirm"), err)
		return
	case status == http.StatusConflict && code == "HOLD_EXPIRED":
		r.Outcome = Lapsed
		return
	case status != http.StatusOK:
		r.fail(fmt.Sprintf("confirm %d %s", status, code), fmt.Errorf("POST /api/orders/%s/confirm: %d %s", r.Code, status, code))
		return
	}
	r.Confirmed, r.HoldToConfirm, r.Outcome = true, time.Since(r.heldAt), Ticket
	if k.CancelShare == 0 || rand.Float64() >= k.CancelShare {
		return
	}
	status, code, err = v.orderCall(ctx, "/api/admin/orders/"+url.PathEscape(r.Code)+"/cancel", k.AdminKey)
	switch {
	case err != nil:
		r.fail(requestKind(ctx, "refund"), err)
	case status != http.StatusOK:
		r.fail(fmt.Sprintf("refund %d %s", status, code), fmt.Errorf("POST /api/admin/orders/%s/cancel: %d %s", r.Code, status, code))
	default:
		r.Outcome = Refunded
	}
}

// payDelay is a pause drawn uniformly from [lo, hi].
func payDelay(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + rand.N(hi-lo+1)
}

// orderCall POSTs an order's transition at path with bearer as its key, and returns the status and, for a
// refusal, the error code.
func (v *visit) orderCall(ctx context.Context, path, bearer string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, v.cfg.URL+path, nil)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
	resp, err := v.src.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var e apiError
	if resp.StatusCode != http.StatusOK {
		_ = json.NewDecoder(io.LimitReader(resp.Body, maxErrorBody)).Decode(&e)
	} else {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	}
	return resp.StatusCode, e.Error.Code, nil
}
