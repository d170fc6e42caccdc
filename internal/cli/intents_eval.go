package cli

import (
	"os"

	"github.com/mpspatch/mpspatch/internal/series"
	"github.com/mpspatch/mpspatch/metalcheck"
)

// evaluateIntents checks every patch's Intent: trailers against the tree at root. The
// series package cannot do this itself (it may not import metalcheck), so the CLI
// composes the two: the series says what must hold, metalcheck says whether it does.
func evaluateIntents(root *os.Root, s *series.Series) []intentReport {
	read := func(p string) ([]byte, error) { return root.ReadFile(p) }
	var out []intentReport
	for _, p := range s.Patches {
		out = append(out, evaluatePatchIntents(p, read)...)
	}
	return out
}

func evaluatePatchIntents(p *series.Patch, read func(string) ([]byte, error)) []intentReport {
	var out []intentReport
	var parsed []metalcheck.Intent
	var where []series.Trailer
	for _, t := range p.TrailerValues("Intent") {
		in, err := metalcheck.ParseIntent(t.Value)
		if err != nil {
			out = append(out, intentReport{Patch: p.Name, Line: t.Line, Intent: t.Value, Detail: "cannot parse: " + err.Error()})
			continue
		}
		parsed = append(parsed, in)
		where = append(where, t)
	}
	for i, r := range metalcheck.EvaluateIntents(parsed, read) {
		out = append(out, intentReport{Patch: p.Name, Line: where[i].Line, Intent: where[i].Value, OK: r.OK, Detail: r.Detail})
	}
	return out
}
