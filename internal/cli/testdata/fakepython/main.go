// Command fakepython stands in for python in the `mpspatch build` tests (built by the
// test, never installed). It answers the builder's preflight probe (-c ...), writes its
// torch check (torch from the tree unless
// $FAKE_TORCH_FILE), writes its argv, working directory and environment to $FAKE_TRANSCRIPT as JSON, and then acts per
// $FAKE_MODE: "ok" prints a pip-like build with ninja progress and exits 0; "fail" prints
// compiler errors and exits 1; "hang" writes its pid to $FAKE_STARTED and sleeps, to be interrupted. With $FAKE_NO_PIP set the probe says pip is missing.
//
// For the tests of what a build sees: with $FAKE_DURING (JSON: {"argv": [...], "env":
// [...]}) a build in "ok" mode first runs that command (another mpspatch trying to
// unapply the tree under the build), and with $FAKE_RECORD it then appends one line to
// that file: the command's exit code (-1 when none ran) and the SHA-256 of $FAKE_WATCH,
// the file as the build found it.
package main

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	args := os.Args[1:]
	if len(args) > 2 && args[0] == "-c" && strings.Contains(args[1], "import torch") {
		// The builder's torch check: torch comes from the tree (args[2]) unless
		// $FAKE_TORCH_FILE says where.
		file := os.Getenv("FAKE_TORCH_FILE")
		if file == "" {
			file = filepath.Join(args[2], "torch", "__init__.py")
		}
		data, _ := json.Marshal(map[string]string{"file": file, "git_version": "", "owner": os.Getenv("FAKE_TORCH_OWNER"), "owner_version": "2.9.1"})
		fmt.Println(string(data))
		return
	}
	if len(args) > 0 && args[0] == "-c" {
		exe, _ := os.Executable()
		fmt.Println(exe)
		fmt.Println("3.12.8")
		if os.Getenv("FAKE_NO_PIP") != "" {
			fmt.Println("False")
		} else {
			fmt.Println("True")
		}
		return
	}
	if path := os.Getenv("FAKE_TRANSCRIPT"); path != "" {
		dir, _ := os.Getwd()
		env := map[string]string{}
		for _, kv := range os.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		data, _ := json.Marshal(map[string]any{"argv": args, "dir": dir, "env": env})
		if err := os.WriteFile(path, data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	switch os.Getenv("FAKE_MODE") {
	case "ok":
		if err := duringBuild(); err != nil {
			fmt.Fprintln(os.Stderr, "fakepython:", err)
			os.Exit(2)
		}
		fmt.Println("  -- Build files have been written to: build")
		for i := 1; i <= 20; i++ {
			fmt.Printf("  [%d/20] Building CXX object caffe2/k%d.cpp.o\n", i, i)
		}
		fmt.Println("Successfully installed torch-2.9.1a0")
	case "hang":
		// A build that is still running when the test interrupts it.
		if path := os.Getenv("FAKE_STARTED"); path != "" {
			_ = os.WriteFile(path, []byte(fmt.Sprintln(os.Getpid())), 0o644)
		}
		fmt.Println("  [1/20] Building CXX object caffe2/k1.cpp.o")
		time.Sleep(time.Minute)
		os.Exit(3)
	case "fail":
		fmt.Println("  [1/2] Building OBJCXX object caffe2/MPSStream.mm.o")
		fmt.Fprintln(os.Stderr, "aten/src/ATen/mps/MPSStream.mm:42:5: error: use of undeclared identifier 'streamLock'")
		fmt.Fprintln(os.Stderr, "error: subprocess-exited-with-error")
		os.Exit(1)
	default:
		fmt.Fprintln(os.Stderr, "fakepython: unknown FAKE_MODE", os.Getenv("FAKE_MODE"))
		os.Exit(2)
	}
}

// duringBuild runs $FAKE_DURING and records, in $FAKE_RECORD, its exit code and the
// content of $FAKE_WATCH as the build sees it afterwards.
func duringBuild() error {
	code := -1
	if spec := os.Getenv("FAKE_DURING"); spec != "" {
		var cmd struct {
			Argv []string `json:"argv"`
			Env  []string `json:"env"`
		}
		if err := json.Unmarshal([]byte(spec), &cmd); err != nil || len(cmd.Argv) == 0 {
			return fmt.Errorf("FAKE_DURING: %v", err)
		}
		c := exec.Command(cmd.Argv[0], cmd.Argv[1:]...)
		c.Env = append(os.Environ(), cmd.Env...)
		c.Stdout, c.Stderr = os.Stderr, os.Stderr
		code = 0
		if err := c.Run(); err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				return err
			}
			code = ee.ExitCode()
		}
	}
	record := os.Getenv("FAKE_RECORD")
	if record == "" {
		return nil
	}
	data, err := os.ReadFile(os.Getenv("FAKE_WATCH"))
	if err != nil {
		return err
	}
	f, err := os.OpenFile(record, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(f, "%d %x\n", code, sha256.Sum256(data)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
