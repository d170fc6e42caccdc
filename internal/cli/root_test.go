package cli

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
)

func TestCommandToRun(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"version"}, "version"},
		{[]string{"apply", "--tree", "x"}, "apply"},
		{[]string{"-v", "--json", "-q", "--quiet", "--verbose", "status"}, "status"},
		{[]string{"--config", "version", "check"}, "check"}, // "version" is --config's value
		{[]string{"--config=x.toml", "config", "--default"}, "config"},
		{[]string{"-qv", "status"}, ""},         // combined short flags: cobra decides
		{[]string{"--json=true", "status"}, ""}, // a flag with its value attached
		{[]string{"--nope", "status"}, ""},
		{[]string{"help", "status"}, ""},
		{[]string{"completion", "bash"}, ""},
		{[]string{"__complete", "st"}, ""},
		{[]string{"statsu"}, ""}, // cobra suggests "status" from the whole tree
		{[]string{"--", "status"}, ""},
		{[]string{"--config"}, ""},
		{[]string{"-C", "status", "apply"}, "apply"}, // "status" is -C's value
		{[]string{"-C", "a", "-C", "b", "status"}, "status"},
		{[]string{"--color", "never", "status"}, "status"},
		{[]string{"--color=always", "-C", "x", "audit"}, "audit"},
		{[]string{"-Cx", "status"}, ""}, // value attached: cobra decides
		{nil, ""},
	} {
		if have := commandToRun(tt.args); have != tt.want {
			t.Errorf("commandToRun(%q) = %q, want %q", tt.args, have, tt.want)
		}
	}
}

// TestCommandNamesAreTheTree: the names Main builds one command from are every command of
// the whole tree, each built under its own name.
func TestCommandNamesAreTheTree(t *testing.T) {
	d := &deps{io: IOStreams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}, global: &globalOptions{}}
	var names []string
	for _, c := range newRootCmd(d, "").Commands() {
		if c.Name() != "completion" { // cobra's own, made with the whole tree for its examples
			names = append(names, c.Name())
		}
	}
	if !slices.Equal(names, slices.Sorted(slices.Values(commandNames))) {
		t.Errorf("the tree's commands %q are not commandNames %q", names, commandNames)
	}
	for _, name := range commandNames {
		if c := newCommand(d, name); c.Name() != name {
			t.Errorf("newCommand(%q) built %q", name, c.Name())
		}
	}
}

// TestOneCommandTreeAsWholeTree: a root holding only the command run says and does what
// the whole tree does, for every command's help, its subcommands' help, and a usage error.
func TestOneCommandTreeAsWholeTree(t *testing.T) {
	exec := func(only string, args ...string) (string, string, error) {
		var out, errb bytes.Buffer
		d := &deps{io: IOStreams{In: strings.NewReader(""), Out: &out, Err: &errb, Getenv: func(string) string { return "" }},
			global: &globalOptions{}, sink: &resultSink{}}
		root := newRootCmd(d, only)
		root.SetArgs(args)
		err := root.ExecuteContext(context.Background())
		return out.String(), errb.String(), err
	}
	whole := &deps{io: IOStreams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}, global: &globalOptions{}}
	for _, name := range commandNames {
		argvs := [][]string{{name, "--help"}, {"-v", name, "--no-such-flag"}}
		for _, sub := range newCommand(whole, name).Commands() {
			argvs = append(argvs, []string{name, sub.Name(), "--help"})
		}
		for _, args := range argvs {
			if commandToRun(args) != name {
				t.Fatalf("commandToRun(%q) = %q", args, commandToRun(args))
			}
			wantOut, wantErr, wantE := exec("", args...)
			haveOut, haveErr, haveE := exec(name, args...)
			if haveOut != wantOut || haveErr != wantErr || (haveE == nil) != (wantE == nil) || (haveE != nil && haveE.Error() != wantE.Error()) {
				t.Errorf("%q: one-command tree differs from the whole tree:\nwhole: %v\n%s%s\none: %v\n%s%s", args, wantE, wantOut, wantErr, haveE, haveOut, haveErr)
			}
			if !strings.Contains(wantOut, "Usage:") && wantE == nil {
				t.Errorf("%q: no help printed:\n%s", args, wantOut)
			}
		}
	}
}
