package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mpspatch/mpspatch/metalcheck/probe"
)

type probeOptions struct {
	threads    []int
	iterations int
	queues     string
	timeout    time.Duration
	controls   bool
	logDir     string
	backend    string
}

// probeExecutable is the binary re-run as the probe child; tests point it at a built one.
var probeExecutable = os.Executable

// newProbeOptions are probe's defaults, the flags' and those of run's probe stage.
func newProbeOptions() *probeOptions {
	return &probeOptions{threads: []int{1, 2, 4, 8, 16}, iterations: 50, queues: string(probe.QueuesPerThread),
		timeout: 60 * time.Second, backend: "metal"}
}

func newProbeCmd(d *deps) *cobra.Command {
	opts := newProbeOptions()
	cmd := &cobra.Command{
		Use:   "probe",
		Short: "Stress Metal itself with concurrent submissions from many threads (macOS only)",
		Long: `Probe the Metal stack under PyTorch's MPS backend, without PyTorch: report the GPU
(name, GPU families, macOS version, recommended working set, unified memory), then run
a matrix of stress scenarios, each in its own child process so that a crash inside Metal
is reported instead of suffered.

In each scenario N OS threads, released together, each submit --iterations command
buffers: a compute kernel compiled from Metal source writes values unique to the thread,
iteration and index into the thread's own buffer; a completed handler is added before
commit; the thread waits and checks every word of its buffer. --queues per-thread gives
every thread its own command queue, shared makes them share one.

--controls adds two negative controls that break Metal's rules on purpose (one command
buffer shared by threads; a completed handler added after commit). They pass only when
Metal aborts them with a "failed assertion", which proves the probe recognises Metal's
messages. Children run with MTL_DEBUG_LAYER=1 (Metal API validation).

Each child ends as one of: ok, checks-failed, timeout, metal-assertion, objc-exception,
signal, panic, error. Logs of every child are kept in --log-dir. See docs/probe.md.

macOS only: elsewhere it exits 5 and runs nothing.

Exit status: 0 all scenarios passed, 1 some failed, 2 bad flags, 5 no Metal here,
130 interrupted.`,
		Example: `  mpspatch probe
  mpspatch probe --threads 8,16 --iterations 200 --queues shared
  mpspatch probe --controls --json > probe.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runProbe(cmd.Context(), d, opts)
		},
	}
	f := cmd.Flags()
	f.IntSliceVar(&opts.threads, "threads", opts.threads, "thread counts, one scenario each")
	f.IntVar(&opts.iterations, "iterations", opts.iterations, "command buffers each thread submits per scenario")
	f.StringVar(&opts.queues, "queues", opts.queues, "command queues: per-thread or shared")
	f.DurationVar(&opts.timeout, "timeout", opts.timeout, "time limit for one scenario's child process")
	f.BoolVar(&opts.controls, "controls", false, "also run the negative controls, which Metal must abort")
	f.StringVar(&opts.logDir, "log-dir", "", "directory for the child logs (default: a new temporary directory)")
	f.StringVar(&opts.backend, "backend", opts.backend, "metal, or fake: an in-memory GPU that exercises the probe's machinery without Metal")
	_ = f.MarkHidden("backend")
	cmd.AddCommand(newProbeChildCmd(d))
	return cmd
}

func runProbe(ctx context.Context, d *deps, opts *probeOptions) error {
	rep, err := probeMetal(ctx, d, opts)
	if rep == nil {
		return err
	}
	return writeProbe(d.printer(), rep, err)
}

// writeProbe renders the probe's report, a partial one when it was interrupted (err),
// and returns the command's exit.
func writeProbe(p *printer, rep *probe.Report, err error) error {
	if perr := p.Result(*rep, func(w io.Writer) { writeProbeReport(w, p, *rep) }); perr != nil {
		return perr
	}
	if err != nil {
		return err
	}
	if !rep.Pass {
		return &silentError{code: ExitCheckFailed}
	}
	return nil
}

// probeMetal does the work of `mpspatch probe`, with its progress on d's stderr: the
// report is nil when no scenario ran (the error says why), and the error is ctx's when
// it was interrupted after some had.
func probeMetal(ctx context.Context, d *deps, opts *probeOptions) (*probe.Report, error) {
	queues := probe.QueueMode(opts.queues)
	if queues != probe.QueuesPerThread && queues != probe.QueuesShared {
		return nil, usageErrorf("--queues %q: want per-thread or shared", opts.queues)
	}
	if opts.timeout <= 0 {
		return nil, usageErrorf("--timeout %s: must be positive", opts.timeout)
	}
	scenarios, err := probe.Matrix(opts.threads, opts.iterations, queues, opts.controls)
	if err != nil {
		return nil, withCode(ExitUsage, err)
	}
	switch opts.backend {
	case "metal":
		if err := probe.Supported(); err != nil {
			return nil, withCode(ExitUnsupported, err)
		}
	case "fake":
	default:
		return nil, usageErrorf("--backend %q: want metal or fake", opts.backend)
	}
	exe, err := probeExecutable()
	if err != nil {
		return nil, fmt.Errorf("probe: find the mpspatch binary to run the probe child: %w", err)
	}
	logDir := opts.logDir
	if logDir == "" {
		if logDir, err = os.MkdirTemp("", "mpspatch-probe-"); err != nil {
			return nil, fmt.Errorf("probe: create log directory: %w", err)
		}
	} else if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, fmt.Errorf("probe: create log directory: %w", err)
	}

	p := d.printer()
	r := &probe.Runner{
		Argv: func(spec string) []string {
			return []string{exe, "probe", "child", "--scenario", spec, "--backend", opts.backend}
		},
		Timeout: opts.timeout,
		LogDir:  logDir,
	}
	rep := probe.Report{LogDir: logDir}
	all := append([]probe.Scenario{{Kind: probe.KindInfo}}, scenarios...)
	for i, s := range all {
		p.Progressf("probe [%d/%d] %s ...", i+1, len(all), s.Name())
		o := r.Run(ctx, s)
		if ctx.Err() != nil {
			break
		}
		if s.Kind == probe.KindInfo && o.ExitCode == ExitUnsupported {
			return nil, withCode(ExitUnsupported, fmt.Errorf("probe: %s (log: %s)", o.Detail, o.Log))
		}
		p.Progressf("probe [%d/%d] %s: %s (%s)", i+1, len(all), s.Name(), verdict(o), time.Duration(o.ElapsedMS)*time.Millisecond)
		rep.Add(o)
	}
	return &rep, ctx.Err()
}

// verdict is an outcome in a word or three: what it was, and whether that passes.
func verdict(o probe.Outcome) string {
	switch {
	case o.Pass && o.Scenario.Kind.IsControl():
		return "pass (aborted by an assertion, as it must be)"
	case o.Pass:
		return "pass"
	case o.Scenario.Kind.IsControl():
		return fmt.Sprintf("FAIL (%s; an assertion had to abort it)", o.Class)
	}
	return fmt.Sprintf("FAIL (%s)", o.Class)
}

// writeProbeReport renders the report as a device line, a table, and for each failure the
// evidence and the log to read.
func writeProbeReport(w io.Writer, p *printer, rep probe.Report) {
	if dev := rep.Device; dev != nil {
		fams := "none reported"
		if len(dev.Families) > 0 {
			fams = strings.Join(dev.Families, " ")
		}
		mem := "no unified memory"
		if dev.UnifiedMemory {
			mem = "unified memory"
		}
		fmt.Fprintf(w, "%s %s (%s backend)\n", p.Paint(bold, "device"), dev.Name, dev.Backend)
		fmt.Fprintf(w, "  os: %s\n  GPU families: %s\n  recommended working set: %s, %s\n\n",
			dev.OS, fams, formatBytes(dev.RecommendedMaxWorkingSetSize), mem)
	} else {
		fmt.Fprintf(w, "%s unknown (no child reported it)\n\n", p.Paint(bold, "device"))
	}
	var table bytes.Buffer
	tw := newColumnWriter(&table, 2)
	fmt.Fprintln(tw, "RESULT\tSCENARIO\tCLASS\tTIME\tDETAIL")
	for _, o := range rep.Outcomes {
		res := p.Paint(green, "pass")
		if !o.Pass {
			res = p.Paint(red, "FAIL")
		}
		detail := o.Detail
		if o.Pass && o.Scenario.Kind.IsControl() {
			detail = "aborted as required: " + detail
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", res, o.Name, o.Class,
			time.Duration(o.ElapsedMS)*time.Millisecond, clipLine(detail, 110))
	}
	tw.Flush()
	for _, line := range strings.SplitAfter(table.String(), "\n") {
		body, nl := strings.CutSuffix(line, "\n")
		io.WriteString(w, strings.TrimRight(body, " "))
		if nl {
			io.WriteString(w, "\n")
		}
	}
	for _, o := range rep.Outcomes {
		if o.Pass {
			continue
		}
		fmt.Fprintf(w, "\n%s %s: %s\n", p.Paint(red, "FAIL"), o.Name, o.Class)
		if o.Scenario.Kind.IsControl() {
			fmt.Fprintln(w, "  a negative control must be aborted by a Metal assertion; this one was not, so the")
			fmt.Fprintln(w, "  probe cannot show it would recognise that misuse (is Metal API validation on?)")
		}
		for _, f := range o.Failures {
			fmt.Fprintf(w, "  %s\n", f)
		}
		if n := len(o.StderrTail); n > 0 {
			fmt.Fprintln(w, "  stderr (last lines):")
			for _, l := range o.StderrTail[max(0, n-8):] {
				fmt.Fprintf(w, "    %s\n", clipLine(l, 160))
			}
		}
		if o.TornLine != "" {
			fmt.Fprintf(w, "  last stdout line was torn: %q\n", clipLine(o.TornLine, 120))
		}
		if o.Log != "" {
			fmt.Fprintf(w, "  log: %s\n", o.Log)
		}
	}
	fmt.Fprintf(w, "\n%d passed, %d failed", rep.Passed, rep.Failed)
	if rep.LogDir != "" {
		fmt.Fprintf(w, "; logs in %s", rep.LogDir)
	}
	fmt.Fprintln(w)
}

func formatBytes(n uint64) string {
	const gib = 1 << 30
	switch {
	case n == 0:
		return "unknown"
	case n >= gib:
		return fmt.Sprintf("%.1f GiB", float64(n)/gib)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

func clipLine(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

type probeChildOptions struct {
	scenario string
	backend  string
}

// newProbeChildCmd is the hidden child side of `mpspatch probe`: it runs one scenario and
// writes JSON lines on stdout. Only the probe parent runs it.
func newProbeChildCmd(d *deps) *cobra.Command {
	opts := &probeChildOptions{}
	cmd := &cobra.Command{
		Use:    "child --scenario SPEC",
		Short:  "Run one probe scenario and stream JSON lines (internal)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runProbeChild(cmd.Context(), d, opts)
		},
	}
	cmd.Flags().StringVar(&opts.scenario, "scenario", "", "scenario spec, as the parent writes it")
	cmd.Flags().StringVar(&opts.backend, "backend", "metal", "metal or fake")
	return cmd
}

func runProbeChild(ctx context.Context, d *deps, opts *probeChildOptions) error {
	s, err := probe.ParseScenario(opts.scenario)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	em := probe.NewEmitter(d.io.Out)
	var b probe.Backend
	switch opts.backend {
	case "metal":
		b, err = probe.Open()
	case "fake":
		b = probe.NewFake(probe.FakeFaults{})
	default:
		return usageErrorf("--backend %q: want metal or fake", opts.backend)
	}
	if err != nil {
		em.Emit(probe.Event{Type: probe.EventError, Message: err.Error()})
		if errors.Is(err, probe.ErrUnsupported) {
			return withCode(ExitUnsupported, err)
		}
		return err
	}
	defer b.Close()
	err = probe.RunChild(ctx, b, s, em)
	if errors.Is(err, probe.ErrChecksFailed) {
		return &silentError{code: ExitCheckFailed}
	}
	return err
}
