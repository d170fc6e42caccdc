package cli

import (
	"fmt"
	"io/fs"
	"strings"

	"github.com/mpspatch/mpspatch/internal/lazyregexp"
	"github.com/mpspatch/mpspatch/internal/series"
	"github.com/mpspatch/mpspatch/metalcheck"
	"github.com/mpspatch/mpspatch/verify"
)

// checkTrailers cross-checks trailers against the other packages: every Intent: parses in
// metalcheck's grammar, every Test: names a test that exists in the embedded suites. The
// series package checks only their syntax: it may not import its siblings.
func checkTrailers(s *series.Series) []string {
	var probs []string
	suites := verify.SuiteFS()
	defs := map[string]map[string]bool{} // suite file -> test functions it defines
	for _, p := range s.Patches {
		for _, t := range p.TrailerValues("Intent") {
			if _, err := metalcheck.ParseIntent(t.Value); err != nil {
				probs = append(probs, fmt.Sprintf("%s:%d: Intent: %v", p.Name, t.Line, err))
			}
		}
		for _, t := range p.TrailerValues("Test") {
			file, name, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(t.Value), "verify/suites/"), "::")
			names, ok := defs[file]
			if !ok {
				names = testDefs(suites, file)
				defs[file] = names
			}
			switch {
			case names == nil:
				probs = append(probs, fmt.Sprintf("%s:%d: Test: no suite %s in verify/suites", p.Name, t.Line, file))
			case name != "" && !names[name]:
				probs = append(probs, fmt.Sprintf("%s:%d: Test: %s defines no %s", p.Name, t.Line, file, name))
			}
		}
	}
	return probs
}

var defRE = lazyregexp.New(`(?m)^def ([A-Za-z_][A-Za-z0-9_]*)\(`)

// testDefs lists the top-level functions a suite file defines; nil when it does not exist.
func testDefs(suites fs.FS, file string) map[string]bool {
	data, err := fs.ReadFile(suites, file)
	if err != nil {
		return nil
	}
	out := map[string]bool{}
	for _, m := range defRE().FindAllSubmatch(data, -1) {
		out[string(m[1])] = true
	}
	return out
}
