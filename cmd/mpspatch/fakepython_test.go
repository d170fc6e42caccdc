package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// fakePython stands in for python in the build scripts (installed in the scripts' PATH as
// "fakepython"). It answers the builder's interpreter probe and its torch check (torch
// comes from the tree unless $FAKE_TORCH_FILE says where), and otherwise plays a pip
// build with ninja progress. Every start appends its argv, directory and environment to
// $FAKE_TRANSCRIPT as one JSON line, which the scripts grep.
func fakePython() int {
	args := os.Args[1:]
	if path := os.Getenv("FAKE_TRANSCRIPT"); path != "" {
		dir, _ := os.Getwd()
		env := map[string]string{}
		for _, kv := range os.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		// The probes' scripts are left out of argv: long, and mpspatch's own business.
		kind, argv := "build", args
		if len(args) > 1 && args[0] == "-c" {
			kind, argv = "probe", args[2:]
			if strings.Contains(args[1], "import torch") {
				kind = "torch-check"
			}
		}
		line, _ := json.Marshal(map[string]any{"step": kind, "argv": argv, "dir": dir, "env": env})
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		f.Write(append(line, '\n'))
		f.Close()
	}
	switch {
	case len(args) > 2 && args[0] == "-c" && strings.Contains(args[1], "import torch"):
		file := os.Getenv("FAKE_TORCH_FILE")
		if file == "" {
			file = filepath.Join(args[2], "torch", "__init__.py")
		}
		out, _ := json.Marshal(map[string]string{"file": file, "git_version": "", "owner": os.Getenv("FAKE_TORCH_OWNER"), "owner_version": "2.9.1"})
		fmt.Println(string(out))
	case len(args) > 0 && args[0] == "-c":
		exe, _ := os.Executable()
		fmt.Printf("%s\n3.12.8\nTrue\nFalse\n", exe)
	default:
		fmt.Println("  -- Build files have been written to: build")
		for i := 1; i <= 4; i++ {
			fmt.Printf("  [%d/4] Building CXX object caffe2/k%d.cpp.o\n", i, i)
		}
		fmt.Println("Successfully installed torch-2.9.1a0")
	}
	return 0
}
