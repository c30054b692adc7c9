package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
)

func teamCmd(e *env, nf *natsFlags) *cobra.Command {
	return newGroup("team", "set or list a team's limits (rate, searches in flight)",
		"A team is what an index's --team names (docs/teams.md). Its rate holds over\n"+
			"the cluster (each broker admits its share) and its searches in flight on\n"+
			"each broker: over either, its searches get 429 overloaded at once (with\n"+
			"Retry-After) and other teams are not touched. Under the rate a search\n"+
			"counts once for each of the brokers' --rate-unit (50ms) of its time, so a\n"+
			"team whose searches are expensive uses its rate up sooner.",
		teamSetCmd(e, nf), teamLsCmd(e, nf))
}

func teamSetCmd(e *env, nf *natsFlags) *cobra.Command {
	cmd := newCommand("set TEAM", "set a team's limits on every broker (0: the default)",
		"Sets a team's limits on every broker (stored in the quarry-teams bucket).", 1, 1)
	fs := cmd.Flags()
	var s api.TeamSettings
	fs.Float64Var(&s.Rate, "rate", 0, "searches per second over the cluster, a search counting once per the brokers' --rate-unit of its time (0: no cap)")
	fs.IntVar(&s.Burst, "burst", 0, "searches that may come at once above the rate (0: one second's worth)")
	fs.IntVar(&s.MaxInFlight, "max-in-flight", 0, "searches running at once on each broker (0: the broker's --team-max-in-flight)")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		ctx := cmd.Context()
		s.Name = pos[0]
		nc, c, err := nf.connect(ctx)
		if err != nil {
			return err
		}
		defer nc.Close()
		if s, err = c.SetTeam(ctx, s); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "team %s: %s\n", s.Name, teamLimitsText(s))
		warnNoIndex(ctx, e.stderr, c, s.Name)
		return nil
	}
	return cmd
}

func teamLsCmd(e *env, nf *natsFlags) *cobra.Command {
	cmd := newCommand("ls", "list the teams that have limits", "Lists the teams that have limits.", 0, 0)
	jsonOut := cmd.Flags().Bool("json", false, "print JSON")
	cmd.RunE = clientRun(nf, func(ctx context.Context, c *client.Client, _ []string) error {
		teams, err := c.Teams(ctx)
		if err != nil {
			return err
		}
		if *jsonOut {
			return printJSON(e.stdout, teams)
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TEAM\tLIMITS")
		for _, t := range teams {
			text := teamLimitsText(t)
			if err := t.Validate(); err != nil {
				// Stored by an older quarry under laxer rules: the
				// brokers refuse it (logging "team settings ignored")
				// and hold the team to their defaults.
				text = fmt.Sprintf("IGNORED by the brokers, which hold the team to their defaults (%v): set it again; stored: %s", err, text)
			}
			fmt.Fprintf(tw, "%s\t%s\n", t.Name, text)
		}
		return tw.Flush()
	})
	return cmd
}

// warnNoIndex tells, on w, when no index belongs to team yet: a team
// is an index's --team, or index-NAME for an index made without one, so
// `quarry team set menu` for the demo's index sets limits no search meets.
func warnNoIndex(ctx context.Context, w io.Writer, c *client.Client, team string) {
	defs, err := c.Indexes(ctx)
	if err != nil {
		return // the limits are set; the warning is a courtesy
	}
	teams := make([]string, len(defs))
	for i := range defs {
		teams[i] = defs[i].TeamOf()
	}
	if slices.Contains(teams, team) {
		return
	}
	msg := fmt.Sprintf("quarry team: warning: no index belongs to team %q yet, so its limits hold for no search until one does (an index's team is its --team, or index-NAME without one)", team)
	if len(teams) > 0 {
		slices.Sort(teams)
		msg += "; the indexes' teams: " + strings.Join(slices.Compact(teams), ", ")
	}
	fmt.Fprintln(w, msg)
}

func teamLimitsText(s api.TeamSettings) string {
	rate := "no rate cap"
	if s.Rate > 0 {
		rate = fmt.Sprintf("%g searches/s", s.Rate)
		if s.Burst > 0 {
			rate += fmt.Sprintf(" (burst %d)", s.Burst)
		}
		rate += " over the cluster"
	}
	inFlight := "the broker's default in flight"
	if s.MaxInFlight > 0 {
		inFlight = fmt.Sprintf("%d in flight", s.MaxInFlight)
	}
	return rate + ", " + inFlight + " on each broker"
}

func tokenCmd(e *env, nf *natsFlags) *cobra.Command {
	return newGroup("token", "create, list or revoke HTTP API tokens",
		"The HTTP API asks for a token (Authorization: Bearer <token>) when it runs\n"+
			"with --http-auth, or listens beyond loopback without --insecure-http. A team\n"+
			"token acts on its team's indexes only, as far as its scope goes: search\n"+
			"(search and read documents: a key a browser may hold), write (and write\n"+
			"and delete documents, record user events) or admin (the default: and\n"+
			"manage their plugins, pipelines, judgements and gates, as the team's NATS\n"+
			"user may; docs/teams.md). Only the token's sha256 is stored: create prints\n"+
			"the token once.",
		tokenCreateCmd(e, nf), tokenLsCmd(e, nf), tokenRevokeCmd(e, nf))
}

func tokenCreateCmd(e *env, nf *natsFlags) *cobra.Command {
	cmd := newCommand("create", "create a token for the HTTP API: for one team's indexes (--team), or for everything (--operator)",
		"Creates an HTTP API token and prints it, once:\n\n"+
			"  quarry token create --team TEAM [--scope search|write|admin] [--name NAME]\n"+
			"  quarry token create --operator [--name NAME]", 0, 0)
	fs := cmd.Flags()
	var team, name, scope string
	var operator bool
	fs.StringVar(&team, "team", "", "the team whose indexes the token may use")
	fs.BoolVar(&operator, "operator", false, "a token that may do everything (indexes, documents, every team's plugins)")
	fs.StringVar(&scope, "scope", "", "what a team token may do on its team's indexes: search (search, read documents), write (and write documents) or admin (everything a team may; the default)")
	fs.StringVar(&name, "name", "", "a name to tell the token by (quarry token ls)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
		switch {
		case (team == "") == !operator:
			fmt.Fprintln(e.stderr, "quarry token create: give --team TEAM or --operator")
			return errUsage
		case operator && scope != "":
			fmt.Fprintln(e.stderr, "quarry token create: --operator takes no --scope (an operator token may do everything); --scope is for --team tokens")
			return errUsage
		case scope != "":
			if err := api.ValidTokenScope(scope); err != nil {
				fmt.Fprintf(e.stderr, "quarry token create: --scope %s: want %s\n", scope, strings.Join(api.TokenScopes, ", "))
				return errUsage
			}
		}
		nc, c, err := nf.connect(ctx)
		if err != nil {
			return err
		}
		defer nc.Close()
		var opts []client.TokenOption
		if scope != "" {
			opts = append(opts, client.TokenScope(scope))
		}
		token, t, err := c.CreateToken(ctx, team, operator, name, opts...)
		if err != nil {
			return err
		}
		who := "team " + t.Team + ", scope " + t.ScopeOf()
		if t.Operator {
			who = "operators"
		}
		fmt.Fprintf(e.stderr, "token %s for %s (shown once; keep it secret):\n", t.ID, who)
		fmt.Fprintln(e.stdout, token)
		return nil
	}
	return cmd
}

func tokenLsCmd(e *env, nf *natsFlags) *cobra.Command {
	cmd := newCommand("ls", "list tokens (ids, teams, scopes, names; never the tokens)", "Lists the HTTP API's tokens: ids, teams, scopes and names, never the tokens.", 0, 0)
	jsonOut := cmd.Flags().Bool("json", false, "print JSON")
	cmd.RunE = clientRun(nf, func(ctx context.Context, c *client.Client, _ []string) error {
		tokens, err := c.Tokens(ctx)
		if err != nil {
			return err
		}
		if *jsonOut {
			return printJSON(e.stdout, tokens)
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tFOR\tSCOPE\tNAME\tCREATED")
		for _, t := range tokens {
			who, scope := "team "+t.Team, t.ScopeOf()
			if t.Operator {
				who, scope = "operators", "everything"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.ID, who, scope, t.Name, t.Created.Local().Format(time.DateTime))
		}
		return tw.Flush()
	})
	return cmd
}

func tokenRevokeCmd(e *env, nf *natsFlags) *cobra.Command {
	cmd := newCommand("revoke ID", "revoke a token (HTTP requests with it get 401 within moments)",
		"Revokes a token: HTTP requests with it get 401 within moments.", 1, 1)
	cmd.RunE = clientRun(nf, func(ctx context.Context, c *client.Client, pos []string) error {
		if err := c.RevokeToken(ctx, pos[0]); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "token %s revoked\n", pos[0])
		return nil
	})
	return cmd
}
