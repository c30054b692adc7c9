// Package cmdline holds what Quarry's two commands, quarry (cmd/quarry) and
// quarry-bench (cmd/quarry-bench), share on the command line: the process
// knobs of a long-running command (logging, the garbage collector,
// tracing), the flags pacing shard writes, a parse that allows flags after
// positional arguments, and how counts print. Each flag is defined here
// once, so the two commands cannot describe or default it differently.
package cmdline
