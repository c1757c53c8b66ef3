// Tests of the box office's routes: an order held, read, confirmed by the payment backend's key, cancelled,
// listed and exported; each bad input a clear error that changes nothing.

package server_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/config"
	"github.com/waitroom/waitroom/testenv"
)

// orderView is an order as the API answers it.
type orderView struct {
	Code          string     `json:"code"`
	Status        string     `json:"status"`
	Seats         []string   `json:"seats"`
	ScreeningName string     `json:"screening_name"`
	HoldExpiresAt *time.Time `json:"hold_expires_at"`
	CancelledBy   string     `json:"cancelled_by"`
	CheckoutURL   string     `json:"checkout_url"`
	TicketURL     string     `json:"ticket_url"`
}

type ordersList struct {
	Orders []orderView `json:"orders"`
}

const confirmKey = "confirm-key-0123456789"

// holdMode is a server that sells in hold mode, with a confirm key and an admin key.
func holdMode(c *config.Config) {
	c.Booking.Checkout, c.Booking.HoldTTL = "hold", time.Minute
	c.Booking.ConfirmKey, c.Admin.Key = confirmKey, adminKey
	c.Booking.CheckoutURL = "https://shop.example/pay?order={code}"
}

// created decodes the 201 of a reservation.
func created(t *testing.T, r response, v any) {
	t.Helper()
	if r.status != http.StatusCreated {
		t.Fatalf("POST reservation = %d %s, want 201", r.status, r)
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("201 body %s: %v", r, err)
	}
}

func (a *testServer) post(t *testing.T, path, auth string) response {
	t.Helper()
	r, err := a.do(http.MethodPost, path, auth, "")
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	return r
}

func TestAnOrderIsHeldConfirmedAndCancelledOverHTTP(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, holdMode)
		passes := a.admit(t, "s1", 1)
		r := a.reserve(t, "s1", passes[0], `{"seats":["A1","A2"]}`)
		var held orderView
		created(t, r, &held)
		if held.Status != "held" || held.HoldExpiresAt == nil ||
			held.CheckoutURL != "https://shop.example/pay?order="+held.Code || held.TicketURL != "/t/"+held.Code {
			t.Fatalf("hold-mode reservation = %d %s; want 201, held, its expiry, the shop's checkout URL", r.status, r)
		}
		var got orderView
		decode(t, "GET order", a.get(t, "/api/orders/"+held.Code), &got)
		if got.Status != "held" || got.ScreeningName == "" || len(got.Seats) != 2 {
			t.Errorf("GET order = %+v", got)
		}
		// The confirm call needs the confirm key, not nothing, not the admin key.
		for _, auth := range []string{"", "Bearer wrong-key-0123456789", "Bearer " + adminKey, confirmKey} {
			wantError(t, "confirm with "+auth, a.post(t, "/api/orders/"+held.Code+"/confirm", auth), http.StatusUnauthorized, "BAD_CONFIRM_KEY")
		}
		// There is a shop: the demo checkout's pay route is off.
		if r := a.post(t, "/api/orders/"+held.Code+"/pay", ""); r.status != http.StatusNotFound {
			t.Errorf("pay with a checkout_url set = %d, want 404", r.status)
		}
		for i := range 2 {
			r := a.post(t, "/api/orders/"+held.Code+"/confirm", "Bearer "+confirmKey)
			got = orderView{}
			decode(t, "confirm", r, &got)
			if r.status != http.StatusOK || got.Status != "confirmed" || got.CheckoutURL != "" {
				t.Errorf("confirm #%d = %d %s; want 200 confirmed, no checkout URL", i+1, r.status, r)
			}
		}
		wantError(t, "buyer cancel of a paid order", a.post(t, "/api/orders/"+held.Code+"/cancel", ""), http.StatusConflict, "ORDER_CONFIRMED")
		wantError(t, "admin cancel without the key", a.post(t, "/api/admin/orders/"+held.Code+"/cancel", "Bearer "+confirmKey), http.StatusUnauthorized, "UNAUTHORIZED")
		r = a.post(t, "/api/admin/orders/"+held.Code+"/cancel", "Bearer "+adminKey)
		decode(t, "admin cancel", r, &got)
		if r.status != http.StatusOK || got.Status != "cancelled" || got.CancelledBy != "admin" {
			t.Errorf("admin cancel = %d %s", r.status, r)
		}
		wantError(t, "cancel twice", a.post(t, "/api/admin/orders/"+held.Code+"/cancel", "Bearer "+adminKey), http.StatusConflict, "ORDER_CANCELLED")
		wantError(t, "confirm a cancelled order", a.post(t, "/api/orders/"+held.Code+"/confirm", "Bearer "+confirmKey), http.StatusConflict, "ORDER_CANCELLED")
		var seats []struct{ ID, Status string }
		decode(t, "seat map", a.get(t, "/api/screenings/s1/seats"), &seats)
		for _, s := range seats {
			if (s.ID == "A1" || s.ID == "A2") && s.Status != "available" {
				t.Errorf("%s after the refund = %s, want available", s.ID, s.Status)
			}
		}
	})
}

func TestBadOrderCodesAreRefused(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, holdMode)
		for _, code := range []string{"x", "not-a-code", strings.Repeat("A", 26), strings.Repeat("z", 300)} {
			wantError(t, "GET "+code, a.get(t, "/api/orders/"+code), http.StatusBadRequest, "BAD_ORDER_CODE")
			wantError(t, "cancel "+code, a.post(t, "/api/orders/"+code+"/cancel", ""), http.StatusBadRequest, "BAD_ORDER_CODE")
		}
		guess := "aaaaaaaaaaaaaaaaaaaaaaaaaa"
		wantError(t, "GET a guessed code", a.get(t, "/api/orders/"+guess), http.StatusNotFound, "ORDER_NOT_FOUND")
		wantError(t, "confirm a guessed code", a.post(t, "/api/orders/"+guess+"/confirm", "Bearer "+confirmKey), http.StatusNotFound, "ORDER_NOT_FOUND")
		if r := a.get(t, "/t/"+guess+"/qr.png"); r.status != http.StatusNotFound {
			t.Errorf("QR of a guessed code = %d, want 404", r.status)
		}
	})
}

// demoCheckout is a server that sells in hold mode with the demo checkout, as make run has it.
func demoCheckout(c *config.Config) {
	c.Booking.Checkout, c.Booking.DemoCheckout = "hold", true
}

// Without a confirm key the confirm route does not exist; with booking.demo_checkout the demo checkout pays.
func TestTheDemoCheckoutPaysWhenAskedFor(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, demoCheckout)
		passes := a.admit(t, "s1", 1)
		var held orderView
		created(t, a.reserve(t, "s1", passes[0], `{"count":2}`), &held)
		if held.CheckoutURL != "/checkout/"+held.Code || len(held.Seats) != 2 {
			t.Fatalf("hold with the demo checkout = %+v, want /checkout/{code} and two seats", held)
		}
		if r := a.post(t, "/api/orders/"+held.Code+"/confirm", "Bearer "+confirmKey); r.status != http.StatusNotFound {
			t.Errorf("confirm without a confirm key configured = %d, want 404", r.status)
		}
		if r := a.get(t, "/checkout/"+held.Code); r.status != http.StatusOK || !strings.Contains(string(r.body), "<html") {
			t.Errorf("GET /checkout/{code} = %d", r.status)
		}
		if r := a.get(t, "/static/checkout/main.js"); r.status != http.StatusOK {
			t.Errorf("GET /static/checkout/main.js = %d, want 200", r.status)
		}
		var got orderView
		r := a.post(t, "/api/orders/"+held.Code+"/pay", "")
		decode(t, "pay", r, &got)
		if r.status != http.StatusOK || got.Status != "confirmed" {
			t.Errorf("pay = %d %s", r.status, r)
		}
		qr := a.get(t, "/t/"+held.Code+"/qr.png")
		if qr.status != http.StatusOK || !strings.HasPrefix(string(qr.body), "\x89PNG") {
			t.Errorf("GET qr.png = %d, %d bytes; want a PNG", qr.status, len(qr.body))
		}
	})
}

// The demo checkout, which confirms with no payment and no key, exists only when asked for, and never beside
// a confirm key or a shop: otherwise a reservation names no demo page, and the pay route, the page and its
// module are not found. The finding: in hold mode with a confirm key and no checkout URL, reserve, then
// POST /pay without any key was answered 200 confirmed.
func TestNoDemoCheckoutUnlessAskedForAndNeverBesideARealOne(t *testing.T) {
	for name, edit := range map[string]func(*config.Config){
		"hold, a confirm key, no checkout URL": func(c *config.Config) {
			c.Booking.Checkout, c.Booking.ConfirmKey = "hold", confirmKey
		},
		"hold, nothing else": func(c *config.Config) { c.Booking.Checkout = "hold" },
		"the demo asked for beside a confirm key": func(c *config.Config) {
			demoCheckout(c)
			c.Booking.ConfirmKey = confirmKey
		},
		"the demo asked for beside a shop": func(c *config.Config) {
			demoCheckout(c)
			c.Booking.CheckoutURL = "https://shop.example/pay?order={code}"
		},
	} {
		t.Run(name, func(t *testing.T) {
			a := newApp(t, testenv.New(t, testenv.Embedded), edit)
			passes := a.admit(t, "s1", 1)
			var held orderView
			created(t, a.reserve(t, "s1", passes[0], `{"seats":["A1"]}`), &held)
			if held.Status != "held" || strings.Contains(held.CheckoutURL, "/checkout/") {
				t.Errorf("reservation = %+v, want held with no demo checkout URL", held)
			}
			if r := a.post(t, "/api/orders/"+held.Code+"/pay", ""); r.status != http.StatusNotFound {
				t.Errorf("POST /api/orders/{code}/pay = %d %s, want 404", r.status, r)
			}
			for _, path := range []string{"/checkout/" + held.Code, "/static/checkout.html", "/static/checkout/main.js"} {
				if r := a.get(t, path); r.status != http.StatusNotFound {
					t.Errorf("GET %s = %d, want 404", path, r.status)
				}
			}
			var got orderView
			if decode(t, "GET order", a.get(t, "/api/orders/"+held.Code), &got); got.Status != "held" {
				t.Errorf("order after the refused pay = %+v, want still held", got)
			}
		})
	}
}

// The operator cannot switch a screening to hold mode on a server where its buyers would have nowhere to
// pay (no checkout URL, no demo checkout): the PATCH is refused with a code and words that say so, and
// changes nothing, not even its other fields; with a checkout URL, or the demo, it is done.
func TestHoldIsRefusedAtTheAdminAPIWithoutACheckout(t *testing.T) {
	patch := `{"checkout":"hold","max_active":7}`
	for name, edit := range map[string]func(*config.Config){
		"no checkout":                   func(c *config.Config) {},
		"a confirm key, no checkout":    func(c *config.Config) { c.Booking.ConfirmKey = confirmKey },
		"the demo beside a confirm key": func(c *config.Config) { c.Booking.DemoCheckout, c.Booking.ConfirmKey = true, confirmKey },
	} {
		t.Run(name, func(t *testing.T) {
			a := newApp(t, testenv.New(t, testenv.Embedded), func(c *config.Config) {
				c.Admin.Key = adminKey
				edit(c)
			})
			e := wantError(t, "PATCH "+patch, a.adminCall(t, http.MethodPatch, "/api/admin/screenings/s1/admission", patch), http.StatusUnprocessableEntity, "NO_CHECKOUT")
			for _, key := range []string{"booking.checkout_url", "booking.demo_checkout"} {
				if !strings.Contains(e.Error.Message, key) {
					t.Errorf("refusal %q does not name %s", e.Error.Message, key)
				}
			}
			var sc struct {
				Checkout  string `json:"checkout"`
				Admission struct {
					MaxActive int `json:"max_active"`
				} `json:"admission"`
			}
			decode(t, "GET s1", a.adminCall(t, http.MethodGet, "/api/admin/screenings/s1", ""), &sc)
			if sc.Checkout == "hold" || sc.Admission.MaxActive == 7 {
				t.Errorf("s1 after the refused PATCH = %+v, want neither hold nor max_active 7", sc)
			}
			passes := a.admit(t, "s1", 1)
			var o orderView
			if created(t, a.reserve(t, "s1", passes[0], `{"seats":["A1"]}`), &o); o.Status != "confirmed" {
				t.Errorf("reservation after the refused PATCH = %+v, want confirmed (instant)", o)
			}
		})
	}
	for name, edit := range map[string]func(*config.Config){
		"a checkout URL": func(c *config.Config) { c.Booking.CheckoutURL = "https://shop.example/pay?order={code}" },
		"the demo":       func(c *config.Config) { c.Booking.DemoCheckout = true },
	} {
		t.Run(name, func(t *testing.T) {
			a := newApp(t, testenv.New(t, testenv.Embedded), func(c *config.Config) {
				c.Admin.Key = adminKey
				edit(c)
			})
			var got struct{ Checkout string }
			if decode(t, "PATCH "+patch, a.adminCall(t, http.MethodPatch, "/api/admin/screenings/s1/admission", patch), &got); got.Checkout != "hold" {
				t.Errorf("PATCH %s = %+v, want checkout hold", patch, got)
			}
		})
	}
}

// qrFrom gets the QR code of the order code's ticket, asked on host, with If-None-Match etag ("" none).
func (a *testServer) qrFrom(t *testing.T, host, code, etag string) response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, a.ts.URL+"/t/"+code+"/qr.png", nil)
	req.Host = host
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	res, err := a.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: res.StatusCode, body: b, header: res.Header}
}

// drawn is how many QR codes the server has drawn, by its metric.
func (a *testServer) drawn(t *testing.T) int {
	t.Helper()
	for line := range strings.Lines(a.metrics(t)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "waitroom_ticket_qr_drawn_total "); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("waitroom_ticket_qr_drawn_total %q: %v", v, err)
			}
			return n
		}
	}
	t.Fatal("/metrics has no waitroom_ticket_qr_drawn_total")
	return 0
}

// A confirmed order's QR code is drawn once and then answered as it was, byte for byte, with its entity
// tag (304 to a browser that has it); a held order's is drawn each time (it is not a ticket yet); and one
// asked on another host is drawn for that host, never answered with another host's image.
func TestATicketsQRIsDrawnOnceAndKept(t *testing.T) {
	a := newApp(t, testenv.New(t, testenv.Embedded), demoCheckout)
	passes := a.admit(t, "s1", 1)
	var held orderView
	created(t, a.reserve(t, "s1", passes[0], `{"seats":["A1"]}`), &held)
	const host = "tickets.example"
	for range 2 {
		if r := a.qrFrom(t, host, held.Code, ""); r.status != http.StatusOK {
			t.Fatalf("QR of a held order = %d, want 200", r.status)
		}
	}
	if n := a.drawn(t); n != 2 {
		t.Errorf("QR codes drawn for a held order asked twice = %d, want 2 (not kept)", n)
	}
	if r := a.post(t, "/api/orders/"+held.Code+"/pay", ""); r.status != http.StatusOK {
		t.Fatalf("pay = %d %s", r.status, r)
	}
	first := a.qrFrom(t, host, held.Code, "")
	etag := first.header.Get("ETag")
	if first.status != http.StatusOK || !strings.HasPrefix(string(first.body), "\x89PNG") || etag == "" ||
		first.header.Get("Cache-Control") != "private, max-age=300" {
		t.Fatalf("QR of the confirmed order = %d, %d bytes, ETag %q, Cache-Control %q; want a PNG, an ETag, private for 300 s",
			first.status, len(first.body), etag, first.header.Get("Cache-Control"))
	}
	for i := range 3 {
		if again := a.qrFrom(t, host, held.Code, ""); again.status != http.StatusOK || !bytes.Equal(again.body, first.body) || again.header.Get("ETag") != etag {
			t.Errorf("QR asked again (#%d) = %d, %d bytes, ETag %q; want the same image and tag", i+1, again.status, len(again.body), again.header.Get("ETag"))
		}
	}
	if r := a.qrFrom(t, host, held.Code, etag); r.status != http.StatusNotModified || len(r.body) != 0 {
		t.Errorf("QR with If-None-Match of its tag = %d, %d bytes; want 304, empty", r.status, len(r.body))
	}
	if n := a.drawn(t); n != 3 {
		t.Errorf("QR codes drawn after the confirmed one was asked five times = %d, want 3 (drawn once)", n)
	}
	other := a.qrFrom(t, "evil.example", held.Code, "")
	if other.status != http.StatusOK || bytes.Equal(other.body, first.body) {
		t.Errorf("QR asked on another host = %d, the first host's image: %v; want its own", other.status, bytes.Equal(other.body, first.body))
	}
	if again := a.qrFrom(t, host, held.Code, ""); !bytes.Equal(again.body, first.body) {
		t.Errorf("QR on the first host after another host's = a different image, want the first host's")
	}
	if n := a.drawn(t); n != 4 {
		t.Errorf("QR codes drawn after a second host = %d, want 4", n)
	}
}

func TestTheOperatorListsAndExportsOrders(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, holdMode)
		passes := a.admit(t, "s1", 3)
		codes := make([]string, 3)
		for i, seat := range []string{"A1", "A2", "A3"} {
			var o orderView
			created(t, a.reserve(t, "s1", passes[i], `{"seats":["`+seat+`"]}`), &o)
			codes[i] = o.Code
		}
		a.post(t, "/api/orders/"+codes[0]+"/confirm", "Bearer "+confirmKey)
		a.post(t, "/api/orders/"+codes[1]+"/cancel", "")
		list := func(query string) ordersList {
			r, err := a.do(http.MethodGet, "/api/admin/screenings/s1/orders"+query, "Bearer "+adminKey, "")
			if err != nil {
				t.Fatal(err)
			}
			var l ordersList
			decode(t, "orders"+query, r, &l)
			return l
		}
		if l := list(""); len(l.Orders) != 3 {
			t.Errorf("all orders = %d, want 3", len(l.Orders))
		}
		if l := list("?status=held,confirmed"); len(l.Orders) != 2 {
			t.Errorf("held and confirmed orders = %d, want 2", len(l.Orders))
		}
		if l := list("?status=cancelled"); len(l.Orders) != 1 || l.Orders[0].Code != codes[1] || l.Orders[0].CancelledBy != "buyer" {
			t.Errorf("cancelled orders = %+v, want the buyer's cancellation", l.Orders)
		}
		r, err := a.do(http.MethodGet, "/api/admin/screenings/s1/orders?status=paid", "Bearer "+adminKey, "")
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, "an unknown status", r, http.StatusBadRequest, "BAD_REQUEST")
		r, err = a.do(http.MethodGet, "/api/admin/screenings/s1/orders?format=csv", "Bearer "+adminKey, "")
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(strings.NewReader(string(r.body))).ReadAll()
		if err != nil || len(rows) != 4 || rows[0][0] != "id" || rows[0][2] != "status" {
			t.Errorf("CSV = %v, %v; want a header and 3 rows", rows, err)
		}
	})
}

// The operator's list and CSV give an order's seats in seat order, A9 before A10, as the buyer chose them
// in any order.
func TestTheOperatorsOrdersListSeatsInSeatOrder(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, holdMode)
		env.Demo(t, "s2", 1, 12)
		pass := a.admit(t, "s2", 1)[0]
		var o orderView
		created(t, a.reserve(t, "s2", pass, `{"seats":["A10","A9","A1"]}`), &o)
		want := []string{"A1", "A9", "A10"}
		if !slices.Equal(o.Seats, want) {
			t.Errorf("the reservation's seats = %v, want %v", o.Seats, want)
		}
		r, err := a.do(http.MethodGet, "/api/admin/screenings/s2/orders", "Bearer "+adminKey, "")
		if err != nil {
			t.Fatal(err)
		}
		var l ordersList
		decode(t, "orders of s2", r, &l)
		if len(l.Orders) != 1 || !slices.Equal(l.Orders[0].Seats, want) {
			t.Errorf("orders of s2 = %+v, want one with seats %v", l.Orders, want)
		}
		r, err = a.do(http.MethodGet, "/api/admin/screenings/s2/orders?format=csv", "Bearer "+adminKey, "")
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(strings.NewReader(string(r.body))).ReadAll()
		if err != nil || len(rows) != 2 || rows[0][3] != "seats" || rows[1][3] != "A1 A9 A10" {
			t.Errorf("CSV = %v, %v; want one order whose seats read \"A1 A9 A10\"", rows, err)
		}
	})
}
