// Command quarry runs and uses the Quarry search platform.
//
//	quarry serve --demo                 everything in one process, with demo data
//	quarry indexer|searcher|broker      one role against --nats URL
//	quarry index create|ls|show|rm      manage indexes; index rejected lists the documents not applied
//	quarry alias create|switch|ls|rm    names that point at an index, switched at once
//	quarry ingest|put|delete            write documents
//	quarry get                          read one document by id
//	quarry search                       query an index
//	quarry team|token                   team limits, HTTP API tokens
//	quarry judgements|eval              judgement lists, the relevance gate, offline metrics
//	quarry completion SHELL             bash, zsh, fish or powershell completion
//
// `quarry --help` lists them all, `quarry help COMMAND` or `quarry COMMAND
// --help` one's flags: the commands are a cobra tree (newRoot), from which
// the help and the completion are generated. The connection flags
// (--nats, --timeout, --user, --creds, …) are the root's, so they may come
// before the command or after it: quarry --nats URL search INDEX TEXT.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/cmdline"
	"github.com/quarrysearch/quarry/node"
)

// version is the release quarry version prints.
const version = api.Version

// main wires the process to run: its arguments, streams and environment,
// its interrupt and SIGTERM, and its exit status.
func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the command line args (without the program's name) on the
// given streams, with the process's environment, and returns its exit
// status. The end of ctx stops a long-running command (serve, a role,
// dev, plugin logs --follow) as an interrupt does.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv, lookPath: exec.LookPath}
	return e.run(ctx, args)
}

// env is what a command takes from its process: the standard streams,
// the environment and the search of PATH. run gives the process's own;
// a test gives buffers and variables of its own, to run commands in its
// process, side by side.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// getenv reads an environment variable (QUARRY_NATS and the like).
	getenv func(string) string
	// lookPath finds an executable on PATH, as exec.LookPath does.
	lookPath func(string) (string, error)
}

// run runs the command line args with e and returns the exit status.
// Bad use found before a command runs (an unknown command or flag, a
// wrong number of arguments) is said once on stderr, with the command's
// usage line, and exits with exitUsage; a command's own failure is said
// as "quarry COMMAND: why", and exits with exitCode's status.
func (e *env) run(ctx context.Context, args []string) int {
	if err := leadingFlags(args, e.getenv); err != nil {
		fmt.Fprintf(e.stderr, "quarry: %v\nRun 'quarry --help' for usage.\n", err)
		return exitUsage
	}
	// started is set once the command's flags and arguments are taken,
	// right before it runs: an error before is bad use.
	started := false
	root := e.newRoot(&started)
	root.SetArgs(append([]string{}, args...))
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	if !started {
		fmt.Fprintf(e.stderr, "%s: %v\n", cmd.CommandPath(), err)
		if cmd.HasAvailableSubCommands() {
			fmt.Fprintf(e.stderr, "Run '%s --help' for its commands.\n", cmd.CommandPath())
		} else {
			fmt.Fprintf(e.stderr, "Usage: %s\nRun '%s --help' for its flags.\n", cmd.UseLine(), cmd.CommandPath())
		}
		return exitUsage
	}
	var status exitStatus
	switch {
	case errors.Is(err, errUsage):
		return exitUsage
	case errors.As(err, &status):
		return int(status)
	}
	fmt.Fprintf(e.stderr, "quarry %s: %s\n", topName(cmd), errorLine(err))
	return exitCode(err)
}

// topName is the name of the command of quarry's that cmd is or is under:
// "index" for quarry index create. Errors are said under it.
func topName(cmd *cobra.Command) string {
	for cmd.HasParent() && cmd.Parent().HasParent() {
		cmd = cmd.Parent()
	}
	return cmd.Name()
}

// Annotations of a command (cobra.Command.Annotations).
const (
	// noConnection marks a command that connects to no NATS deployment
	// (it runs its own, or none): the connection flags are not its, its
	// help does not list them and it refuses them.
	noConnection = "quarry.no-connection"
)

// connects reports whether cmd connects to NATS: whether it takes the
// connection flags.
func connects(cmd *cobra.Command) bool {
	for c := cmd; c != nil; c = c.Parent() {
		if c.Annotations[noConnection] != "" {
			return false
		}
	}
	return true
}

// local marks cmd as one that connects to no NATS deployment (see
// noConnection) and returns it.
func local(cmd *cobra.Command) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[noConnection] = "yes"
	return cmd
}

// A command's help lists its sub-commands in the order they were added:
// the order a user meets them in (create, ls, show, …, rm).
func init() { cobra.EnableCommandSorting = false }

// Groups of the commands in quarry --help.
var commandGroups = []*cobra.Group{
	{ID: "run", Title: "Run Quarry:"},
	{ID: "data", Title: "Indexes and documents:"},
	{ID: "relevance", Title: "Plugins and relevance:"},
	{ID: "access", Title: "Teams and access:"},
}

// newRoot builds quarry's command tree for one run with e. The
// connection flags are the root's (persistent: every command's, before
// or after its name); the root's PersistentPreRunE sets *started once a
// command's flags and arguments are taken.
func (e *env) newRoot(started *bool) *cobra.Command {
	var nf natsFlags
	root := &cobra.Command{
		Use:   "quarry",
		Short: "a search platform on NATS, bleve and WebAssembly plugins",
		Long: fmt.Sprintf("quarry %s: a search platform on NATS, bleve and WebAssembly plugins.\n\n"+
			"The connection flags (--nats, --user, --creds, …) may come before the command or\n"+
			"after it: quarry --nats URL search INDEX QUERY.", version),
		Args:          unknownCommand,
		SilenceErrors: true,
		SilenceUsage:  true,
		// The usage when no command is given, on stderr.
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(e.stderr)
			cmd.Help()
			return errUsage
		},
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if !connects(cmd) {
				var given []string
				cmd.Root().PersistentFlags().VisitAll(func(f *pflag.Flag) {
					if f.Changed {
						given = append(given, "--"+f.Name)
					}
				})
				if len(given) > 0 {
					return fmt.Errorf("%s: a connection flag, and this command connects to no NATS deployment", strings.Join(given, ", "))
				}
			}
			*started = true
			return nil
		},
	}
	root.SetIn(e.stdin)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetUsageFunc(usageFunc)
	root.SuggestionsMinimumDistance = 2
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return dashHint(err) })
	nf.register(root.PersistentFlags(), e.getenv)
	root.AddGroup(commandGroups...)
	add := func(group string, cmds ...*cobra.Command) {
		for _, c := range cmds {
			c.GroupID = group
			root.AddCommand(c)
		}
	}
	add("run",
		serveCmd(e),
		roleCmd(e, &nf, "indexer"),
		roleCmd(e, &nf, "searcher"),
		roleCmd(e, &nf, "broker"),
		initCmd(e, &nf),
	)
	add("data",
		indexCmd(e, &nf),
		aliasCmd(e, &nf),
		ingestCmd(e, &nf),
		putCmd(e, &nf),
		patchCmd(e, &nf),
		deleteCmd(e, &nf),
		deleteByQueryCmd(e, &nf),
		getCmd(e, &nf),
		searchCmd(e, &nf),
	)
	add("relevance",
		pluginCmd(e, &nf),
		devCmd(e, &nf),
		pipelineCmd(e, &nf),
		queriesCmd(e, &nf),
		judgementsCmd(e, &nf),
		eventsCmd(e, &nf),
		evalCmd(e, &nf),
	)
	add("access",
		teamCmd(e, &nf),
		tokenCmd(e, &nf),
	)
	root.AddCommand(
		benchCmd(e),
		versionCmd(e),
	)
	// cobra would add these as it runs; added now, they are marked as
	// taking no connection flags.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		switch c.Name() {
		case "help":
			local(c).Short = "help about any command"
			// cobra's says "Unknown help topic" and exits 0: a script
			// asking for the help of a command that does not exist must
			// learn it did not get it.
			c.Run = nil
			c.RunE = func(h *cobra.Command, args []string) error {
				target, rest, err := h.Root().Find(args)
				if target == nil || err != nil || len(rest) > 0 {
					fmt.Fprintf(e.stderr, "quarry help: no command %q\nRun 'quarry --help' for the commands.\n", strings.Join(args, " "))
					return errUsage
				}
				target.InitDefaultHelpFlag()
				return target.Help()
			}
		case "completion":
			local(c).Short = "print the completion script of a shell: bash, zsh, fish or powershell"
		}
	}
	return root
}

func versionCmd(e *env) *cobra.Command {
	return local(&cobra.Command{
		Use:   "version",
		Short: "print the version",
		Args:  argCount(0, 0),
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(e.stdout, "quarry", version)
			return err
		},
	})
}

// leadingFlags checks the flags before the command's name: only the
// connection flags (and --help) may come there. cobra would take another
// command's flag there for one of the root's, and the command's name for
// its value.
func leadingFlags(args []string, getenv func(string) string) error {
	if len(args) == 0 || !strings.HasPrefix(args[0], "-") {
		return nil
	}
	fs := pflag.NewFlagSet("quarry", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SetInterspersed(false)
	var nf natsFlags
	nf.register(fs, getenv)
	help := fs.BoolP("help", "h", false, "")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%v: only the connection flags (--nats, --user, --creds, …) may come before the command; put the others after it", dashHint(err))
	}
	if fs.NArg() == 0 && !*help {
		return errors.New("no command after the flags")
	}
	return nil
}

// singleDash finds a flag written with one dash in pflag's error: "unknown
// shorthand flag: 'j' in -json".
var singleDash = regexp.MustCompile(`in -([a-z][a-z0-9-]+)$`)

// dashHint adds to a flag error, when the flag was written with one dash
// (as Go's flag package took it), that it takes two.
func dashHint(err error) error {
	if m := singleDash.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Errorf("%w (a flag's name takes two dashes: --%s)", err, m[1])
	}
	return err
}

// newCommand makes a command that takes between least and most
// positional arguments (most negative: no most), as use names them after
// its name ("get INDEX ID"); short is its line in its parent's list of
// commands, long what its help says.
func newCommand(use, short, long string, least, most int) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Long: long, Args: argCount(least, most)}
}

// newGroup makes a command of sub-commands. Without one it writes its
// help on stderr and exits with exitUsage.
func newGroup(use, short, long string, subs ...*cobra.Command) *cobra.Command {
	g := &cobra.Command{Use: use, Short: short, Long: long, Args: unknownCommand,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(cmd.ErrOrStderr())
			cmd.Help()
			return errUsage
		},
	}
	g.AddCommand(subs...)
	return g
}

// unknownCommand is the Args of a command with sub-commands: it takes no
// argument but the name of one of them.
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q", args[0])
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, " or "))
	}
	return errors.New(msg)
}

// argCount is the Args of a command that takes between least and most
// positional arguments (most negative: no most), as its Use names them.
func argCount(least, most int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) >= least && (most < 0 || len(args) <= most) {
			return nil
		}
		want := strings.TrimSpace(strings.TrimPrefix(cmd.Use, cmd.Name()))
		if want == "" {
			want = "none"
		}
		return fmt.Errorf("wrong number of arguments: %d, want %s", len(args), want)
	}
}

// flagWidth is the width the flags' help is wrapped to.
const flagWidth = 100

// usageFunc writes a command's usage, generated from the tree as cobra's
// own is; the connection flags are listed apart, for the commands that
// take them.
func usageFunc(c *cobra.Command) error {
	w := c.OutOrStderr()
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(w, "Usage:\n  %s COMMAND [flags]\n", c.CommandPath())
	} else {
		fmt.Fprintf(w, "Usage:\n  %s\n", c.UseLine())
	}
	if len(c.Aliases) > 0 {
		fmt.Fprintf(w, "\nAliases:\n  %s\n", c.NameAndAliases())
	}
	if c.HasExample() {
		fmt.Fprintf(w, "\nExamples:\n%s\n", strings.TrimRight(c.Example, "\n"))
	}
	if c.HasAvailableSubCommands() {
		var subs []*cobra.Command // those listed
		pad := 0
		for _, s := range c.Commands() {
			if s.IsAvailableCommand() || s.Name() == "help" {
				subs = append(subs, s)
				pad = max(pad, len(s.Name()))
			}
		}
		list := func(title, group string) {
			var lines []string
			for _, s := range subs {
				if s.GroupID == group {
					lines = append(lines, fmt.Sprintf("  %-*s  %s\n", pad, s.Name(), s.Short))
				}
			}
			if len(lines) > 0 {
				fmt.Fprintf(w, "\n%s\n%s", title, strings.Join(lines, ""))
			}
		}
		for _, g := range c.Groups() {
			list(g.Title, g.ID)
		}
		title := "Commands:"
		if len(c.Groups()) > 0 {
			title = "Other commands:"
		}
		list(title, "")
	}
	if fs := c.LocalNonPersistentFlags(); fs.HasAvailableFlags() {
		fmt.Fprintf(w, "\nFlags:\n%s", fs.FlagUsagesWrapped(flagWidth))
	}
	if connects(c) {
		fmt.Fprintf(w, "\nConnection flags (before or after the command):\n%s", c.Root().PersistentFlags().FlagUsagesWrapped(flagWidth))
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(w, "\nRun '%s COMMAND --help' for a command's help.\n", c.CommandPath())
	}
	return nil
}

// exitStatus is an error that ends quarry with that status and nothing
// more said: the program that failed (the quarry-bench quarry bench
// runs) said why itself.
type exitStatus int

func (s exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(s)) }

// Exit codes, the same for every command.
const (
	exitOK      = 0
	exitFailure = 1 // it could not be done: a runtime failure
	exitUsage   = 2 // bad command-line use or bad input: fix the command
)

// exitCode is a failed command's exit status: exitUsage for bad input (a
// bad flag value or file, a refused request, an unknown index), else
// exitFailure.
func exitCode(err error) int {
	var se *node.SettingError
	switch {
	case errors.Is(err, errUsage):
		return exitUsage
	case errors.As(err, &se) && se.Setting == node.SettingPipelines:
		return exitUsage
	case api.CodeOf(err) == api.CodeBadRequest || api.CodeOf(err) == api.CodeNotFound:
		return exitUsage
	}
	return exitFailure
}

// settingFlags says which flag changes each node setting.
var settingFlags = map[string]string{
	node.SettingDataDir:     "change --data",
	node.SettingNATSPort:    "change --nats-port",
	node.SettingNATSURL:     "is NATS running there? check --nats or QUARRY_NATS",
	node.SettingHTTPAddr:    "change --http",
	node.SettingMetricsAddr: "change --metrics",
	node.SettingPipelines:   "fix --pipeline",
}

// errorLine is an error as the one line a person reads: a start-up
// failure names the flag to change.
func errorLine(err error) string {
	var se *node.SettingError
	if errors.As(err, &se) {
		if f, ok := settingFlags[se.Setting]; ok {
			return fmt.Sprintf("%s (%s)", strings.ReplaceAll(err.Error(), "\n", " "), f)
		}
	}
	return err.Error()
}

// errUsage reports bad command-line use, already explained on stderr.
var errUsage = cmdline.ErrUsage
