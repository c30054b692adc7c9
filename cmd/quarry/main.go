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
//
// Run `quarry COMMAND --help` for each command's flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/cmdline"
	"github.com/quarrysearch/quarry/node"
)

// command is one subcommand. It reads and writes the streams of e, never
// the process's own.
type command struct {
	summary string
	run     func(ctx context.Context, e *env, args []string) error
}

var commands map[string]command

func init() {
	commands = map[string]command{
		"serve":           {"run every role in one process on an embedded NATS server", runServe},
		"indexer":         {"run the indexer against a NATS deployment", runIndexer},
		"searcher":        {"run a searcher against a NATS deployment", runSearcher},
		"broker":          {"run a broker (and the HTTP API) against a NATS deployment", runBroker},
		"init":            {"decide a NATS deployment's replication: create Quarry's streams and buckets at --replicas", runInit},
		"index":           {"create, list, show or remove indexes", runIndex},
		"alias":           {"create, switch, list or remove index aliases", runAlias},
		"ingest":          {"bulk-load NDJSON documents and publish a new generation", runIngest},
		"put":             {"upsert one JSON document", runPut},
		"patch":           {"change part of one document (a JSON merge patch), atomically", runPatch},
		"delete":          {"delete one document by id", runDelete},
		"delete-by-query": {"delete every document a query finds", runDeleteByQuery},
		"get":             {"print one document by id, as stored", runGet},
		"search":          {"search an index", runSearch},
		"bench":           {"measure Quarry side by side with bleve, and WASM plugins with native ones", runBench},
		"plugin":          {"push, list, activate, roll back and remove plugins; run one locally", runPlugin},
		"dev":             {"rebuild a plugin folder on every save and compare it, as a variant, with the live pipeline", runDev},
		"pipeline":        {"show or set an index's plugin pipeline", runPipeline},
		"queries":         {"export recorded search requests (for plugin test replays)", runQueries},
		"judgements":      {"push, list, show or remove judgement lists; set the relevance gate", runJudgements},
		"events":          {"store what users did with search results (clicks, carts, purchases, dwell)", runEvents},
		"eval":            {"measure the live pipeline and a candidate on a judgement list (nDCG, MRR, P@k, R@k)", runEval},
		"team":            {"set or list a team's limits (rate, searches in flight)", runTeam},
		"token":           {"create, list or revoke HTTP API tokens", runToken},
		"version":         {"print the version", runVersion},
	}
}

// version is the release quarry version prints.
const version = api.Version

func runVersion(_ context.Context, e *env, _ []string) error {
	_, err := fmt.Fprintln(e.stdout, "quarry", version)
	return err
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "quarry %s: a search platform on NATS, bleve and WebAssembly plugins.\n\nUsage: quarry COMMAND [flags] [args]\n\nCommands:\n", version)
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "\nRun 'quarry COMMAND --help' for a command's flags. The connection flags (--nats, --user,\n--creds, ...) may also come before the command: quarry --nats URL search INDEX QUERY.\n")
}

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
	// flagSets, when a test sets it, collects every flag set made.
	flagSets *[]*flag.FlagSet
}

// run runs the command line args with e and returns the exit status.
func (e *env) run(ctx context.Context, args []string) int {
	if len(args) < 1 {
		usage(e.stderr)
		return exitUsage
	}
	name := args[0]
	if name == "-h" || name == "--help" || name == "help" {
		usage(e.stdout)
		return exitOK
	}
	if strings.HasPrefix(name, "-") {
		moved, err := e.connectionFlagsFirst(args)
		if err != nil {
			fmt.Fprintf(e.stderr, "quarry: %v\n\n", err)
			usage(e.stderr)
			return exitUsage
		}
		args, name = moved, moved[0]
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(e.stderr, "quarry: unknown command %q\n\n", name)
		usage(e.stderr)
		return exitUsage
	}
	err := cmd.run(ctx, e, args[1:])
	var status exitStatus
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errUsage):
		return exitUsage
	case errors.As(err, &status):
		return int(status)
	}
	fmt.Fprintf(e.stderr, "quarry %s: %s\n", name, errorLine(err))
	return exitCode(err)
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
	case errors.Is(err, errUsage), errors.Is(err, flag.ErrHelp):
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

// newFlags makes a command's flag set with a usage line, writing its
// usage and errors to e's stderr.
func (e *env) newFlags(name, args, about string) *flag.FlagSet {
	fs := cmdline.NewFlagSet(name, args, about)
	fs.SetOutput(e.stderr)
	if e.flagSets != nil {
		*e.flagSets = append(*e.flagSets, fs)
	}
	return fs
}

// connectionFlagsFirst turns `quarry --nats URL index ls` into `quarry
// index ls --nats URL` (commands take flags after their arguments, and
// the flags go before a "--"): the connection flags every networked
// command takes (natsFlags) may come before the command, as in other
// CLIs; any other flag there is refused, naming it.
func (e *env) connectionFlagsFirst(args []string) ([]string, error) {
	fs := flag.NewFlagSet("quarry", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var nf natsFlags
	nf.register(fs, e.getenv)
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("%v: only the connection flags (--nats, --user, --creds, …) may come before the command; put the others after it", err)
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return nil, errors.New("no command after the flags")
	}
	lead := args[:len(args)-len(rest)]
	tail := rest[1:]
	at := len(tail)
	if i := slices.Index(tail, "--"); i >= 0 {
		at = i
	}
	out := append([]string{rest[0]}, tail[:at]...)
	out = append(out, lead...)
	return append(out, tail[at:]...), nil
}
