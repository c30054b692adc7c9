// Package clitest runs a built command as a user does, for the tests of
// cmd/quarry-bench: a binary, its stdin, its output and its exit code.
// (cmd/quarry's tests run the CLI in-process, through its run function.)
package clitest

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// Run runs bin with args and stdin, and returns its stdout, stderr and
// exit code. A binary that cannot be started fails the test.
func Run(t testing.TB, bin, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}
