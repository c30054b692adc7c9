// Package cmdline holds what Quarry's two commands, quarry (cmd/quarry) and
// quarry-bench (cmd/quarry-bench), share on the command line: the process
// knobs of a long-running command (logging, the garbage collector,
// tracing), the flags pacing shard writes, and how counts print. Each flag
// is defined here once, on either kind of flag set (Flags: quarry's
// pflag, on cobra; quarry-bench's flag), so the two commands cannot
// describe or default it differently. quarry-bench's flag set, and a parse
// that allows flags after positional arguments, are here too.
package cmdline
