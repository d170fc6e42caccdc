package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/mpspatch/mpspatch"

// layer is a package's place in the dependency order of docs/architecture.md: cmd →
// internal/cli → domain packages → helpers, with the embedded data below everything and the
// test-support packages beside the product, never inside it.
type layer int

const (
	unknown     layer = iota
	data              // patches: the series itself, embedded
	helper            // small, job-free packages every domain may use
	domain            // one job each; internal/cli composes them
	cliLayer          // internal/cli: flags, wiring, rendering, exit codes
	command           // programs: cmd/mpspatch, and docgen, which documents the command tree
	testSupport       // tests, benchmarks and make only
	model             // standalone, not linked into the binary
)

var layerNames = map[layer]string{
	unknown: "no layer", data: "data", helper: "helper", domain: "domain", cliLayer: "cli",
	command: "command", testSupport: "test support", model: "model",
}

func (l layer) String() string { return layerNames[l] }

// layers gives every package of the module its layer, by its path inside the module. A
// package below a listed path (metalcheck/probe, a metalcheck/internal/... package) takes
// that entry: it is part of the same domain, so imports between them are not sideways.
var layers = map[string]layer{
	"patches": data,

	"internal/atomicfile": helper,
	"internal/config":     helper,
	"internal/confined":   helper,
	"internal/flock":      helper,
	"internal/gitcli":     helper,
	"internal/lazyregexp": helper,
	"internal/redact":     helper,
	"internal/run":        helper,
	"internal/statekey":   helper,
	"internal/suiteparam": helper,

	"internal/series":   domain,
	"internal/stack":    domain,
	"internal/upstream": domain,
	"internal/pipeline": domain,
	"builder":           domain,
	"verify":            domain,
	"metalcheck":        domain,

	"internal/cli": cliLayer,

	"cmd/mpspatch":    command,
	"internal/docgen": command,

	"internal/testenv":   testSupport,
	"internal/gitserver": testSupport,
	"internal/synthtree": testSupport,
	"internal/layering":  testSupport,

	"internal/streammodel": model,
}

// sidewaysAllowed are the domain-to-domain imports the architecture names: stack and
// upstream compose the series engine with git. Every other one is a sideways import.
var sidewaysAllowed = map[[2]string]bool{
	{"internal/stack", "internal/series"}:    true,
	{"internal/upstream", "internal/series"}: true,
}

// node is one package as the rules see it.
type node struct {
	path  string // import path
	entry string // the key of layers that covers it, "" outside the module or unknown
	layer layer
}

func classify(path string) node {
	rel, ok := strings.CutPrefix(path, module+"/")
	if !ok {
		return node{path: path}
	}
	best := ""
	for key := range layers {
		if (rel == key || strings.HasPrefix(rel, key+"/")) && len(key) > len(best) {
			best = key
		}
	}
	if best == "" {
		return node{path: path, layer: unknown}
	}
	return node{path: path, entry: best, layer: layers[best]}
}

func (n node) inModule() bool { return strings.HasPrefix(n.path, module+"/") }

// rule is one layering rule: what it forbids, and why it exists.
type rule struct {
	name    string
	why     string
	forbids func(from, to node) bool
}

func below(l layer, of ...layer) bool { return slices.Contains(of, l) }

var rules = []rule{
	{
		name: "no cobra below internal/cli",
		why: "flags, help and exit codes belong to internal/cli; a package that knows cobra can " +
			"only be driven through a command line, and the pipeline and the tests call the " +
			"domain packages directly",
		forbids: func(from, to node) bool {
			return from.layer != cliLayer && from.layer != command &&
				(isUnder(to.path, "github.com/spf13/cobra") || isUnder(to.path, "github.com/spf13/pflag"))
		},
	},
	{
		name: "nothing internal/cli composes imports it",
		why: "internal/cli composes the domain packages; one reaching back up would make the " +
			"wiring circular and link the whole command tree into a library",
		forbids: func(from, to node) bool {
			return to.entry == "internal/cli" && from.layer != cliLayer && from.layer != command
		},
	},
	{
		name: "no sideways import between domain packages",
		why: "each domain package is one job that internal/cli composes, runnable and testable " +
			"apart (verify is handed the foreign-torch check as a function rather than import " +
			"builder); stack and upstream alone compose the series engine",
		forbids: func(from, to node) bool {
			return from.layer == domain && to.layer == domain && from.entry != to.entry &&
				!sidewaysAllowed[[2]string{from.entry, to.entry}]
		},
	},
	{
		name: "helpers stay below the domain packages",
		why: "every domain package uses the helpers; a helper importing a domain package or the " +
			"CLI would hand that package to every user of the helper, a sideways import by the " +
			"back door",
		forbids: func(from, to node) bool {
			return from.layer == helper && below(to.layer, domain, cliLayer, command)
		},
	},
	{
		name: "the series engine runs no git and no process",
		why: "the apply engine reads and writes only the files a patch touches and works on a " +
			"tree with no .git (DESIGN: pure, no git, no processes); stack and upstream add git " +
			"around it",
		forbids: func(from, to node) bool {
			return from.entry == "internal/series" &&
				(to.path == "os/exec" || to.entry == "internal/run" || to.entry == "internal/gitcli")
		},
	},
	{
		name: "test support stays out of the product",
		why: "testenv, gitserver and synthtree exist for tests and make, and streammodel is a " +
			"standalone model; linked into a command they would ship test machinery in the binary",
		forbids: func(from, to node) bool {
			return below(from.layer, data, helper, domain, cliLayer, command) && below(to.layer, testSupport, model)
		},
	},
	{
		name: "the data package imports no code",
		why:  "patches is the series itself, read by every layer, so it depends on none of them",
		forbids: func(from, to node) bool {
			return from.layer == data && to.inModule()
		},
	},
}

// unlayered is the rule every package of the module meets by being in the table.
var unlayered = rule{
	name: "every package has a layer",
	why: "a package with no layer escapes every other rule; give it one in layers in " +
		"internal/layering/layering_test.go and a row in docs/architecture.md",
}

func isUnder(path, root string) bool { return path == root || strings.HasPrefix(path, root+"/") }

// listedPackage is the part of `go list -json` output the rules read.
type listedPackage struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

type violation struct {
	pkg, imp string
	chain    []string // pkg, ..., imp by direct imports
	rule     *rule
}

func (v violation) String() string {
	if v.imp == "" {
		return fmt.Sprintf("%s: %s: %s", v.pkg, v.rule.name, v.rule.why)
	}
	via := ""
	if len(v.chain) > 2 {
		via = " (through " + strings.Join(v.chain[1:len(v.chain)-1], " → ") + ")"
	}
	return fmt.Sprintf("%s imports %s%s: %s: %s", v.pkg, v.imp, via, v.rule.name, v.rule.why)
}

// check applies the rules to every package of the module in pkgs, on its whole dependency
// set (a forbidden package brought in through an allowed one counts), and returns the
// violations in a stable order.
func check(pkgs []listedPackage) []violation {
	byPath := make(map[string]listedPackage, len(pkgs))
	for _, p := range pkgs {
		byPath[p.ImportPath] = p
	}
	var out []violation
	for _, p := range pkgs {
		from := classify(p.ImportPath)
		if !from.inModule() {
			continue
		}
		if from.layer == unknown {
			out = append(out, violation{pkg: p.ImportPath, rule: &unlayered})
			continue
		}
		deps := slices.Clone(p.Deps)
		sort.Strings(deps)
		for _, d := range deps {
			to := classify(d)
			for i := range rules {
				if rules[i].forbids(from, to) {
					out = append(out, violation{pkg: p.ImportPath, imp: d, chain: importChain(byPath, p.ImportPath, d), rule: &rules[i]})
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].pkg != out[j].pkg {
			return out[i].pkg < out[j].pkg
		}
		return out[i].imp < out[j].imp
	})
	return out
}

// importChain is the shortest chain of direct imports from one package to another, so a
// failure shows where a forbidden package came in.
func importChain(byPath map[string]listedPackage, from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == to {
			var chain []string
			for p := to; p != ""; p = prev[p] {
				chain = append(chain, p)
			}
			slices.Reverse(chain)
			return chain
		}
		imps := slices.Clone(byPath[cur].Imports)
		sort.Strings(imps)
		for _, next := range imps {
			if _, seen := prev[next]; !seen {
				prev[next] = cur
				queue = append(queue, next)
			}
		}
	}
	return []string{from, to}
}

// goList runs `go list -deps -json` on every package of the module with the extra
// environment and decodes its stream of packages.
func goList(t *testing.T, env ...string) []listedPackage {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command(gobin, "list", "-deps", "-json=ImportPath,Imports,Deps", module+"/...")
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s list -deps %v: %v\n%s", gobin, env, err, stderr.String())
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(&stdout)
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestLayering checks the module's own import graph, for this host and for darwin/arm64
// (the Metal probe's files are compiled only there).
func TestLayering(t *testing.T) {
	for _, platform := range []struct {
		name string
		env  []string
	}{
		{"host", nil},
		{"darwin-arm64", []string{"GOOS=darwin", "GOARCH=arm64", "CGO_ENABLED=0"}},
	} {
		t.Run(platform.name, func(t *testing.T) {
			pkgs := goList(t, platform.env...)
			// The check is only as good as the list: it must hold the packages the rules
			// are about, or an empty or broken listing would pass.
			seen := map[string]bool{}
			for _, p := range pkgs {
				if n := classify(p.ImportPath); n.entry != "" && n.path == module+"/"+n.entry {
					seen[n.entry] = true
				}
			}
			for entry := range layers {
				if !seen[entry] {
					t.Errorf("layers lists %s, which go list did not report: remove or rename the entry", entry)
				}
			}
			for _, v := range check(pkgs) {
				t.Error(v)
			}
		})
	}
}

// graph builds a synthetic go list output from direct imports (relative to the module
// for project packages), with each package's Deps its transitive imports.
func graph(imports map[string][]string) []listedPackage {
	abs := func(p string) string {
		switch strings.SplitN(p, "/", 2)[0] {
		case "internal", "cmd", "builder", "verify", "metalcheck", "patches":
			return module + "/" + p
		}
		return p
	}
	full := map[string][]string{}
	for from, tos := range imports {
		for _, to := range tos {
			full[abs(from)] = append(full[abs(from)], abs(to))
		}
		if _, ok := full[abs(from)]; !ok {
			full[abs(from)] = nil
		}
	}
	var deps func(p string, acc map[string]bool)
	deps = func(p string, acc map[string]bool) {
		for _, d := range full[p] {
			if !acc[d] {
				acc[d] = true
				deps(d, acc)
			}
		}
	}
	var out []listedPackage
	for p, imps := range full {
		acc := map[string]bool{}
		deps(p, acc)
		var ds []string
		for d := range acc {
			ds = append(ds, d)
		}
		out = append(out, listedPackage{ImportPath: p, Imports: imps, Deps: ds})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ImportPath < out[j].ImportPath })
	return out
}

// wellLayered is the module's graph in miniature, obeying every rule.
func wellLayered() map[string][]string {
	return map[string][]string{
		"cmd/mpspatch":           {"internal/cli"},
		"internal/docgen":        {"internal/cli", "github.com/spf13/cobra"},
		"internal/cli":           {"github.com/spf13/cobra", "internal/stack", "internal/upstream", "verify", "builder", "metalcheck/probe", "metalcheck", "internal/config", "patches"},
		"internal/stack":         {"internal/series", "internal/gitcli"},
		"internal/upstream":      {"internal/series", "internal/gitcli"},
		"internal/series":        {"internal/lazyregexp", "internal/statekey"},
		"verify":                 {"internal/run", "os/exec"},
		"builder":                {"internal/run", "internal/gitcli"},
		"metalcheck":             {"metalcheck/internal/cxx"},
		"metalcheck/probe":       {"internal/run"},
		"internal/gitcli":        {"internal/run", "internal/redact"},
		"internal/run":           {"internal/redact", "os/exec"},
		"internal/config":        {"internal/redact", "internal/suiteparam"},
		"internal/testenv":       {"internal/run"},
		"internal/synthtree":     {"internal/series"},
		"patches":                {"embed"},
		"github.com/spf13/cobra": {"github.com/spf13/pflag"},
	}
}

type found struct{ pkg, imp, rule string }

func summarize(vs []violation) []found {
	var out []found
	for _, v := range vs {
		out = append(out, found{strings.TrimPrefix(v.pkg, module+"/"), strings.TrimPrefix(v.imp, module+"/"), v.rule.name})
	}
	return out
}

// TestCheckCatchesEachRule breaks each rule in a synthetic graph and expects exactly the
// violations that break names; the unbroken graph gives none, so the rules can both pass
// and fail.
func TestCheckCatchesEachRule(t *testing.T) {
	if have := check(graph(wellLayered())); len(have) != 0 {
		t.Fatalf("the well-layered graph: have %v, want no violations", have)
	}
	tests := []struct {
		name   string
		break_ func(g map[string][]string)
		want   []found
	}{
		{"verify imports builder", func(g map[string][]string) { g["verify"] = append(g["verify"], "builder") },
			[]found{{"verify", "builder", "no sideways import between domain packages"}}},
		{"builder imports metalcheck/probe", func(g map[string][]string) { g["builder"] = append(g["builder"], "metalcheck/probe") },
			[]found{{"builder", "metalcheck/probe", "no sideways import between domain packages"}}},
		{"series imports cobra", func(g map[string][]string) {
			g["internal/series"] = append(g["internal/series"], "github.com/spf13/cobra")
		},
			[]found{
				{"internal/series", "github.com/spf13/cobra", "no cobra below internal/cli"},
				{"internal/series", "github.com/spf13/pflag", "no cobra below internal/cli"},
				{"internal/stack", "github.com/spf13/cobra", "no cobra below internal/cli"},
				{"internal/stack", "github.com/spf13/pflag", "no cobra below internal/cli"},
				{"internal/synthtree", "github.com/spf13/cobra", "no cobra below internal/cli"},
				{"internal/synthtree", "github.com/spf13/pflag", "no cobra below internal/cli"},
				{"internal/upstream", "github.com/spf13/cobra", "no cobra below internal/cli"},
				{"internal/upstream", "github.com/spf13/pflag", "no cobra below internal/cli"},
			}},
		{"metalcheck imports internal/cli", func(g map[string][]string) { g["metalcheck"] = append(g["metalcheck"], "internal/cli") },
			[]found{
				{"metalcheck", "builder", "no sideways import between domain packages"},
				{"metalcheck", "internal/cli", "nothing internal/cli composes imports it"},
				{"metalcheck", "internal/series", "no sideways import between domain packages"},
				{"metalcheck", "internal/stack", "no sideways import between domain packages"},
				{"metalcheck", "internal/upstream", "no sideways import between domain packages"},
				{"metalcheck", "verify", "no sideways import between domain packages"},
				{"metalcheck", "github.com/spf13/cobra", "no cobra below internal/cli"},
				{"metalcheck", "github.com/spf13/pflag", "no cobra below internal/cli"},
			}},
		{"config imports verify", func(g map[string][]string) { g["internal/config"] = append(g["internal/config"], "verify") },
			[]found{{"internal/config", "verify", "helpers stay below the domain packages"}}},
		{"series starts a process", func(g map[string][]string) { g["internal/series"] = append(g["internal/series"], "os/exec") },
			[]found{{"internal/series", "os/exec", "the series engine runs no git and no process"}}},
		{"series runs git", func(g map[string][]string) { g["internal/series"] = append(g["internal/series"], "internal/gitcli") },
			[]found{
				{"internal/series", "internal/gitcli", "the series engine runs no git and no process"},
				{"internal/series", "internal/run", "the series engine runs no git and no process"},
				{"internal/series", "os/exec", "the series engine runs no git and no process"},
			}},
		{"cli links testenv", func(g map[string][]string) { g["internal/cli"] = append(g["internal/cli"], "internal/testenv") },
			[]found{
				{"cmd/mpspatch", "internal/testenv", "test support stays out of the product"},
				{"internal/cli", "internal/testenv", "test support stays out of the product"},
				{"internal/docgen", "internal/testenv", "test support stays out of the product"},
			}},
		{"patches imports code", func(g map[string][]string) { g["patches"] = append(g["patches"], "internal/lazyregexp") },
			[]found{{"patches", "internal/lazyregexp", "the data package imports no code"}}},
		{"a package with no layer", func(g map[string][]string) { g["internal/newthing"] = []string{"internal/run"} },
			[]found{{"internal/newthing", "", "every package has a layer"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := wellLayered()
			tt.break_(g)
			have := summarize(check(graph(g)))
			if !slices.Equal(have, tt.want) {
				t.Errorf("have %v\nwant %v", have, tt.want)
			}
		})
	}
}

// TestViolationMessage: a failure names the package, the import, the chain it came
// through and the reason for the rule.
func TestViolationMessage(t *testing.T) {
	g := wellLayered()
	g["verify"] = append(g["verify"], "internal/stack")
	var msg string
	for _, v := range check(graph(g)) {
		if v.imp == module+"/internal/stack" {
			msg = v.String()
		}
	}
	want := module + "/verify imports " + module + "/internal/stack: no sideways import between domain packages: " + rules[2].why
	if msg != want {
		t.Errorf("have %q\nwant %q", msg, want)
	}
	g = wellLayered()
	g["internal/config"] = append(g["internal/config"], "internal/stack")
	for _, v := range check(graph(g)) {
		if v.imp == module+"/internal/series" {
			msg = v.String()
		}
	}
	if want := "(through " + module + "/internal/stack)"; !strings.Contains(msg, want) {
		t.Errorf("have %q, want it to name the chain %q", msg, want)
	}
}
