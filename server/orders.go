// The box office's routes: an order as its buyer sees it, confirmed by the payment backend (or, with
// booking.demo_checkout, by the demo checkout), cancelled by its buyer or the operator, listed and exported
// for the operator; and the ticket's QR code.

package server

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/skip2/go-qrcode"

	"github.com/waitroom/waitroom/booking"
)

// Checkout is how buyers pay for held orders (booking.checkout_url, booking.demo_checkout,
// booking.confirm_key).
type Checkout struct {
	// URL is where a buyer pays, {code} standing for the order's code.
	URL string
	// Demo serves the demo checkout: its page (/checkout/{code}) and its Pay button's route (POST
	// /api/orders/{code}/pay), which confirms an order with no payment and no key. Only beside neither a
	// URL nor a confirm key (config.Validate refuses them together); otherwise, as without Demo, neither
	// exists (404).
	Demo bool
	// ConfirmKey is the bearer key of POST /api/orders/{code}/confirm; empty: that route is off (404).
	ConfirmKey string
}

// demo reports whether the demo checkout is served: asked for, with no real checkout beside it. The check
// is the server's own too, so that no configuration, validated or not, pays for free beside a confirm key.
func (c Checkout) demo() bool { return c.Demo && c.URL == "" && c.ConfirmKey == "" }

// payable reports whether a held order has somewhere to be paid: a screening may sell in hold mode only
// then.
func (c Checkout) payable() bool { return c.URL != "" || c.demo() }

var (
	// errBadConfirmKey: the confirm call came without the confirm key, or with another.
	errBadConfirmKey = errors.New("orders: missing or wrong confirm key")
	// errBadStatus: an orders listing asked for a status no order has.
	errBadStatus = errors.New("orders: unknown status")
	// errNoCheckout: the operator asked for hold checkout on a server where buyers have nowhere to pay.
	errNoCheckout = errors.New("orders: hold checkout without a checkout")
)

// orderView is an order as the API shows it: with where its buyer pays (while it is held) and its ticket.
type orderView struct {
	booking.Order
	orderLinks
}

// orderLinks are an order's pages: its checkout while it is held, and its ticket.
type orderLinks struct {
	CheckoutURL string `json:"checkout_url,omitempty"`
	TicketURL   string `json:"ticket_url"`
}

// linksOf are the pages of the order with code, in status.
func (s *Server) linksOf(code, status string) orderLinks {
	l := orderLinks{TicketURL: "/t/" + code}
	if status == booking.StatusHeld {
		l.CheckoutURL = s.checkoutURL(code)
	}
	return l
}

func (s *Server) viewOf(o booking.Order) orderView {
	return orderView{Order: o, orderLinks: s.linksOf(o.Code, o.Status)}
}

// checkoutURL is where the buyer of the held order code pays; "" when there is nowhere (a hold made before
// the server lost its checkout).
func (s *Server) checkoutURL(code string) string {
	switch {
	case s.Checkout.URL != "":
		return strings.ReplaceAll(s.Checkout.URL, "{code}", code)
	case s.Checkout.demo():
		return "/checkout/" + code
	}
	return ""
}

// paceOrders lets a request to an order's routes through while its client address keeps to
// limits.orders_per_second (bursts of limits.orders_burst): each reads the database or draws an image, and
// one address asking without end would keep the database busy for everyone. Faster: 429 RATE_LIMITED with
// Retry-After, the time one more request takes to come back.
func (s *Server) paceOrders(next echo.HandlerFunc) echo.HandlerFunc {
	if s.orders == nil {
		return next // limits.orders_per_second is 0: no pace
	}
	retry := strconv.Itoa(max(1, int(math.Ceil(1/s.Limits.OrdersPerSecond))))
	return func(c echo.Context) error {
		if s.orders.Allow(s.clientIP(c.Request()), s.now()) {
			return next(c)
		}
		return tooFast(c, retry, "too many requests for orders from your address; retry in "+retry+" s")
	}
}

// requireConfirmKey lets through a request whose Authorization is "Bearer <booking.confirm_key>", from an
// address that has not used up its attempts at the key: the admin key's guard, with counts of its own
// (adminguard.go).
func (s *Server) requireConfirmKey(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := s.checkBearer(c, s.confirmKeys, s.Checkout.ConfirmKey, errBadConfirmKey); err != nil {
			return err
		}
		return next(c)
	}
}

func (s *Server) getOrder(c echo.Context) error {
	o, err := s.Store.Order(c.Request().Context(), c.Param("code"))
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, s.viewOf(o))
}

func (s *Server) confirmOrder(c echo.Context) error {
	o, err := s.Booking.Confirm(c.Request().Context(), c.Param("code"))
	return s.answerMove(c, "confirm", o, err)
}

func (s *Server) cancelOrder(c echo.Context) error {
	o, err := s.Booking.Cancel(c.Request().Context(), c.Param("code"), booking.ByBuyer)
	return s.answerMove(c, "cancel", o, err)
}

func (s *Server) adminCancelOrder(c echo.Context) error {
	o, err := s.Booking.Cancel(c.Request().Context(), c.Param("code"), booking.ByAdmin)
	if err == nil || errors.As(err, new(*booking.AfterCommitError)) {
		s.logFor(c).Info("admin: order cancelled", "order", o.ID, "screening", o.Screening)
	}
	return s.answerMove(c, "cancel", o, err)
}

// answerMove answers a transition: the order, also when what follows its commit failed (logged; the seats
// and the line catch up by time or at the next change), or the refusal.
func (s *Server) answerMove(c echo.Context, name string, o booking.Order, err error) error {
	var after *booking.AfterCommitError
	if errors.As(err, &after) {
		s.logFor(c).Warn("order "+name+": committed, follow-up failed", "order", o.ID, "err", err)
		err = nil
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.viewOf(o))
}

// ordersList is GET /api/admin/screenings/{id}/orders.
type ordersList struct {
	Orders []orderView `json:"orders"`
}

func (s *Server) adminOrders(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	if err := s.Booking.Exists(ctx, id); err != nil {
		return err
	}
	var statuses []string
	for _, v := range c.QueryParams()["status"] {
		for _, st := range strings.Split(v, ",") {
			if st = strings.TrimSpace(st); st == "" {
				continue
			} else if !booking.ValidStatus(st) {
				return errBadStatus
			}
			statuses = append(statuses, st)
		}
	}
	orders, err := s.Store.Orders(ctx, id, statuses)
	if err != nil {
		return err
	}
	if wantsCSV(c) {
		return writeOrdersCSV(c, id, orders)
	}
	out := ordersList{Orders: make([]orderView, len(orders))}
	for i, o := range orders {
		out.Orders[i] = s.viewOf(o)
	}
	return c.JSON(http.StatusOK, out)
}

// writeOrdersCSV answers the orders as CSV, one row each, seats space-separated, times RFC 3339.
func writeOrdersCSV(c echo.Context, screening string, orders []booking.Order) error {
	rows := [][]string{{"id", "code", "status", "seats", "created_at", "hold_expires_at", "confirmed_at", "ended_at", "cancelled_by"}}
	for _, o := range orders {
		rows = append(rows, []string{fmt.Sprint(o.ID), o.Code, o.Status, strings.Join(o.Seats, " "), o.CreatedAt.Format(time.RFC3339Nano),
			csvTime(o.HoldExpiresAt), csvTime(o.ConfirmedAt), csvTime(o.EndedAt), o.CancelledBy})
	}
	return writeCSV(c, "orders-"+screening+".csv", rows)
}

func csvTime(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

const (
	// ticketQRMaxAge is how long a browser may keep a ticket's QR code: it only names the ticket page, which
	// shows the order as it stands.
	ticketQRMaxAge = 5 * time.Minute
	// maxKeptQRs bounds the QR codes kept (about 650 bytes each); past it the cache is emptied and fills
	// again, as the entry rules' cache is.
	maxKeptQRs = 4096
	// maxKeptQRURL: the QR code of a longer ticket URL (a Host header of a client's making) is drawn but
	// not kept.
	maxKeptQRURL = 256
)

// qrImage is a drawn QR code and its entity tag.
type qrImage struct {
	png  []byte
	etag string
}

// qrCache keeps the QR codes of confirmed orders' tickets, by the URL each encodes: the order's code and
// the scheme and host it was asked on, so one client's Host header never reaches another's image. A code
// kept stays right after a refund: the image names the ticket page, which says the order is cancelled.
// Safe for concurrent use.
type qrCache struct {
	mu   sync.Mutex
	kept map[string]qrImage
}

func newQRCache() *qrCache { return &qrCache{kept: map[string]qrImage{}} }

func (q *qrCache) get(url string) (qrImage, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	img, ok := q.kept[url]
	return img, ok
}

func (q *qrCache) put(url string, img qrImage) {
	if len(url) > maxKeptQRURL {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.kept) >= maxKeptQRs {
		clear(q.kept) // tickets come and go; a map of them all is kept from growing for ever
	}
	q.kept[url] = img
}

// ticketQR answers the QR code of the ticket: a PNG of the ticket page's absolute URL, which the door
// scans to see the ticket as it stands (confirmed, or cancelled since). A confirmed order's is drawn once
// and kept (qrCache): asked again, it is answered without reading the order or drawing it, and a browser
// that has it (If-None-Match) is answered 304.
func (s *Server) ticketQR(c echo.Context) error {
	code := c.Param("code")
	url := c.Scheme() + "://" + c.Request().Host + "/t/" + code
	img, ok := s.qrs.get(url)
	if !ok {
		o, err := s.Store.Order(c.Request().Context(), code)
		if err != nil {
			return err
		}
		png, err := qrcode.Encode(url, qrcode.Medium, 320)
		if err != nil {
			return fmt.Errorf("orders: QR code: %w", err)
		}
		s.metrics.qrDrawn.Inc()
		sum := sha256.Sum256(png)
		img = qrImage{png: png, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		if o.Status == booking.StatusConfirmed {
			s.qrs.put(url, img)
		}
	}
	h := c.Response().Header()
	h.Set("Cache-Control", fmt.Sprintf("private, max-age=%d", int(ticketQRMaxAge.Seconds())))
	h.Set("ETag", img.etag)
	if etagMatches(c.Request().Header.Get("If-None-Match"), img.etag) {
		return c.NoContent(http.StatusNotModified)
	}
	return c.Blob(http.StatusOK, "image/png", img.png)
}

// etagMatches reports whether an If-None-Match header names etag (weakly compared, as RFC 9110 asks of
// If-None-Match) or is "*".
func etagMatches(ifNoneMatch, etag string) bool {
	for _, tag := range strings.Split(ifNoneMatch, ",") {
		if tag = strings.TrimSpace(tag); tag == "*" || strings.TrimPrefix(tag, "W/") == etag {
			return true
		}
	}
	return false
}
