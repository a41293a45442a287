package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apollo11/apollo11/auth"
	"github.com/apollo11/apollo11/client"
)

// clientFlags are the flags every client command has.
type clientFlags struct {
	addr           string
	addrs          []string // addr's list, set by check
	acceptFollower bool     // keep a follower when no leader answers (cluster status)
	tokenFile      string
	adminTokenFile string
	asJSON         bool
	timeout        time.Duration
	reconnect      time.Duration
	tls            tlsPeerFlags
	fs             *flag.FlagSet // the command's flags, for target
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	c.fs = fs
	fs.StringVar(&c.addr, "addr", "127.0.0.1:1969", "main control address, or a cluster's member addresses, comma-separated")
	fs.StringVar(&c.tokenFile, "token-file", "", "shared token file, when the main control requires auth")
	fs.StringVar(&c.adminTokenFile, "admin-token-file", "", "admin token file, for the admin commands when the main control has one")
	fs.BoolVar(&c.asJSON, "json", false, "print JSON instead of text")
	durationVar(fs, &c.timeout, "request-timeout", 30*time.Second, "time allowed to connect and get a reply (not the wait of submit --wait)")
	durationVar(fs, &c.reconnect, "reconnect-timeout", time.Minute, "how long to keep reconnecting when the connection is lost; --wait and safe requests go on after it (0: do not reconnect)")
	c.tls.register(fs)
}

// check refuses what would fail every request. That is a
// --request-timeout of 0, reported as a network timeout, or an --addr
// that cannot be dialled.
func (c *clientFlags) check() error {
	if c.reconnect < 0 {
		return fmt.Errorf("--reconnect-timeout %v: must not be negative (0 does not reconnect)", c.reconnect)
	}
	if err := positive("request-timeout", c.timeout); err != nil {
		return err
	}
	addrs, err := dialAddrs("addr", c.addr)
	c.addrs = addrs
	return err
}

// dial connects and says hello.
func (c *clientFlags) dial() (*client.Client, error) {
	if c.addrs == nil {
		if err := c.check(); err != nil {
			return nil, err
		}
	}
	var token, adminToken []byte
	if c.tokenFile != "" {
		var err error
		if token, err = auth.LoadToken(c.tokenFile); err != nil {
			return nil, err
		}
	}
	if c.adminTokenFile != "" {
		var err error
		if adminToken, err = auth.LoadToken(c.adminTokenFile); err != nil {
			return nil, fmt.Errorf("--admin-token-file: %w", err)
		}
	}
	tlsConf, err := c.tls.config(slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	cl, err := client.Dial(ctx, c.addrs[0], client.Options{Token: token, AdminToken: adminToken, Name: "apollo11-cli", TLS: tlsConf,
		Addrs: c.addrs[1:], AcceptFollower: c.acceptFollower,
		DialTimeout: c.timeout, Logger: slog.New(slog.DiscardHandler),
		Reconnect: client.Reconnect{Off: c.reconnect == 0, GiveUpAfter: c.reconnect}})
	if err != nil {
		if out, ok := errors.AsType[*client.LeaderOutsideError](err); ok {
			return nil, fmt.Errorf("the leader %s is not in --addr %s: add it (%s is a follower)",
				out.Leader, strings.Join(out.Addrs, ","), out.Follower)
		}
		if errors.Is(err, client.ErrNoLeader) {
			return nil, fmt.Errorf("%w (--request-timeout %v bounds the wait for an election)", err, c.timeout)
		}
		var refused *client.Error
		if errors.As(err, &refused) || errors.Is(err, client.ErrAuthRequired) {
			// It was reached. "cannot reach" would send the user to the
			// network when the token is what is wrong.
			return nil, fmt.Errorf("the main control at %s refused this client: %w", c.addr, err)
		}
		return nil, c.timedOut(fmt.Errorf("cannot reach the main control at %s: %w", c.addr, err))
	}
	return cl, nil
}

// ctx returns the context of one request, --request-timeout from now.
func (c *clientFlags) ctx() (context.Context, context.CancelFunc) {
	return c.ctxFrom(context.Background())
}

// ctxFrom is ctx within parent (which a Ctrl-C ends, say).
func (c *clientFlags) ctxFrom(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(parent, c.timeout, fmt.Errorf("no reply within --request-timeout %v", c.timeout))
}

// timedOut adds which flag ran out, and at what value, to an error that a
// --request-timeout deadline caused. Such an error says only "context
// deadline exceeded". Every deadline of a client command's requests and
// dial is --request-timeout. submit words its own, and --wait-timeout's,
// in errors that do not wrap the deadline.
func (c *clientFlags) timedOut(err error) error {
	if err != nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w (no reply within --request-timeout %v)", err, c.timeout)
	}
	return err
}

// shown makes a value safe to print as the text of `key=value`. A value
// with a control character, a backslash or a leading quote is printed
// Go-quoted instead. A newline would otherwise print a line that looks
// like another key. --json prints values as they are.
func shown(v string) string {
	if strings.HasPrefix(v, `"`) || strings.ContainsFunc(v, func(r rune) bool {
		return r < 0x20 || r == 0x7f || r == '\\' || r == utf8.RuneError
	}) {
		return strconv.Quote(v)
	}
	return v
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// clientCommand parses flags, checks the command line, dials, runs fn and
// closes. Words after the flags are refused unless operands is set. Then
// check, when not nil, checks them and the flags before anything is
// dialled. Its error is a bad command line (exit 2), unless it is an
// exitError with its own code.
func clientCommand(name, synopsis string, operands bool, args []string, stdout io.Writer,
	extra func(fs *flag.FlagSet), check func(fs *flag.FlagSet) error,
	fn func(fs *flag.FlagSet, cf *clientFlags, cl *client.Client) error) error {
	return clientCommandWith(&clientFlags{}, name, synopsis, operands, args, stdout, extra, check, fn)
}

// clientCommandWith is clientCommand with settings of cf that no flag
// sets, such as acceptFollower.
func clientCommandWith(cf *clientFlags, name, synopsis string, operands bool, args []string, stdout io.Writer,
	extra func(fs *flag.FlagSet), check func(fs *flag.FlagSet) error,
	fn func(fs *flag.FlagSet, cf *clientFlags, cl *client.Client) error) error {
	fs := newFlagSet(name, synopsis, stdout)
	cf.register(fs)
	if extra != nil {
		extra(fs)
	}
	parse := parseFlags
	if operands {
		parse = parseFlagsOperands
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := cf.check(); err != nil {
		return helpError(fs, err)
	}
	if check != nil {
		if err := check(fs); err != nil {
			if _, ok := errors.AsType[exitError](err); ok {
				return err // a check's own exit code: a file it could not read
			}
			return helpError(fs, err)
		}
	}
	cl, err := cf.dial()
	if err != nil {
		return err
	}
	defer cl.Close()
	return cf.timedOut(fn(fs, cf, cl))
}
