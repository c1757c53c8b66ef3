// The operator's API under /api/admin, behind the bearer key: creating screenings, changing their
// admission, pausing, resuming, closing and resetting sales, archiving screenings, and the control room's
// live figures.

package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"net/http"
	"slices"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/notify"
	"github.com/waitroom/waitroom/queue"
)

const (
	// maxAdminBodyBytes bounds an admin body: a listed catalog of 10,000 seat ids fits in well under this.
	maxAdminBodyBytes = 512 << 10
	// streamEvery paces the control room's live figures.
	streamEvery = time.Second
	// streamWriteWait bounds the write of one frame of the live figures to the control room.
	streamWriteWait = 10 * time.Second
)

var (
	errUnauthorized = errors.New("admin: missing or wrong key")
	// errBadAdminBody: an admin body that does not decode (an adminError says how).
	errBadAdminBody = errors.New("bad body")
)

// adminError is the admin API's own refusal of a body, before booking sees it: Kind is errBadAdminBody (the
// body does not decode) or booking.ErrBadScreening (it asks for a screening or settings no one can have),
// and Message says what is wrong, in words for the operator. errors.Is(err, Kind) holds.
type adminError struct {
	Kind    error
	Message string
}

func (e *adminError) Error() string { return "admin: " + e.Message }

// Is makes errors.Is(err, e.Kind) hold.
func (e *adminError) Is(target error) bool { return target == e.Kind }

// refuseScreening refuses a create or admission body that decodes but describes no screening one can have.
func refuseScreening(format string, args ...any) error {
	return &adminError{Kind: booking.ErrBadScreening, Message: fmt.Sprintf(format, args...)}
}

// decodeAdminBody reads an admin body as every JSON body is read (decodeStrict); one that does not decode is
// refused in the decoder's own words ("bad body: json: unknown field …").
func decodeAdminBody(c echo.Context, limit int64, v any) error {
	err := decodeStrict(c, limit, v, errBadAdminBody)
	if errors.Is(err, errBadAdminBody) {
		return &adminError{Kind: errBadAdminBody, Message: err.Error()}
	}
	return err
}

// gateModeDefault, as a PATCH's gate_mode, drops the screening's own mode: it follows gate.mode again.
const gateModeDefault = "default"

// requireAdmin lets through a request whose Authorization is "Bearer <admin.key>", from an address that has
// not used up its attempts at the key (adminguard.go).
func (s *Server) requireAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := s.checkBearer(c, s.adminKeys, s.AdminKey, errUnauthorized); err != nil {
			return err
		}
		return next(c)
	}
}

// admissionBody is a screening's admission settings on the wire: durations as Go durations ("1s", "5m").
// An absent field keeps the current value (on create: the server's default).
type admissionBody struct {
	Interval  string `json:"interval,omitempty"`
	BatchSize int    `json:"batch_size,omitempty"`
	MaxActive int    `json:"max_active,omitempty"`
	ActiveTTL string `json:"active_ttl,omitempty"`
	// Checkout is the screening's checkout mode, "instant" or "hold" (PATCH only; absent: unchanged); hold
	// only on a server where buyers have somewhere to pay (Checkout.payable).
	Checkout string `json:"checkout,omitempty"`
	// GateMode is the screening's mode at the gate, "auto", "queue_all" or "passthrough", or "default" to drop
	// the screening's own and follow gate.mode again (PATCH only; absent: unchanged). The operator's view shows
	// the effective one (the screening's, or gate.mode).
	GateMode string `json:"gate_mode,omitempty"`
	// PowCost is the screening's proof-of-work cost, the mean number of key derivations a new place costs
	// (0: none), or "default" to drop its own and follow pow.cost (PATCH only; absent: unchanged). The
	// operator's view shows the effective one.
	PowCost *powCost `json:"pow_cost,omitempty"`
	// CodesRequired says a new place needs an access code; false lets everyone in again (PATCH only; absent:
	// unchanged). Issuing codes or setting a shared code turns it on (codes.go).
	CodesRequired *bool `json:"codes_required,omitempty"`
	// Waitlist keeps the screening's line as a waitlist when it sells out (PATCH only; absent: unchanged).
	// The operator's view shows the one in force (the screening's, or booking.waitlist).
	Waitlist *bool `json:"waitlist,omitempty"`
}

func (a admissionBody) settings() (queue.Settings, error) {
	var out queue.Settings
	var err error
	parse := func(name, v string) time.Duration {
		if v == "" || err != nil {
			return 0
		}
		d, perr := time.ParseDuration(v)
		if perr != nil || d <= 0 {
			err = refuseScreening("admission %s %q: want a positive Go duration like 1s or 5m", name, v)
		}
		return d
	}
	out.Interval, out.ActiveTTL = parse("interval", a.Interval), parse("active_ttl", a.ActiveTTL)
	if a.BatchSize < 0 || a.MaxActive < 0 {
		return out, refuseScreening("batch_size and max_active must be positive")
	}
	out.BatchSize, out.MaxActive = a.BatchSize, a.MaxActive
	return out, err
}

func bodyOf(s queue.Settings) admissionBody {
	return admissionBody{Interval: s.Interval.String(), BatchSize: s.BatchSize, MaxActive: s.MaxActive, ActiveTTL: s.ActiveTTL.String()}
}

// createBody is POST /api/admin/screenings.
type createBody struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	StartsAt    time.Time `json:"starts_at"`
	SaleOpensAt time.Time `json:"sale_opens_at"`
	Rows        int       `json:"rows"`
	SeatsPerRow int       `json:"seats_per_row"`
	Seats       []string  `json:"seats"`
	// SiteWide makes a room without seats: the line in front of a site (the gate), never sold out.
	SiteWide  bool           `json:"site_wide"`
	Admission *admissionBody `json:"admission"`
	// Waitlist keeps the line as a waitlist when it sells out (absent: booking.waitlist).
	Waitlist *bool `json:"waitlist"`
}

func (s *Server) adminCreate(c echo.Context) error {
	var body createBody
	if err := decodeAdminBody(c, maxAdminBodyBytes, &body); err != nil {
		return err
	}
	var seats []booking.Seat
	var err error
	switch {
	case body.SiteWide && (len(body.Seats) > 0 || body.Rows != 0 || body.SeatsPerRow != 0):
		return refuseScreening("a site-wide room has no seats: give site_wide or seats, not both")
	case body.SiteWide:
		seats = nil
	case len(body.Seats) > 0 && (body.Rows != 0 || body.SeatsPerRow != 0):
		return refuseScreening("give either seats or rows and seats_per_row, not both")
	case len(body.Seats) > booking.MaxSeatsPerScreening:
		return refuseScreening("%d seats: at most %d", len(body.Seats), booking.MaxSeatsPerScreening)
	case len(body.Seats) > 0:
		seats, err = booking.SeatsFromIDs(body.Seats)
	default:
		seats, err = booking.SeatsFromGrid(body.Rows, body.SeatsPerRow)
	}
	if err != nil {
		return err
	}
	var settings queue.Settings
	if body.Admission != nil {
		if settings, err = body.Admission.settings(); err != nil {
			return err
		}
	}
	ctx := c.Request().Context()
	sc := booking.Screening{ID: body.ID, Name: body.Name, StartsAt: body.StartsAt, SaleOpensAt: body.SaleOpensAt}
	if err := s.Store.CreateScreening(ctx, sc, seats, settings); err != nil {
		return err
	}
	if body.Waitlist != nil {
		if err := s.Store.SetWaitlist(ctx, sc.ID, body.Waitlist); err != nil {
			return err
		}
	}
	s.refreshScheduler()
	s.logFor(c).Info("admin: screening created", "screening", sc.ID, "seats", len(seats), "sale_opens_at", sc.SaleOpensAt.UTC().Format(time.RFC3339))
	view, err := s.adminView(ctx, sc.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, view)
}

// adminScreening is a screening as the operator sees it: the public view, its effective admission
// settings, and the live figures of its line.
type adminScreening struct {
	screeningView
	Admission admissionBody  `json:"admission"`
	Line      *queue.Figures `json:"line,omitempty"`
	// Notifications counts the screening's e-mails to buyers who left the page (nil: mail is off): the
	// operator sees counts, never an address.
	Notifications *notify.Counts `json:"notifications,omitempty"`
}

// adminScreenings is every screening as the operator sees it, or only the one with id only (when not "").
func (s *Server) adminScreenings(ctx context.Context, only string) ([]adminScreening, error) {
	list, err := s.Store.Managed(ctx)
	if err != nil {
		return nil, err
	}
	if only != "" {
		list = slices.DeleteFunc(list, func(m booking.Managed) bool { return m.ID != only })
	}
	now := time.Now()
	out := make([]adminScreening, len(list))
	for i, m := range list {
		out[i] = adminScreening{
			screeningView: s.screeningOf(m.Summary, now),
			Admission:     bodyOf(m.Admission.Merge(s.AdmissionDefaults)),
		}
		out[i].Admission.GateMode = s.gateModeOf(m.GateMode)
		out[i].Admission.PowCost = &powCost{N: s.Entry.PowCost(m.PowCost)}
		out[i].Admission.CodesRequired = &m.CodesRequired
		f, err := s.Queue.Figures(ctx, m.ID)
		if err != nil {
			return nil, err
		}
		out[i].Line = &f
		out[i].Waitlist = m.Admission.Waitlist
		out[i].Admission.Waitlist = &out[i].Waitlist
		if out[i].Waitlist {
			wf, err := s.Queue.Waitlist(ctx, m.ID)
			if err != nil {
				return nil, err
			}
			f.Waitlist = &wf
		}
		if s.Notify.Enabled() {
			n, err := s.Notify.Counts(ctx, m.ID)
			if err != nil {
				return nil, err
			}
			out[i].Notifications = &n
		}
		if f.Paused && out[i].State == "on_sale" {
			out[i].State = "paused"
		}
	}
	return out, nil
}

func (s *Server) adminView(ctx context.Context, id string) (adminScreening, error) {
	one, err := s.adminScreenings(ctx, id)
	if err != nil {
		return adminScreening{}, err
	}
	if len(one) == 0 {
		return adminScreening{}, fmt.Errorf("admin: %q: %w", id, booking.ErrUnknownScreening)
	}
	return one[0], nil
}

func (s *Server) refreshScheduler() {
	if s.Scheduler != nil {
		s.Scheduler.Refresh()
	}
}

func (s *Server) adminList(c echo.Context) error {
	all, err := s.adminScreenings(c.Request().Context(), "")
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, all)
}

func (s *Server) adminGet(c echo.Context) error {
	v, err := s.adminView(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

func (s *Server) adminSetAdmission(c echo.Context) error {
	var body admissionBody
	if err := decodeAdminBody(c, maxBodyBytes, &body); err != nil {
		return err
	}
	settings, err := body.settings()
	if err != nil {
		return err
	}
	if body.Checkout == booking.CheckoutHold && !s.Checkout.payable() {
		return errNoCheckout // before any change: a refused PATCH changes nothing
	}
	ctx := c.Request().Context()
	if body.Checkout != "" {
		if err := s.Store.SetCheckout(ctx, c.Param("id"), body.Checkout); err != nil {
			return err
		}
	}
	if err := s.setPowCost(ctx, c.Param("id"), body.PowCost); err != nil {
		return err
	}
	if body.Waitlist != nil {
		if err := s.Store.SetWaitlist(ctx, c.Param("id"), body.Waitlist); err != nil {
			return err
		}
	}
	if body.CodesRequired != nil {
		if err := s.Store.SetCodesRequired(ctx, c.Param("id"), *body.CodesRequired); err != nil {
			return err
		}
		s.Entry.Forget(c.Param("id"))
	}
	if body.GateMode != "" {
		mode := body.GateMode
		if mode == gateModeDefault {
			mode = "" // the screening's own mode dropped: gate.mode again
		}
		if err := s.Store.SetGateMode(ctx, c.Param("id"), mode); err != nil {
			return err
		}
	}
	stored, err := s.Store.SetAdmission(ctx, c.Param("id"), settings)
	if err != nil {
		return err
	}
	s.refreshScheduler()
	effective := bodyOf(stored.Merge(s.AdmissionDefaults))
	if sum, err := s.Store.Screening(ctx, c.Param("id")); err == nil {
		effective.Checkout = sum.Checkout
		effective.GateMode = s.gateModeOf(sum.GateMode)
		effective.PowCost = &powCost{N: s.Entry.PowCost(sum.PowCost)}
		effective.CodesRequired = &sum.CodesRequired
	}
	if on, err := s.Booking.Waitlist(ctx, c.Param("id")); err == nil {
		effective.Waitlist = &on
	}
	s.logFor(c).Info("admin: admission changed", "screening", c.Param("id"), "interval", effective.Interval,
		"batch_size", effective.BatchSize, "max_active", effective.MaxActive, "active_ttl", effective.ActiveTTL,
		"gate_mode", effective.GateMode, "pow_cost", effective.PowCost, "codes_required", effective.CodesRequired)
	return c.JSON(http.StatusOK, effective)
}

// gateModeOf is a screening's effective gate mode: its own, or the server's gate.mode (empty when there is no gate).
func (s *Server) gateModeOf(own string) string {
	if own != "" {
		return own
	}
	return s.Gate.Mode
}

// known checks the screening exists before an operator's action on its line.
func (s *Server) known(ctx context.Context, id string) error {
	if !queue.ValidScreening(id) {
		return fmt.Errorf("admin: %q: %w", truncateID(id), booking.ErrUnknownScreening)
	}
	_, err := s.Store.Screening(ctx, id)
	return err
}

func truncateID(id string) string {
	if len(id) > 64 {
		return id[:64] + "…"
	}
	return id
}

func (s *Server) adminPause(c echo.Context) error {
	return s.adminAction(c, "paused", func(ctx context.Context, id string) error {
		if err := s.Store.SetPaused(ctx, id, true, time.Now()); err != nil {
			return err
		}
		return s.Queue.Pause(ctx, id)
	})
}

func (s *Server) adminResume(c echo.Context) error {
	return s.adminAction(c, "resumed", func(ctx context.Context, id string) error {
		if err := s.Store.SetPaused(ctx, id, false, time.Now()); err != nil {
			return err
		}
		return s.Queue.Resume(ctx, id)
	})
}

// adminClose ends the sale: the scheduler stops (SQL), registration is refused and the waiting are told
// (the line closes in Redis, as when the last seat sells).
func (s *Server) adminClose(c echo.Context) error {
	return s.adminAction(c, "closed", func(ctx context.Context, id string) error {
		if err := s.Store.CloseSale(ctx, id, time.Now()); err != nil {
			return err
		}
		s.refreshScheduler()
		return s.Queue.CloseSale(ctx, id)
	})
}

// resetBody is POST /api/admin/screenings/:id/reset's optional body; ?force=true does as force.
type resetBody struct {
	// Force resets a sale with held or confirmed orders too, deleting them.
	Force bool `json:"force"`
}

// resetView is what a reset answers: what it deleted, and the screening as it is now.
type resetView struct {
	booking.Reset
	Screening adminScreening `json:"screening"`
}

// adminReset empties a screening's sale: its orders in SQL, its line and seat locks in Redis (booking.ResetSale).
// A sale with held or confirmed orders is refused (409 SALE_HAS_ORDERS) unless forced.
func (s *Server) adminReset(c echo.Context) error {
	var body resetBody
	if c.Request().ContentLength != 0 {
		if err := decodeAdminBody(c, maxBodyBytes, &body); err != nil {
			return err
		}
	}
	force := body.Force || c.QueryParam("force") == "true"
	ctx := c.Request().Context()
	id := c.Param("id")
	if err := s.known(ctx, id); err != nil {
		return err
	}
	res, err := s.Booking.ResetSale(ctx, id, force)
	if err != nil {
		return err
	}
	s.Entry.Forget(id)
	if s.Notify.Enabled() {
		// The sale starts again: the addresses left for the one before are kept no longer.
		if err := s.Notify.Forget(ctx, id); err != nil {
			return err
		}
	}
	s.refreshScheduler()
	s.logFor(c).Info("admin: sale reset", "screening", id, "force", force, "orders_deleted", res.Orders, "live_orders_deleted", res.Live)
	v, err := s.adminView(ctx, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, resetView{Reset: res, Screening: v})
}

// adminArchive puts a screening away: off the public list (the admin API and the orders' exports keep it),
// its sale closed as by adminClose.
func (s *Server) adminArchive(c echo.Context) error {
	return s.adminAction(c, "archived", func(ctx context.Context, id string) error {
		if err := s.Store.SetArchived(ctx, id, true, time.Now()); err != nil {
			return err
		}
		s.refreshScheduler()
		return s.Queue.CloseSale(ctx, id)
	})
}

// adminUnarchive lists the screening again; its sale stays closed (a reset opens it).
func (s *Server) adminUnarchive(c echo.Context) error {
	return s.adminAction(c, "unarchived", func(ctx context.Context, id string) error {
		return s.Store.SetArchived(ctx, id, false, time.Now())
	})
}

func (s *Server) adminAction(c echo.Context, what string, act func(context.Context, string) error) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	if err := s.known(ctx, id); err != nil {
		return err
	}
	if err := act(ctx, id); err != nil {
		return err
	}
	s.logFor(c).Info("admin: sale "+what, "screening", id)
	v, err := s.adminView(ctx, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

func (s *Server) adminInstances(c echo.Context) error {
	list, err := s.Queue.Instances(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, list)
}

// liveFigures is one frame of the control room's stream.
type liveFigures struct {
	AtMs       int64            `json:"at"`
	Screenings []adminScreening `json:"screenings"`
	Instances  []queue.Instance `json:"instances"`
}

// adminStream sends the control room a frame of live figures every second, as server-sent events, until
// the client goes or the server shuts down. (The page reads it with fetch, which can send the key.) The
// stream outlives the listener's http.read_timeout and write_timeout: the read deadline is cleared (nothing
// more is read, and net/http's watch for the client's going would otherwise end the request at it), and
// each frame gets streamWriteWait to be written, so a client that stops reading is let go.
func (s *Server) adminStream(c echo.Context) error {
	ctx := c.Request().Context()
	w := c.Response()
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Time{}); err != nil {
		s.logFor(c).Warn("admin: stream deadline", "err", err)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	t := time.NewTicker(streamEvery)
	defer t.Stop()
	for {
		frame := liveFigures{AtMs: time.Now().UnixMilli()}
		var err error
		if frame.Screenings, err = s.adminScreenings(ctx, ""); err == nil {
			frame.Instances, err = s.Queue.Instances(ctx)
		}
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteWait))
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			s.logFor(c).Warn("admin: stream figures", "err", err)
			if _, werr := fmt.Fprintf(w, "event: error\ndata: %q\n\n", "figures unavailable; retrying"); werr != nil {
				return nil
			}
		} else {
			b, _ := json.Marshal(frame)
			if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
				return nil
			}
		}
		if err := rc.Flush(); err != nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.done:
			return nil
		case <-t.C:
		}
	}
}
