// Tests of a screening's access codes on both backends: issuing, the shared code, revoking, listing, and the
// claim of a one-time code, which exactly one of many racing tokens wins.

package booking_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"testing"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/testenv"
)

// formatted is a one-time code as IssueCodes hands it out.
var formatted = regexp.MustCompile(`^[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$`)

func TestNormalizeCodeDropsDashesAndSpacesAndUpperCases(t *testing.T) {
	for in, want := range map[string]string{
		"abcd-efgh-jkmn":   "ABCDEFGHJKMN",
		" ab cd-EF gh ":    "ABCDEFGH",
		"ABCDEFGHJKMN":     "ABCDEFGHJKMN",
		"--":               "",
		"presale-2026 vip": "PRESALE2026VIP",
	} {
		if got := booking.NormalizeCode(in); got != want {
			t.Errorf("NormalizeCode(%q) = %q, want %q", in, got, want)
		}
	}
	if got, want := booking.FormatCode("ABCDEFGHJKMN"), "ABCD-EFGH-JKMN"; got != want {
		t.Errorf("FormatCode = %q, want %q", got, want)
	}
}

func TestNewCodeIsTwelveCrockfordCharacters(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		c := booking.NewCode()
		if !formatted.MatchString(booking.FormatCode(c)) {
			t.Fatalf("NewCode() = %q, want 12 Crockford base32 characters", c)
		}
		if seen[c] {
			t.Fatalf("NewCode() repeated %q within 1000 codes", c)
		}
		seen[c] = true
	}
}

func TestIssueCodesRequiresACodeAndListsThemUnused(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 1, 1)
		store := booking.NewStore(env.DB)
		if a, err := store.Access(ctx, "s1"); err != nil || a.CodesRequired || a.Shared {
			t.Fatalf("Access before any code = %+v, %v; want nothing required", a, err)
		}
		codes, err := store.IssueCodes(ctx, "s1", 3)
		if err != nil || len(codes) != 3 {
			t.Fatalf("IssueCodes(3) = %v, %v", codes, err)
		}
		more, err := store.IssueCodes(ctx, "s1", 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range append(codes, more...) {
			if !formatted.MatchString(c) {
				t.Errorf("issued code %q, want XXXX-XXXX-XXXX", c)
			}
		}
		if a, err := store.Access(ctx, "s1"); err != nil || !a.CodesRequired || a.Shared {
			t.Errorf("Access after IssueCodes = %+v, %v; want codes required, no shared code", a, err)
		}
		list, err := store.Codes(ctx, "s1")
		if err != nil || len(list) != 5 {
			t.Fatalf("Codes = %+v, %v; want 5", list, err)
		}
		listed := map[string]bool{}
		for i, c := range list {
			listed[c.Code] = true
			if c.State != booking.CodeUnused || c.UsedAt != nil || c.CreatedAt.IsZero() {
				t.Errorf("Codes[%d] = %+v, want unused, created, never used", i, c)
			}
			if i > 0 && (c.CreatedAt.Before(list[i-1].CreatedAt) ||
				c.CreatedAt.Equal(list[i-1].CreatedAt) && c.Code < list[i-1].Code) {
				t.Errorf("Codes[%d] = %+v out of order after %+v", i, c, list[i-1])
			}
		}
		for _, c := range append(codes, more...) {
			if !listed[c] {
				t.Errorf("issued %q not listed", c)
			}
		}
	})
}

func TestIssueCodesRefusesABadCountOrAnUnknownScreening(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 1, 1)
		store := booking.NewStore(env.DB)
		for _, n := range []int{0, -1, booking.MaxCodesPerIssue + 1} {
			var invalid *booking.InvalidError
			if _, err := store.IssueCodes(ctx, "s1", n); !errors.As(err, &invalid) || !errors.Is(err, booking.ErrBadScreening) {
				t.Errorf("IssueCodes(%d) = %v, want a refusal", n, err)
			}
		}
		if _, err := store.IssueCodes(ctx, "nope", 1); !errors.Is(err, booking.ErrUnknownScreening) {
			t.Errorf("IssueCodes(nope) = %v, want ErrUnknownScreening", err)
		}
		if a, _ := store.Access(ctx, "s1"); a.CodesRequired {
			t.Errorf("a refused IssueCodes required codes: %+v", a)
		}
		if list, _ := store.Codes(ctx, "s1"); len(list) != 0 {
			t.Errorf("a refused IssueCodes left codes: %+v", list)
		}
	})
}

func TestIssueCodesWritesTheMostCodesInOneCall(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 1, 1)
		store := booking.NewStore(env.DB)
		codes, err := store.IssueCodes(ctx, "s1", booking.MaxCodesPerIssue)
		if err != nil || len(codes) != booking.MaxCodesPerIssue {
			t.Fatalf("IssueCodes(%d) = %d codes, %v", booking.MaxCodesPerIssue, len(codes), err)
		}
		list, err := store.Codes(ctx, "s1")
		if err != nil || len(list) != booking.MaxCodesPerIssue {
			t.Fatalf("Codes = %d, %v; want %d", len(list), err, booking.MaxCodesPerIssue)
		}
		if err := store.ClaimCode(ctx, "s1", codes[len(codes)-1], "tok-last"); err != nil {
			t.Errorf("ClaimCode of the last code issued = %v", err)
		}
	})
}

func TestASharedCodeLetsAnyoneInUntilRemoved(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 1, 1)
		store := booking.NewStore(env.DB)
		if err := store.SetSharedCode(ctx, "s1", "presale-2026"); err != nil {
			t.Fatal(err)
		}
		if a, err := store.Access(ctx, "s1"); err != nil || !a.CodesRequired || !a.Shared {
			t.Errorf("Access after SetSharedCode = %+v, %v; want required and shared", a, err)
		}
		for i, typed := range []string{"PRESALE2026", "presale 2026", "Pre-Sale-2026"} {
			if err := store.ClaimCode(ctx, "s1", typed, fmt.Sprintf("tok%d", i)); err != nil {
				t.Errorf("ClaimCode(%q) by token %d = %v, want nil", typed, i, err)
			}
		}
		if err := store.ClaimCode(ctx, "s1", "PRESALE2027", "tok9"); !errors.Is(err, booking.ErrCodeInvalid) {
			t.Errorf("ClaimCode of a wrong code = %v, want ErrCodeInvalid", err)
		}
		if err := store.RevokeCode(ctx, "s1", "presale-2026"); err != nil {
			t.Fatalf("RevokeCode(shared) = %v", err)
		}
		if a, _ := store.Access(ctx, "s1"); a.Shared || !a.CodesRequired {
			t.Errorf("Access after revoking the shared code = %+v, want required, none shared", a)
		}
		if err := store.ClaimCode(ctx, "s1", "PRESALE2026", "tok0"); !errors.Is(err, booking.ErrCodeInvalid) {
			t.Errorf("ClaimCode of the revoked shared code = %v, want ErrCodeInvalid", err)
		}
		if err := store.SetSharedCode(ctx, "s1", "again-and-again"); err != nil {
			t.Fatal(err)
		}
		if err := store.SetSharedCode(ctx, "s1", ""); err != nil {
			t.Fatal(err)
		}
		if a, _ := store.Access(ctx, "s1"); a.Shared {
			t.Errorf("Access after SetSharedCode(\"\") = %+v, want no shared code", a)
		}
	})
}

func TestASharedCodeIsValidated(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 1, 1)
		store := booking.NewStore(env.DB)
		long := make([]byte, 65)
		for i := range long {
			long[i] = 'A'
		}
		// Under ten letters and digits a shared code can be guessed: "PRESALE26" is nine.
		for _, bad := range []string{"abc", "a-b-c", "PRESALE26", "presale-2-6", "café-2026", "code!", "emoji🎟x", string(long)} {
			var invalid *booking.InvalidError
			if err := store.SetSharedCode(ctx, "s1", bad); !errors.As(err, &invalid) || !errors.Is(err, booking.ErrBadScreening) {
				t.Errorf("SetSharedCode(%q) = %v, want a refusal", bad, err)
			}
		}
		if a, _ := store.Access(ctx, "s1"); a.CodesRequired || a.Shared {
			t.Errorf("refused shared codes changed the screening: %+v", a)
		}
		if err := store.SetSharedCode(ctx, "s1", string(long[:64])); err != nil {
			t.Errorf("SetSharedCode of 64 characters = %v, want nil", err)
		}
		if err := store.SetSharedCode(ctx, "s1", "presale-2026"); err != nil {
			t.Errorf("SetSharedCode of ten letters and digits = %v, want nil", err)
		}
		if err := store.SetSharedCode(ctx, "nope", "abcdefghij"); !errors.Is(err, booking.ErrUnknownScreening) {
			t.Errorf("SetSharedCode(nope) = %v, want ErrUnknownScreening", err)
		}
	})
}

func TestSetCodesRequiredTurnsTheCheckOffAndOn(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 1, 1)
		store := booking.NewStore(env.DB)
		if _, err := store.IssueCodes(ctx, "s1", 1); err != nil {
			t.Fatal(err)
		}
		for _, on := range []bool{false, true, false} {
			if err := store.SetCodesRequired(ctx, "s1", on); err != nil {
				t.Fatal(err)
			}
			if a, err := store.Access(ctx, "s1"); err != nil || a.CodesRequired != on {
				t.Errorf("Access after SetCodesRequired(%v) = %+v, %v", on, a, err)
			}
		}
		if list, _ := store.Codes(ctx, "s1"); len(list) != 1 {
			t.Errorf("Codes after turning the check off = %+v, want the code kept", list)
		}
		if err := store.SetCodesRequired(ctx, "nope", true); !errors.Is(err, booking.ErrUnknownScreening) {
			t.Errorf("SetCodesRequired(nope) = %v, want ErrUnknownScreening", err)
		}
		if _, err := store.Access(ctx, "nope"); !errors.Is(err, booking.ErrUnknownScreening) {
			t.Errorf("Access(nope) = %v, want ErrUnknownScreening", err)
		}
		if _, err := store.Codes(ctx, "nope"); !errors.Is(err, booking.ErrUnknownScreening) {
			t.Errorf("Codes(nope) = %v, want ErrUnknownScreening", err)
		}
	})
}

func TestAOneTimeCodeLetsInOneTokenAndThatTokenAgainUntilItReserves(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 1, 1)
		env.Demo(t, "s2", 1, 1)
		store := booking.NewStore(env.DB)
		codes, err := store.IssueCodes(ctx, "s1", 2)
		if err != nil {
			t.Fatal(err)
		}
		typed := booking.NormalizeCode(codes[0])[:6] + " " + booking.NormalizeCode(codes[0])[6:] // as a person might
		if err := store.ClaimCode(ctx, "s1", typed, "tokA"); err != nil {
			t.Fatalf("first ClaimCode = %v, want nil", err)
		}
		if err := store.ClaimCode(ctx, "s1", codes[0], "tokA"); err != nil {
			t.Errorf("ClaimCode again by the same token = %v, want nil", err)
		}
		if err := store.ClaimCode(ctx, "s1", codes[0], "tokB"); !errors.Is(err, booking.ErrCodeUsed) {
			t.Errorf("ClaimCode by another token = %v, want ErrCodeUsed", err)
		}
		// Once tokA's place has ended in a reservation (here another screening's does not count), the
		// code admits nobody, tokA included.
		reserve := func(screening, holder string) {
			t.Helper()
			if _, err := env.DB.ExecContext(ctx, env.DB.Rebind(`INSERT INTO reservations (screening_id, holder, pass_id, code)
				VALUES (?, ?, ?, ?)`), screening, holder, screening+holder, screening+holder); err != nil {
				t.Fatal(err)
			}
		}
		reserve("s2", "tokA")
		if err := store.ClaimCode(ctx, "s1", codes[0], "tokA"); err != nil {
			t.Errorf("ClaimCode by its token after a reservation in another screening = %v, want nil", err)
		}
		reserve("s1", "tokA")
		if err := store.ClaimCode(ctx, "s1", codes[0], "tokA"); !errors.Is(err, booking.ErrCodeSpent) {
			t.Errorf("ClaimCode by its own token after it reserved = %v, want ErrCodeSpent", err)
		}
		if err := store.ClaimCode(ctx, "s1", codes[0], "tokB"); !errors.Is(err, booking.ErrCodeUsed) {
			t.Errorf("ClaimCode by another token after the reservation = %v, want ErrCodeUsed", err)
		}
		if err := store.ClaimCode(ctx, "s2", codes[1], "tokB"); !errors.Is(err, booking.ErrCodeInvalid) {
			t.Errorf("ClaimCode of s1's code at s2 = %v, want ErrCodeInvalid", err)
		}
		for _, bad := range []string{"", "ZZZZ-ZZZZ-ZZZZ", "not a code", "ABCD-EFGH-IJKL"} {
			if err := store.ClaimCode(ctx, "s1", bad, "tokB"); !errors.Is(err, booking.ErrCodeInvalid) {
				t.Errorf("ClaimCode(%q) = %v, want ErrCodeInvalid", bad, err)
			}
		}
		if err := store.ClaimCode(ctx, "nope", codes[1], "tokB"); !errors.Is(err, booking.ErrUnknownScreening) {
			t.Errorf("ClaimCode at an unknown screening = %v, want ErrUnknownScreening", err)
		}
		list, err := store.Codes(ctx, "s1")
		if err != nil {
			t.Fatal(err)
		}
		states := map[string]booking.AccessCode{}
		for _, c := range list {
			states[c.Code] = c
		}
		if c := states[codes[0]]; c.State != booking.CodeUsed || c.UsedAt == nil || c.UsedAt.Before(c.CreatedAt) {
			t.Errorf("claimed code listed as %+v, want used, with when", c)
		}
		if c := states[codes[1]]; c.State != booking.CodeUnused || c.UsedAt != nil {
			t.Errorf("unclaimed code listed as %+v, want unused", c)
		}
	})
}

func TestARevokedCodeLetsNobodyInAndStaysListed(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 1, 1)
		store := booking.NewStore(env.DB)
		codes, err := store.IssueCodes(ctx, "s1", 2)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.ClaimCode(ctx, "s1", codes[1], "tokA"); err != nil {
			t.Fatal(err)
		}
		for _, c := range codes {
			if err := store.RevokeCode(ctx, "s1", c); err != nil {
				t.Fatalf("RevokeCode = %v", err)
			}
		}
		if err := store.RevokeCode(ctx, "s1", booking.NormalizeCode(codes[0])); err != nil {
			t.Errorf("RevokeCode twice = %v, want nil", err)
		}
		for _, c := range codes {
			if err := store.ClaimCode(ctx, "s1", c, "tokA"); !errors.Is(err, booking.ErrCodeInvalid) {
				t.Errorf("ClaimCode of a revoked code = %v, want ErrCodeInvalid", err)
			}
		}
		list, err := store.Codes(ctx, "s1")
		if err != nil || len(list) != 2 {
			t.Fatalf("Codes = %+v, %v", list, err)
		}
		for _, c := range list {
			if c.State != booking.CodeRevoked {
				t.Errorf("revoked code listed as %+v, want revoked", c)
			}
		}
		if err := store.RevokeCode(ctx, "s1", "ZZZZ-ZZZZ-ZZZZ"); !errors.Is(err, booking.ErrUnknownCode) {
			t.Errorf("RevokeCode of an unknown code = %v, want ErrUnknownCode", err)
		}
		if err := store.RevokeCode(ctx, "nope", codes[0]); !errors.Is(err, booking.ErrUnknownScreening) {
			t.Errorf("RevokeCode at an unknown screening = %v, want ErrUnknownScreening", err)
		}
	})
}

func TestReleaseCodeGivesBackOnlyTheTokensOwnClaim(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 1, 1)
		store := booking.NewStore(env.DB)
		codes, err := store.IssueCodes(ctx, "s1", 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.ClaimCode(ctx, "s1", codes[0], "tokA"); err != nil {
			t.Fatal(err)
		}
		if err := store.ReleaseCode(ctx, "s1", codes[0], "tokB"); err != nil {
			t.Fatal(err)
		}
		if err := store.ClaimCode(ctx, "s1", codes[0], "tokB"); !errors.Is(err, booking.ErrCodeUsed) {
			t.Errorf("ClaimCode after another token's release = %v, want ErrCodeUsed (tokA keeps it)", err)
		}
		if err := store.ReleaseCode(ctx, "s1", codes[0], "tokA"); err != nil {
			t.Fatal(err)
		}
		if list, _ := store.Codes(ctx, "s1"); len(list) != 1 || list[0].State != booking.CodeUnused || list[0].UsedAt != nil {
			t.Errorf("Codes after the release = %+v, want unused", list)
		}
		if err := store.ClaimCode(ctx, "s1", codes[0], "tokB"); err != nil {
			t.Errorf("ClaimCode after the holder's release = %v, want nil", err)
		}
	})
}

func TestOneCodeClaimedByManyTokensAtOnceHasOneWinner(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 1, 1)
		store := booking.NewStore(env.DB)
		codes, err := store.IssueCodes(ctx, "s1", 5)
		if err != nil {
			t.Fatal(err)
		}
		const claimants = 24
		for _, code := range codes {
			var wg sync.WaitGroup
			start := make(chan struct{})
			errs := make([]error, claimants)
			for i := range claimants {
				wg.Go(func() {
					<-start
					errs[i] = store.ClaimCode(ctx, "s1", code, fmt.Sprintf("tok%02d", i))
				})
			}
			close(start)
			wg.Wait()
			winners := 0
			for i, err := range errs {
				switch {
				case err == nil:
					winners++
				case !errors.Is(err, booking.ErrCodeUsed):
					t.Errorf("ClaimCode by tok%02d = %v, want nil or ErrCodeUsed", i, err)
				}
			}
			if winners != 1 {
				t.Errorf("code %s: %d tokens got in, want exactly 1", code, winners)
			}
		}
	})
}

// A held order that lapsed or was cancelled gives back its seats, not its code: the code its token bought
// with stays spent (docs/protocol.md 12.3).
func TestACodeWhoseOrderLapsedOrWasCancelledStaysSpent(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 1, 1)
		store := booking.NewStore(env.DB)
		codes, err := store.IssueCodes(ctx, "s1", 2)
		if err != nil {
			t.Fatal(err)
		}
		for i, status := range []string{booking.StatusExpired, booking.StatusCancelled} {
			token := fmt.Sprintf("tok%d", i)
			if err := store.ClaimCode(ctx, "s1", codes[i], token); err != nil {
				t.Fatalf("first ClaimCode by %s = %v, want nil", token, err)
			}
			if _, err := env.DB.ExecContext(ctx, env.DB.Rebind(`INSERT INTO reservations (screening_id, holder, pass_id, code, status)
				VALUES ('s1', ?, ?, ?, ?)`), token, token, token, status); err != nil {
				t.Fatal(err)
			}
			if err := store.ClaimCode(ctx, "s1", codes[i], token); !errors.Is(err, booking.ErrCodeSpent) {
				t.Errorf("ClaimCode after its order was %s = %v, want ErrCodeSpent", status, err)
			}
		}
	})
}
