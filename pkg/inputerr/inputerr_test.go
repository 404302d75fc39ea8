package inputerr

import (
	"errors"
	"fmt"
	"testing"
)

type notFound struct{ name string }

func (e *notFound) Error() string { return e.name + " not found" }

func TestWrapKeepsTheCause(t *testing.T) {
	err := fmt.Errorf("reading: %w", Wrap(&notFound{"shop"}))
	if !Is(err) {
		t.Fatal("a wrapped input error is not an input error")
	}
	var nf *notFound
	if !errors.As(err, &nf) || nf.name != "shop" {
		t.Fatalf("the cause is lost: %v", err)
	}
	if err.Error() != "reading: shop not found" {
		t.Fatalf("message = %q", err.Error())
	}
}

func TestWrapIsIdempotentAndNilSafe(t *testing.T) {
	if Wrap(nil) != nil {
		t.Fatal("Wrap(nil) is not nil")
	}
	e := Errorf("bad %s", "x")
	if Wrap(e) != e {
		t.Fatal("Wrap of an input error wraps it again")
	}
	if Is(errors.New("plain")) {
		t.Fatal("a plain error is an input error")
	}
}

func TestSuggest(t *testing.T) {
	err := fmt.Errorf("x: %w", &Error{Err: errors.New("unknown"), Suggestions: []string{"list"}})
	if s := Suggest(err); len(s) != 1 || s[0] != "list" {
		t.Fatalf("Suggest = %v", s)
	}
	if Suggest(errors.New("plain")) != nil {
		t.Fatal("a plain error has suggestions")
	}
}
