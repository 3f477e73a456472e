// Command tilecache is the local program: `tilecache serve` runs the REST
// interface, the tile endpoint, the seed workers, the sweeper and the
// disk-quota cleaner in one process on the embedded backends (or on S3,
// DynamoDB and SQS); `tilecache useradd` manages the accounts file and
// `tilecache recount` rebuilds disk usage from the tile store;
// `tilecache seed`, `reseed`, `truncate`, `estimate`, `tasks`, `kill`
// and `tilecache quota ingest-logs` are clients of a server's REST
// interface (internal/cli).
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/crypto/bcrypt"

	"tilecache/internal/app"
	"tilecache/internal/app/core"
	"tilecache/internal/auth"
	"tilecache/internal/cli"
	"tilecache/internal/config"
)

const usage = `usage:
  tilecache serve                              run the service (configured by TILECACHE_* variables)
  tilecache useradd -file F -name N [-role R] [-random]
                                               add an account or set its password (and its role
                                               with -role: viewer, operator, admin, or user for
                                               no access; a new account is an admin without it);
                                               the password is read from stdin, or generated
                                               and printed with -random
  tilecache recount [layer ...]                rebuild the disk usage of the layers (default all)
                                               from a listing of their tiles; layers with tasks
                                               at work are recounted later by the cleaner
  tilecache seed|reseed|truncate LAYER [flags] submit a request to a server (--server, default
                                               http://127.0.0.1:8080; GeoWebCache too) and follow it
  tilecache estimate LAYER [flags]             tiles per level, requests, bytes, time and AWS cost
  tilecache tasks [LAYER] | kill [LAYER]       list or kill tasks; tilecache seed --help for flags
  tilecache quota ingest-logs --format F FILE… count the tile reads of access logs (cloudfront,
                                               s3 or combined; - for stdin) in a server's disk quota
  tilecache layers list | get LAYER            a server's layers, a layer's wmsLayer document
  tilecache layers from-capabilities URL       propose layers from a WMS's capabilities (a layer file)
  tilecache layers import geowebcache.xml      a GeoWebCache configuration as a layer file
`

func main() {
	if len(os.Args) > 1 && slices.Contains(cli.Commands, os.Args[1]) {
		// The client commands handle Ctrl-C themselves (they ask whether
		// to kill the tasks).
		os.Exit(cli.Main(context.Background(), os.Args[1:]))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tilecache:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("no command\n%s", usage)
	}
	switch args[0] {
	case "serve":
		cfg, err := config.Load(os.LookupEnv)
		if err != nil {
			return err
		}
		return app.Serve(ctx, cfg, core.NewLogger(cfg.LogLevel))
	case "useradd":
		return useradd(args[1:], stdin, stdout)
	case "recount":
		cfg, err := config.Load(os.LookupEnv)
		if err != nil {
			return err
		}
		return recount(ctx, cfg, core.NewLogger(cfg.LogLevel), args[1:], stdout)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return fmt.Errorf("unknown command %q\n%s", args[0], usage)
}

// recount runs a disk usage recount on the configured backends. On the
// embedded backend `tilecache serve` must not be running (it holds the
// task database); it recounts on its own schedule anyway.
func recount(ctx context.Context, cfg config.Config, log *slog.Logger, layers []string, stdout io.Writer) error {
	p, err := app.NewWorker(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer p.Close()
	done, err := p.Cleaner.Recount(ctx, layers)
	for _, l := range done {
		fmt.Fprintln(stdout, "recounted", l)
	}
	return err
}

func useradd(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("useradd", flag.ContinueOnError)
	file := fs.String("file", "", "accounts file")
	name := fs.String("name", "", "account name")
	random := fs.Bool("random", false, "generate a password and print it")
	role := fs.String("role", "", "the account's role: viewer, operator, admin, or user (no access); default: an existing account's, else admin")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *file == "" || *name == "" {
		return fmt.Errorf("useradd needs -file and -name\n%s", usage)
	}
	if *role != "" {
		if _, err := auth.ParseRole(*role); err != nil {
			return fmt.Errorf("useradd -role: %w", err)
		}
	}
	var password string
	if *random {
		b := make([]byte, 15)
		rand.Read(b)
		password = base64.RawURLEncoding.EncodeToString(b)
	} else {
		data, err := io.ReadAll(io.LimitReader(stdin, 4096))
		if err != nil {
			return fmt.Errorf("read password: %w", err)
		}
		password = strings.TrimRight(string(data), "\r\n")
		if password == "" {
			return fmt.Errorf("empty password on stdin")
		}
	}
	if err := auth.AddAccountRole(*file, *name, password, *role, bcrypt.DefaultCost); err != nil {
		return err
	}
	if *random {
		fmt.Fprintln(stdout, password)
	}
	return nil
}
