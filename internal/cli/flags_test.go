package cli

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/mpspatch/mpspatch/internal/stack"
)

// parseFlags runs cmd on args with its work replaced (see newApplyCmd's runF): it
// returns whether the work was reached and the error the flags gave, running nothing.
func parseFlags(t *testing.T, cmd *cobra.Command, reached *bool, args ...string) error {
	t.Helper()
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	*reached = false
	return cmd.ExecuteContext(context.Background())
}

// flagDeps are deps for a command whose work never runs.
func flagDeps() *deps {
	return &deps{io: IOStreams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}, global: &globalOptions{}}
}

func TestApplyFlagsToOptions(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string // a substring of the usage error (exit 2); "" when the flags are fine
		check   func(t *testing.T, o *applyOptions)
	}{
		{name: "defaults", check: func(t *testing.T, o *applyOptions) {
			if o.commit || o.force || o.dryRun || o.branch != stack.DefaultBranch || o.tree != "." || o.patches != "" {
				t.Errorf("defaults: %+v", *o)
			}
		}},
		{name: "commit takes the default branch", args: []string{"--commit"}, check: func(t *testing.T, o *applyOptions) {
			if !o.commit || o.branch != stack.DefaultBranch || o.force {
				t.Errorf("--commit: %+v", *o)
			}
		}},
		{name: "commit with branch and force", args: []string{"--commit", "--branch", "topic", "--force", "--tree", "/src/pytorch"}, check: func(t *testing.T, o *applyOptions) {
			if !o.commit || o.branch != "topic" || !o.force || o.tree != "/src/pytorch" {
				t.Errorf("--commit --branch topic --force: %+v", *o)
			}
		}},
		{name: "dry run", args: []string{"-n", "--ignore-base"}, check: func(t *testing.T, o *applyOptions) {
			if !o.dryRun || !o.ignoreBase || o.commit {
				t.Errorf("-n --ignore-base: %+v", *o)
			}
		}},
		{name: "branch without commit", args: []string{"--branch", "topic"}, wantErr: "--branch names the branch --commit creates"},
		{name: "default branch named without commit", args: []string{"--branch", stack.DefaultBranch}, wantErr: "give --commit too"},
		{name: "force without commit", args: []string{"--force"}, wantErr: "--force replaces the branch --commit creates"},
		{name: "commit with dry run", args: []string{"--commit", "--dry-run"}, wantErr: "--commit and --dry-run do not go together"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *applyOptions
			var reached bool
			cmd := newApplyCmd(flagDeps(), func(_ context.Context, o *applyOptions) error {
				reached, got = true, o
				return nil
			})
			err := parseFlags(t, cmd, &reached, tt.args...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || exitCodeOf(err) != ExitUsage {
					t.Fatalf("error %v (exit %d), want exit %d and %q", err, exitCodeOf(err), ExitUsage, tt.wantErr)
				}
				if reached {
					t.Errorf("the work ran after a usage error")
				}
				return
			}
			if err != nil || !reached {
				t.Fatalf("error %v, work reached %v", err, reached)
			}
			tt.check(t, got)
		})
	}
}

func TestRunFlagsToOptions(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
		check   func(t *testing.T, o *runOptions)
	}{
		{name: "defaults", check: func(t *testing.T, o *runOptions) {
			if o.dir != "pytorch" || o.from != "" || o.until != "" || o.device != "" || o.full || o.build || o.noScaling || o.suites != nil {
				t.Errorf("defaults: %+v", *o)
			}
		}},
		{name: "directory as argument", args: []string{"/src/pytorch"}, check: func(t *testing.T, o *runOptions) {
			if o.dir != "/src/pytorch" {
				t.Errorf("dir %q", o.dir)
			}
		}},
		{name: "directory given twice alike", args: []string{"--dir", "tree", "tree"}, check: func(t *testing.T, o *runOptions) {
			if o.dir != "tree" {
				t.Errorf("dir %q", o.dir)
			}
		}},
		{name: "from and until in order", args: []string{"--from", "audit", "--until", "build"}, check: func(t *testing.T, o *runOptions) {
			if o.from != "audit" || o.until != "build" {
				t.Errorf("from %q until %q", o.from, o.until)
			}
		}},
		{name: "one stage alone", args: []string{"--from", "build", "--until", "build"}, check: func(t *testing.T, o *runOptions) {
			if o.from != "build" || o.until != "build" {
				t.Errorf("from %q until %q", o.from, o.until)
			}
		}},
		{name: "until alone", args: []string{"--until", "clone"}, check: func(t *testing.T, o *runOptions) {
			if o.from != "" || o.until != "clone" {
				t.Errorf("from %q until %q", o.from, o.until)
			}
		}},
		{name: "verify's flags", args: []string{"--device", "cpu", "--suite", "a.py", "--suite", "b.py", "--no-scaling", "--python", "/usr/bin/python3"}, check: func(t *testing.T, o *runOptions) {
			if o.device != "cpu" || !slices.Equal(o.suites, []string{"a.py", "b.py"}) || !o.noScaling || o.python != "/usr/bin/python3" {
				t.Errorf("verify's flags: %+v", *o)
			}
		}},
		{name: "until before from", args: []string{"--from", "verify", "--until", "build"}, wantErr: "--until build comes before --from verify"},
		{name: "unknown from", args: []string{"--from", "compile"}, wantErr: `stage "compile": want one of clone, apply, audit, build, probe, verify`},
		{name: "unknown until", args: []string{"--until", "test"}, wantErr: `stage "test"`},
		{name: "unknown device", args: []string{"--device", "metal"}, wantErr: `--device: unknown device "metal": want mps, cuda or cpu`},
		{name: "directory given twice apart", args: []string{"--dir", "a", "b"}, wantErr: "give the directory once"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *runOptions
			var reached bool
			cmd := newRunCmd(flagDeps(), func(_ context.Context, o *runOptions) error {
				reached, got = true, o
				return nil
			})
			err := parseFlags(t, cmd, &reached, tt.args...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || exitCodeOf(err) != ExitUsage {
					t.Fatalf("error %v (exit %d), want exit %d and %q", err, exitCodeOf(err), ExitUsage, tt.wantErr)
				}
				if reached {
					t.Errorf("the work ran after a usage error")
				}
				return
			}
			if err != nil || !reached {
				t.Fatalf("error %v, work reached %v", err, reached)
			}
			tt.check(t, got)
		})
	}
}
