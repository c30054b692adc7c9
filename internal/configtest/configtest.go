// Package configtest checks a service's Config the way every service
// shapes it: EnsureDefaults fills zero fields only and is idempotent,
// Validate reports every problem, each naming its setting, and changes
// nothing.
package configtest

import (
	"reflect"
	"strings"
	"testing"
)

// Config is a pointer to a service's Config: defaults filled apart from
// the checks.
type Config[C any] interface {
	*C
	EnsureDefaults()
	Validate() error
}

// Defaults fills c's defaults and checks that they validate and that
// filling them again changes nothing. It returns the filled config.
func Defaults[C any, P Config[C]](t testing.TB, c C) C {
	t.Helper()
	P(&c).EnsureDefaults()
	if err := P(&c).Validate(); err != nil {
		t.Fatalf("the defaults do not validate: %v", err)
	}
	again := c
	P(&again).EnsureDefaults()
	if !reflect.DeepEqual(again, c) {
		t.Errorf("EnsureDefaults changed a config it had filled:\n%+v\nwas\n%+v", again, c)
	}
	return c
}

// Keeps checks that EnsureDefaults changes nothing in set, a config
// that gives every field EnsureDefaults fills a value of its own (the
// logger too): negative values that mean something among them.
func Keeps[C any, P Config[C]](t testing.TB, set C) {
	t.Helper()
	got := set
	P(&got).EnsureDefaults()
	if !reflect.DeepEqual(got, set) {
		t.Errorf("EnsureDefaults changed set values:\n%+v\nwas\n%+v", got, set)
	}
}

// Case is a valid config made wrong by Edit, and the problems Validate
// must report: one line each, each line holding its Want.
type Case[C any] struct {
	Name string
	Edit func(*C)
	Want []string
}

// Wrong makes a Case.
func Wrong[C any](name string, edit func(*C), want ...string) Case[C] {
	return Case[C]{Name: name, Edit: edit, Want: want}
}

// Problems runs each case on a copy of good: Validate must report exactly
// the wanted problems, and change nothing.
func Problems[C any, P Config[C]](t *testing.T, good C, cases []Case[C]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			// Edited twice, so that before shares nothing Edit made.
			bad, before := good, good
			tc.Edit(&bad)
			tc.Edit(&before)
			err := P(&bad).Validate()
			if err == nil {
				t.Fatal("a bad config validated")
			}
			lines := strings.Split(err.Error(), "\n")
			for _, w := range tc.Want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate: %v\nwant it to say %q", err, w)
				}
			}
			if len(lines) != len(tc.Want) {
				t.Errorf("Validate reported %d problems, want %d: %v", len(lines), len(tc.Want), err)
			}
			if !reflect.DeepEqual(bad, before) {
				t.Error("Validate changed the config")
			}
		})
	}
}
