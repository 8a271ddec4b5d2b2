package console_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"roomhub/hub/console"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

const password = "correct horse battery staple"

// A session one instance issues opens every instance of the fleet with the
// same password, until it expires or is signed out; a forged, altered or
// expired cookie, or another password's, opens nothing.
func TestSessions_SignedExpiringRevocable(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	a := console.New(testhub.Start(t, rs.Addr(), nil).Hub, password)
	b := console.New(testhub.Start(t, rs.Addr(), nil).Hub, password)
	ctx, now := context.Background(), time.Now()
	ss, cookie, err := a.Issue(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.Verify(ctx, cookie, now.Add(time.Hour)); err != nil || got.ID != ss.ID {
		t.Fatalf("another instance: %+v %v", got, err)
	}
	if _, err := b.Verify(ctx, cookie, now.Add(console.SessionTTL)); !errors.Is(err, console.ErrNoSession) {
		t.Fatalf("after 12 hours: %v", err)
	}
	parts := strings.Split(cookie, ".")
	forged := []string{
		"", "x", cookie + ".x", strings.Repeat("a", 300),
		parts[0] + "." + "99999999999999" + "." + parts[2], // a later expiry under the same signature
		strings.Replace(parts[0], parts[0][:1], "f", 1) + "." + parts[1] + "." + parts[2],
		parts[0] + "." + parts[1] + "." + parts[2][:len(parts[2])-1] + "A",
	}
	for _, f := range forged {
		if _, err := b.Verify(ctx, f, now); !errors.Is(err, console.ErrNoSession) && f != cookie {
			t.Errorf("forged %q opened a session: %v", f, err)
		}
	}
	other := console.New(testhub.Start(t, rs.Addr(), nil).Hub, password+"!")
	if _, err := other.Verify(ctx, cookie, now); !errors.Is(err, console.ErrNoSession) {
		t.Fatalf("a new password keeps the old sessions: %v", err)
	}
	token, _ := a.CSRF(ctx, ss)
	if ok, _ := b.CheckCSRF(ctx, ss, token); !ok {
		t.Fatal("the CSRF token of the session fails on another instance")
	}
	if ok, _ := b.CheckCSRF(ctx, console.Session{ID: strings.Repeat("0", 32)}, token); ok {
		t.Fatal("one session's CSRF token passes for another")
	}
	if err := a.Revoke(ctx, ss, now); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Verify(ctx, cookie, now); !errors.Is(err, console.ErrNoSession) {
		t.Fatalf("signed out, the cookie still opens: %v", err)
	}
}

// The password is compared whole.
func TestSessions_CheckPassword(t *testing.T) {
	t.Parallel()
	s := console.New(testhub.Start(t, testredis.Start(t).Addr(), nil).Hub, password)
	for p, want := range map[string]bool{password: true, "": false, password[:16]: false, password + " ": false, strings.ToUpper(password): false} {
		if s.CheckPassword(p) != want {
			t.Errorf("CheckPassword(%q) = %v", p, !want)
		}
	}
}

// No cookie a client makes up opens a session, and none panics: only the
// one issued (make fuzz runs it with the fuzzing engine).
func FuzzSessions_Verify(f *testing.F) {
	s := console.New(testhub.Start(f, testredis.Start(f).Addr(), nil).Hub, password)
	ctx, now := context.Background(), time.Now()
	_, cookie, err := s.Issue(ctx, now)
	if err != nil {
		f.Fatal(err)
	}
	parts := strings.Split(cookie, ".")
	for _, seed := range []string{"", ".", "..", cookie + "x", parts[0] + ".1." + parts[2], strings.Repeat("0", 32) + ".99999999999999.x", "\x00.\xff.\n"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, c string) {
		if _, err := s.Verify(ctx, c, now); err == nil && c != cookie {
			t.Fatalf("%q opened a session", c)
		}
	})
}
