// Command fakepython stands in for python in the `mpspatch build` tests (built by the
// test, never installed). It answers the builder's preflight probe (-c ...), writes its
// torch check (torch from the tree unless
// $FAKE_TORCH_FILE), writes its argv, working directory and environment to $FAKE_TRANSCRIPT as JSON, and then acts per
// $FAKE_MODE: "ok" prints a pip-like build with ninja progress and exits 0; "fail" prints
// compiler errors and exits 1; "hang" writes its pid to $FAKE_STARTED and sleeps, to be interrupted. With $FAKE_NO_PIP set the probe says pip is missing.
package main

import (
	"encoding/json"
	"fmt"
	"os"
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
