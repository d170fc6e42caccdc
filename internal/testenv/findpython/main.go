// Command findpython prints the Python interpreter the tests use (see package testenv), or
// explains on stderr what is missing and exits 1. The Makefile's Python targets call it,
// so they and the Go tests agree on one interpreter.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/mpspatch/mpspatch/internal/testenv"
)

func main() {
	py, err := testenv.FindPython(context.Background(), os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(py)
}
