package main

import (
	"fmt"

	"github.com/quarrysearch/quarry/internal/cmdline"
)

// bytesFlag is a size flag: a byte count, or one with a unit (8MiB,
// 256MiB, 1GB; cmdline.ParseBytes). 0 is taken too, where the flag says
// what it means.
type bytesFlag int64

// String writes the size in the largest binary unit that divides it.
func (f *bytesFlag) String() string {
	n := int64(*f)
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.name)
		}
	}
	return fmt.Sprint(n)
}

// Type names what the flag takes, in its help.
func (f *bytesFlag) Type() string { return "size" }

// Set parses a size.
func (f *bytesFlag) Set(s string) error {
	if s == "0" {
		*f = 0
		return nil
	}
	n, err := cmdline.ParseBytes(s)
	if err != nil {
		return err
	}
	*f = bytesFlag(n)
	return nil
}

// Get returns the size in bytes, as an int64.
func (f *bytesFlag) Get() any { return int64(*f) }
