package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/wire"
)

// clusterUsage names the cluster subcommands (protocol section 8.13).
const clusterUsage = "Usage: apollo11 cluster status\n" +
	"       apollo11 cluster add ID RAFT [--non-voter]   (ID: its client address; RAFT: its --raft-listen)\n" +
	"       apollo11 cluster remove ID\n" +
	"       apollo11 cluster transfer-leadership [ID]\n" +
	"Give every member's address to --addr (a,b,c). Run apollo11 cluster add --help (or status --help, ...) for the flags."

// runCluster dispatches the cluster subcommands.
func runCluster(args []string, stdout, stderr io.Writer) error {
	return runSubcommands("cluster", clusterUsage, []subcommand{
		{"status", func(args []string) error { return runClusterStatus(args, stdout) }},
		{"add", func(args []string) error { return runClusterAdd(args, stdout) }},
		{"remove", func(args []string) error { return runClusterRemove(args, stdout) }},
		{"transfer-leadership", func(args []string) error { return runClusterTransfer(args, stdout) }},
	}, args, stdout, stderr)
}

// runClusterStatus asks the leader, or a follower when no member leads,
// so that a cluster without a majority can still be looked at. It exits 1
// when no member leads, after printing what it found, so that scripts can
// tell.
func runClusterStatus(args []string, stdout io.Writer) error {
	return clientCommandWith(&clientFlags{acceptFollower: true}, "cluster status", "cluster status [flags]", false, args, stdout, nil, nil,
		func(_ *flag.FlagSet, cf *clientFlags, cl *client.Client) error {
			ctx, cancel := cf.ctx()
			defer cancel()
			st, err := cl.ClusterStatus(ctx)
			if err != nil {
				return clusterErr(err)
			}
			asked := askMembers(cf, &st)
			if cf.asJSON {
				err = printClusterStatusJSON(stdout, st, asked)
			} else {
				printClusterStatus(stdout, st, asked)
			}
			if err == nil && noLeader(st, asked) != "" {
				err = exitError{Code: 1}
			}
			return err
		})
}

func printClusterStatus(w io.Writer, st client.ClusterStatus, asked map[string]askedLag) {
	leader := leaderOf(st, asked)
	if leader == "" {
		leader = "(none known)"
	}
	if st.Role == "leader" && st.ID == st.Leader {
		fmt.Fprintf(w, "answered by the leader %s", shown(st.ID))
	} else {
		fmt.Fprintf(w, "answered by %s (%s)  leader %s", shown(st.ID), shown(st.Role), shown(leader))
	}
	fmt.Fprintf(w, "  term %d  commit_index %d  applied_index %d\n", st.Term, st.CommitIndex, st.AppliedIndex)
	for _, m := range st.Members {
		voter := "voter"
		if !m.Voter {
			voter = "non-voter"
		}
		fmt.Fprintf(w, "member %s  raft %s  %s", shown(m.ID), shown(m.Raft), voter)
		if m.ID == st.Leader {
			fmt.Fprint(w, "  leader")
		}
		if m.MatchIndex != nil {
			fmt.Fprintf(w, "  match_index %d", *m.MatchIndex)
		}
		a, wasAsked := asked[m.ID]
		switch {
		case wasAsked && a.err != nil:
			fmt.Fprintf(w, "  unreachable (%v)", a.err)
		case wasAsked:
			fmt.Fprintf(w, "  %s  applied_index %d", shown(a.role), a.applied)
		}
		if m.Lag != nil {
			fmt.Fprintf(w, "  lag %d", *m.Lag)
		}
		fmt.Fprintln(w)
	}
	if why := noLeader(st, asked); why != "" {
		fmt.Fprintln(w, why)
	}
}

func runClusterAdd(args []string, stdout io.Writer) error {
	var nonVoter bool
	extra := func(fs *flag.FlagSet) {
		fs.BoolVar(&nonVoter, "non-voter", false, "add it as a non-voter: it receives the log but does not vote")
	}
	// Operands, not flags: APOLLO11_ID is the executor's id.
	check := func(fs *flag.FlagSet) error {
		if fs.NArg() != 2 {
			return errors.New("want the new member's ID (its client address) and RAFT address")
		}
		return firstErr(checkDialAddr("ID", fs.Arg(0)), checkDialAddr("RAFT", fs.Arg(1)))
	}
	return clientCommand("cluster add", "cluster add [flags] ID RAFT", true, args, stdout, extra, check,
		func(fs *flag.FlagSet, cf *clientFlags, cl *client.Client) error {
			ctx, cancel := cf.ctx()
			defer cancel()
			id, raft := fs.Arg(0), fs.Arg(1)
			if err := cl.ClusterAdd(ctx, id, raft, !nonVoter); err != nil {
				return clusterErr(err)
			}
			return clusterDone(stdout, cf, map[string]any{"added": id, "raft": raft, "voter": !nonVoter},
				"member %s added (raft %s)\n", id, raft)
		})
}

func runClusterRemove(args []string, stdout io.Writer) error {
	check := func(fs *flag.FlagSet) error {
		if fs.NArg() != 1 {
			return errors.New("want exactly one member ID")
		}
		return checkDialAddr("ID", fs.Arg(0))
	}
	return clientCommand("cluster remove", "cluster remove [flags] ID", true, args, stdout, nil, check,
		func(fs *flag.FlagSet, cf *clientFlags, cl *client.Client) error {
			ctx, cancel := cf.ctx()
			defer cancel()
			id := fs.Arg(0)
			if err := cl.ClusterRemove(ctx, id); err != nil {
				if st, serr := cl.ClusterStatus(ctx); serr == nil {
					err = firstErr(notRaftAddr(st, id), err)
				}
				return clusterErr(err)
			}
			return clusterDone(stdout, cf, map[string]any{"removed": id}, "member %s removed\n", id)
		})
}

// runClusterTransfer hands the leadership on. The old leader closes its
// connections as it steps down, which may take its reply. The cluster's
// status, asked through the new leader, then says whether it moved.
func runClusterTransfer(args []string, stdout io.Writer) error {
	check := func(fs *flag.FlagSet) error {
		switch fs.NArg() {
		case 0:
			return nil
		case 1:
			return checkDialAddr("ID", fs.Arg(0))
		}
		return errors.New("want at most one member ID")
	}
	return clientCommand("cluster transfer-leadership", "cluster transfer-leadership [flags] [ID]", true, args, stdout, nil, check,
		func(fs *flag.FlagSet, cf *clientFlags, cl *client.Client) error {
			ctx, cancel := cf.ctx()
			defer cancel()
			before, err := cl.ClusterStatus(ctx)
			if err != nil {
				return clusterErr(err)
			}
			id := fs.Arg(0)
			if err := notRaftAddr(before, id); err != nil {
				return err
			}
			if id != "" && id == before.Leader {
				// Nothing to do: what the operator asked for holds.
				return clusterDone(stdout, cf, map[string]any{"old_leader": id, "leader": id, "term": before.Term},
					"%s is already the leader (term %d)\n", id, before.Term)
			}
			err = cl.ClusterTransfer(ctx, id)
			if err != nil && !errors.Is(err, client.ErrConnectionLost) {
				return clusterErr(err)
			}
			after, serr := newLeader(ctx, cl, before.Leader)
			switch {
			case serr != nil && err != nil:
				return fmt.Errorf("%w; and then: %w", err, serr)
			case serr != nil:
				return clusterErr(serr)
			}
			return clusterDone(stdout, cf, map[string]any{"old_leader": before.Leader, "leader": after.Leader, "term": after.Term},
				"leader %s -> %s (term %d)\n", before.Leader, after.Leader, after.Term)
		})
}

// newLeader asks the cluster's status until it names a leader other than
// old. The old leader may answer first, as a follower that knows none yet.
func newLeader(ctx context.Context, cl *client.Client, old string) (client.ClusterStatus, error) {
	for {
		st, err := cl.ClusterStatus(ctx)
		if err != nil || (st.Leader != "" && st.Leader != old) {
			return st, err
		}
		select {
		case <-ctx.Done():
			return st, fmt.Errorf("the leader is still %s: %w", shown(cmp.Or(st.Leader, "unknown")), context.Cause(ctx))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// clusterDone prints a change's outcome, as JSON or as text.
func clusterDone(w io.Writer, cf *clientFlags, asJSON map[string]any, format string, args ...any) error {
	if cf.asJSON {
		return printJSON(w, asJSON)
	}
	_, err := fmt.Fprintf(w, format, args...)
	return err
}

// clusterErr says what a main control that is not a cluster member means
// by unknown_type. A server that said so already gets only the cause.
func clusterErr(err error) error {
	switch {
	case !client.IsCode(err, wire.CodeUnknownType):
		return err
	case strings.Contains(err.Error(), "not a cluster member"):
		return fmt.Errorf("%w (it runs without --raft-listen)", err)
	}
	return fmt.Errorf("%w (this main control is not a cluster member: it runs without --raft-listen)", err)
}

// notRaftAddr refuses a member's raft address where its ID is wanted. The
// server would only say that no member has that ID.
func notRaftAddr(st client.ClusterStatus, id string) error {
	for _, m := range st.Members {
		if m.ID == id {
			return nil
		}
	}
	for _, m := range st.Members {
		if id != "" && m.Raft == id {
			return fmt.Errorf("%s is the raft address of member %s: give its ID, the client address %s", id, m.ID, m.ID)
		}
	}
	return nil
}
