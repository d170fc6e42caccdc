package cli

import (
	"slices"
	"strings"
)

// resultFormat is what a command's --format flag chooses: the shape of its result on
// stdout. Each command writes a few of them; the lists below are the one place that says
// which, read by the flag's parsing and by shell completion alike.
type resultFormat string

const (
	formatText     resultFormat = "text"
	formatJSON     resultFormat = "json"
	formatSARIF    resultFormat = "sarif"
	formatMarkdown resultFormat = "markdown"
)

// The formats each command writes, in the order help and completion show them.
var (
	auditFormats = []resultFormat{formatText, formatJSON, formatSARIF}
	runFormats   = []resultFormat{formatText, formatJSON, formatMarkdown}
	checkFormats = []resultFormat{formatText, formatMarkdown}
)

// parseFormat returns the format s names when it is one of allowed, else a usage error
// that lists them.
func parseFormat(s string, allowed []resultFormat) (resultFormat, error) {
	if i := slices.Index(allowed, resultFormat(s)); i >= 0 {
		return allowed[i], nil
	}
	names := formatNames(allowed)
	return "", usageErrorf("--format %q: want %s", s, strings.Join(names[:len(names)-1], ", ")+" or "+names[len(names)-1])
}

func formatNames(set []resultFormat) []string {
	out := make([]string, len(set))
	for i, f := range set {
		out[i] = string(f)
	}
	return out
}
