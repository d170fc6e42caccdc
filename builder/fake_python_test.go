package builder

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
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
		os.Exit(fakePython(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// transcript is what the fake python records about how it was started.
type transcript struct {
	Argv []string          `json:"argv"`
	Dir  string            `json:"dir"`
	Env  map[string]string `json:"env"`
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
	if len(args) > 0 && args[0] == "-c" {
		exe, _ := os.Executable()
		fmt.Println(exe)
		fmt.Println("3.11.7")
		if os.Getenv("FAKE_NO_PIP") != "" {
			fmt.Println("False")
		} else {
			fmt.Println("True")
		}
		return 0
	}
	if path := os.Getenv("FAKE_TRANSCRIPT"); path != "" {
		dir, _ := os.Getwd()
		tr := transcript{Argv: args, Dir: dir, Env: map[string]string{}}
		for _, kv := range os.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			tr.Env[k] = v
		}
		data, _ := json.Marshal(tr)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
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
