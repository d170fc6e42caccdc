package probe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
)

// childEnv switches the test binary into a probe child: the parent tests run the binary
// itself (os.Args[0]) with the scenario spec as its only argument, so the protocol and the
// classification are tested against real processes without any outside tool.
const childEnv = "MPSPATCH_PROBE_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(testChild(mode, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// metalAssertion is the message the seeds saw from stock PyTorch under concurrency.
const metalAssertion = "-[MTLDebugCommandBuffer addCompletedHandler:]: failed assertion `Scheduled handler provided after commit call'"

func testChild(mode string, args []string) int {
	if len(args) != 1 {
		fmt.Fprintf(os.Stderr, "test child: want one scenario spec, have %q\n", args)
		return 2
	}
	s, err := ParseScenario(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	em := NewEmitter(os.Stdout)
	hello := func() { em.Emit(Event{Type: EventHello, Scenario: s.spec(), PID: os.Getpid()}) }
	fake := func(f FakeFaults) int {
		switch err := RunChild(context.Background(), NewFake(f), s, em); {
		case err == nil:
			return 0
		case errors.Is(err, ErrChecksFailed):
			return 1
		default:
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
	}
	switch mode {
	case "fake":
		return fake(FakeFaults{})
	case "fake-crosstalk":
		return fake(FakeFaults{CrossTalk: &CrossTalk{Victim: Point{1, 2}, Writer: Point{0, 2}, Index: 7}})
	case "fake-permissive":
		return fake(FakeFaults{Permissive: true})
	case "fake-panic":
		return fake(FakeFaults{PanicAt: &Point{1, 1}})
	case "fake-hang":
		return fake(FakeFaults{HangAt: &Point{0, 1}})
	case "noise":
		fmt.Println("Metal API Validation Enabled")
		return fake(FakeFaults{})
	case "segfault":
		hello()
		em.Emit(Event{Type: EventGo})
		dieBySignal(syscall.SIGSEGV)
	case "go-runtime-segv":
		hello()
		_ = syscall.Kill(os.Getpid(), syscall.SIGSEGV)
		select {}
	case "metal-abort":
		hello()
		em.Emit(Event{Type: EventGo})
		em.Emit(Event{Type: EventIter, W: 2, I: 5})
		fmt.Fprintln(os.Stderr, metalAssertion)
		dieBySignal(syscall.SIGABRT)
	case "torn":
		hello()
		os.Stdout.WriteString(`{"v":1,"type":"wor`)
		return 0
	case "no-device":
		hello()
		em.Emit(Event{Type: EventError, Message: "probe device: no Metal device"})
		return 5
	}
	fmt.Fprintf(os.Stderr, "test child: unknown mode %q\n", mode)
	return 2
}
