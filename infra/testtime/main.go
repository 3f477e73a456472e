// Command testtime reads `go test -json` for infra/test.sh.
//
//	testtime filter FILE     copy the events on stdin to FILE and write to
//	                         stdout what a person reads (build errors, failed
//	                         tests' output, package results)
//	testtime summary [-n N] TITLE=FILE...
//	                         the per-package times and the N slowest tests
//	                         (default 15) of each recorded stream
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"tilecache/internal/testkit/testtime"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "testtime:", err)
		os.Exit(2)
	}
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: testtime filter FILE | testtime summary [-n N] TITLE=FILE [TITLE=FILE ...]")
	}
	switch args[0] {
	case "filter":
		if len(args) != 2 {
			return errors.New("usage: testtime filter FILE")
		}
		out, err := os.Create(args[1])
		if err != nil {
			return fmt.Errorf("create the event file: %w", err)
		}
		_, ferr := testtime.Filter(io.TeeReader(stdin, out), stdout)
		return errors.Join(ferr, out.Close())
	case "summary":
		fs := flag.NewFlagSet("summary", flag.ContinueOnError)
		n := fs.Int("n", 15, "how many of the slowest tests to list")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		for _, a := range fs.Args() {
			title, path, ok := strings.Cut(a, "=")
			if !ok {
				return fmt.Errorf("%q is not TITLE=FILE", a)
			}
			if err := summary(stdout, title, path, *n); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown command %q (filter or summary)", args[0])
}

func summary(w io.Writer, title, path string, n int) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open the events of %s: %w", title, err)
	}
	defer f.Close()
	r, err := testtime.Filter(f, io.Discard)
	if err != nil {
		return fmt.Errorf("%s: %w", title, err)
	}
	return testtime.Summary(w, title, r, n)
}
