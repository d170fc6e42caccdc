package builder

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mpspatch/mpspatch/internal/run"
)

// The test binary doubles as a fake python (and xcrun): with MPSPATCH_FAKE_PYTHON=1 in
// its environment it behaves as described in fakePython instead of running tests. The
// builder starts it exactly as it would start the real interpreter.
func TestMain(m *testing.M) {
	if os.Getenv("MPSPATCH_FAKE_PYTHON") == "1" {
		record(os.Args)
		if filepath.Base(os.Args[0]) == "ccache" {
			os.Exit(fakeCcache(os.Args[1:]))
		}
		os.Exit(fakePython(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// transcript is what a fake tool records about how it was started: one JSON line per
// start in $FAKE_TRANSCRIPT, Argv[0] being the program's base name.
type transcript struct {
	Argv []string          `json:"argv"`
	Dir  string            `json:"dir"`
	Env  map[string]string `json:"env"`
}

// record appends this start to $FAKE_TRANSCRIPT.
func record(argv []string) {
	path := os.Getenv("FAKE_TRANSCRIPT")
	if path == "" {
		return
	}
	dir, _ := os.Getwd()
	tr := transcript{Argv: append([]string{filepath.Base(argv[0])}, argv[1:]...), Dir: dir, Env: map[string]string{}}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		tr.Env[k] = v
	}
	data, _ := json.Marshal(tr)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer f.Close()
	f.Write(append(data, '\n'))
}

// fakeCcache answers --version, and --print-stats with counters that grow by 3 direct
// hits (2 of them from remote storage) and 1 miss between the first call and the next.
func fakeCcache(args []string) int {
	switch {
	case len(args) == 1 && args[0] == "--version":
		fmt.Println("ccache version 4.7.5-fake")
		fmt.Println("Features: redis-storage")
		return 0
	case len(args) == 1 && args[0] == "--print-stats":
		state := os.Getenv("FAKE_CCACHE_STATE")
		_, err := os.Stat(state)
		first := err != nil
		os.WriteFile(state, []byte("seen"), 0o644)
		hits, miss, remote := 10, 5, 0
		if !first {
			hits, miss, remote = 13, 6, 2
		}
		fmt.Printf("cache_miss\t%d\ndirect_cache_hit\t%d\npreprocessed_cache_hit\t0\nremote_storage_hit\t%d\nstats_updated_timestamp\t1700000000\n", miss, hits, remote)
		return 0
	}
	fmt.Fprintln(os.Stderr, "fake ccache: unexpected", args)
	return 2
}

// fakePython answers the preflight probe ("-c ..."), and for anything else records a
// transcript to $FAKE_TRANSCRIPT and acts per $FAKE_MODE:
//
//	ok     print a pip-like build with ninja progress, exit 0
//	fail   print some progress and compiler errors, exit 1
//	cmake  configure and build the tree's CMakeLists.txt with the real cmake and ninja
//	       into $FAKE_BUILD_DIR ($FAKE_BREAK=ON compiles a deliberate error)
//	hang   print one progress line and sleep until killed
//
// As xcrun ("--show-sdk-path") it prints an SDK path, or fails when $FAKE_NO_SDK is set.
func fakePython(args []string) int {
	if len(args) > 0 && args[0] == "--show-sdk-path" {
		if os.Getenv("FAKE_NO_SDK") != "" {
			fmt.Fprintln(os.Stderr, "xcrun: error: unable to find sdk")
			return 1
		}
		fmt.Println("/Applications/Xcode.app/Contents/Developer/Platforms/MacOSX.platform/Developer/SDKs/MacOSX.sdk")
		return 0
	}
	if len(args) > 2 && args[0] == "-c" && strings.Contains(args[1], "import torch") {
		// The torch check: torch comes from the tree unless $FAKE_TORCH_FILE says where.
		file := os.Getenv("FAKE_TORCH_FILE")
		if file == "" {
			file = filepath.Join(args[2], "torch", "__init__.py")
		}
		out := map[string]string{"file": file, "git_version": os.Getenv("FAKE_TORCH_GIT"), "owner": os.Getenv("FAKE_TORCH_OWNER"), "owner_version": "9.9"}
		if e := os.Getenv("FAKE_TORCH_ERROR"); e != "" {
			out = map[string]string{"error": e}
		}
		data, _ := json.Marshal(out)
		fmt.Println(string(data))
		return 0
	}
	if len(args) > 0 && args[0] == "-c" {
		exe, _ := os.Executable()
		fmt.Println(exe)
		fmt.Println("3.11.7")
		if os.Getenv("FAKE_NO_PIP") != "" {
			fmt.Println("False")
		} else {
			fmt.Println("True")
		}
		if os.Getenv("FAKE_EXTERNALLY_MANAGED") != "" {
			fmt.Println("True")
		} else {
			fmt.Println("False")
		}
		return 0
	}
	switch os.Getenv("FAKE_MODE") {
	case "ok":
		fmt.Println("Using pip 23.2.1 from /usr/lib/python3/dist-packages/pip (python 3.11)")
		fmt.Println("Obtaining file:///src/pytorch")
		fmt.Println("  running develop")
		fmt.Println("  -- The CXX compiler identification is AppleClang 16.0.0.16000026")
		fmt.Println("  -- Build files have been written to: /src/pytorch/build")
		for i := 1; i <= 4; i++ {
			fmt.Printf("  [%d/4] Building CXX object caffe2/CMakeFiles/torch_cpu.dir/k%d.cpp.o\n", i, i)
		}
		fmt.Println("Successfully installed torch-2.9.1a0+gitd38164a")
		return 0
	case "fail":
		fmt.Println("  [1/3] Building OBJCXX object caffe2/CMakeFiles/torch_cpu.dir/__/aten/src/ATen/mps/MPSStream.mm.o")
		fmt.Println("  FAILED: caffe2/CMakeFiles/torch_cpu.dir/__/aten/src/ATen/mps/MPSStream.mm.o")
		fmt.Fprintln(os.Stderr, "/src/pytorch/aten/src/ATen/mps/MPSStream.mm:42:5: error: use of undeclared identifier 'streamLock'")
		fmt.Fprintln(os.Stderr, "    streamLock.lock();")
		fmt.Fprintln(os.Stderr, "/src/pytorch/aten/src/ATen/mps/MPSStream.mm:57:3: fatal error: 'missing.h' file not found")
		fmt.Fprintln(os.Stderr, "2 errors generated.")
		fmt.Println("  [2/3] Building CXX object caffe2/CMakeFiles/torch_cpu.dir/x.cpp.o")
		fmt.Fprintln(os.Stderr, "error: subprocess-exited-with-error")
		return 1
	case "cmake":
		return fakeCMake()
	case "hang":
		fmt.Println("  [1/100] Building CXX object slow.cpp.o")
		time.Sleep(time.Minute)
		return 0
	}
	fmt.Fprintln(os.Stderr, "fake python: unknown FAKE_MODE", os.Getenv("FAKE_MODE"))
	return 2
}

// fakeCMake does what PyTorch's setup.py does at its core: cmake -G Ninja, then build.
func fakeCMake() int {
	dir, _ := os.Getwd()
	build := os.Getenv("FAKE_BUILD_DIR")
	breakIt := os.Getenv("FAKE_BREAK")
	if breakIt == "" {
		breakIt = "OFF"
	}
	ctx := context.Background()
	steps := [][]string{
		{"cmake", "-S", dir, "-B", build, "-G", "Ninja", "-DBREAK=" + breakIt},
		{"cmake", "--build", build},
	}
	for _, argv := range steps {
		if _, err := run.Run(ctx, run.Cmd{Argv: argv, Stdout: os.Stdout, Stderr: os.Stderr}); err != nil {
			fmt.Fprintln(os.Stderr, "fake python:", err)
			return 1
		}
	}
	return 0
}
