// Command preflight checks, in seconds, that this machine has everything the tests need
// (see testenv.Needs), and names every missing thing at once with the one apt-get command
// that installs them all. make test runs it first, make check with -short (only what
// `go test -short` needs); .ci/run asks it which packages to install.
//
//	preflight                    check everything make test needs; exit 1 naming what is missing
//	preflight -short             only what make check (go test -short) needs
//	preflight -missing-packages  print the Debian packages of what is missing, space-separated (exit 0)
//	preflight -packages          print every Debian package the tests use, space-separated
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/mpspatch/mpspatch/internal/testenv"
)

func main() {
	wd, _ := os.Getwd()
	os.Exit(preflight(context.Background(), os.Args[1:], os.Stdout, os.Stderr, testenv.ThisMachine(runtime.Version(), wd)))
}

// preflight is the command with its machine and streams passed in, for the tests.
func preflight(ctx context.Context, args []string, stdout, stderr io.Writer, m *testenv.Machine) int {
	fl := flag.NewFlagSet("preflight", flag.ContinueOnError)
	fl.SetOutput(stderr)
	short := fl.Bool("short", false, "check only what go test -short (make check) needs")
	missingPkgs := fl.Bool("missing-packages", false, "print the Debian packages of what is missing, space-separated, and exit 0")
	allPkgs := fl.Bool("packages", false, "print every Debian package the tests use, space-separated, without checking")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "preflight: unexpected argument %q\n", fl.Arg(0))
		return 2
	}
	if *allPkgs {
		fmt.Fprintln(stdout, strings.Join(testenv.Packages(testenv.Needs()), " "))
		return 0
	}
	missing := testenv.Preflight(ctx, m, *short)
	if *missingPkgs {
		var needs []testenv.Need
		for _, s := range missing {
			needs = append(needs, s.Need)
		}
		fmt.Fprintln(stdout, strings.Join(testenv.Packages(needs), " "))
		return 0
	}
	if len(missing) > 0 {
		fmt.Fprint(stderr, testenv.Report(missing, m))
		return 1
	}
	scope := "make test"
	if *short {
		scope = "make check"
	}
	fmt.Fprintf(stdout, "preflight: everything %s needs is here\n", scope)
	return 0
}
