package metalcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/owenrumney/go-sarif/v3/pkg/report/v210/sarif"
)

// ToolName and ToolURI identify the audit in SARIF output.
const (
	ToolName = "mpspatch-audit"
	ToolURI  = "https://github.com/mpspatch/mpspatch/blob/main/docs/audit.md"
)

// Result is an audit report after the baseline: findings split into new and accepted, plus
// baseline entries that matched nothing.
type Result struct {
	Files    int       `json:"files"`
	New      []Finding `json:"new"`
	Accepted []Finding `json:"accepted"`
	// Stale is always present (empty when every entry matched), so scripts need no
	// special case.
	Stale []Entry `json:"stale"`
}

// WriteText writes one "file:line:col: ID name: message" line per new finding, each
// followed by an indented fix hint, then a one-line summary.
func WriteText(w io.Writer, r Result) error {
	for _, f := range r.New {
		if _, err := fmt.Fprintf(w, "%s\n    fix: %s\n", f, f.Fix); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "%d files, %d new findings, %d accepted by the baseline\n", r.Files, len(r.New), len(r.Accepted))
	return err
}

// WriteJSON writes r as an indented JSON document.
func WriteJSON(w io.Writer, r Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// SARIF builds a SARIF 2.1.0 log of r: every rule in tool.driver.rules, new findings as
// results, accepted ones as results with an external suppression carrying the reason.
func SARIF(r Result, reasons map[string]string) *sarif.Report {
	rep := sarif.NewReport()
	run := sarif.NewRunWithInformationURI(ToolName, ToolURI)
	for _, rule := range Rules {
		run.AddRule(rule.ID).
			WithName(rule.Name).
			WithShortDescription(sarif.NewMultiformatMessageString().WithText(rule.Name + ": " + firstSentence(rule.Summary))).
			WithFullDescription(sarif.NewMultiformatMessageString().WithText(rule.Summary)).
			WithHelp(sarif.NewMultiformatMessageString().WithText(rule.Fix)).
			WithHelpURI(ToolURI + "#" + rule.ID).
			WithDefaultConfiguration(sarif.NewReportingConfiguration().WithLevel(string(rule.Severity)))
	}
	add := func(f Finding, suppressed bool) {
		res := run.CreateResultForRule(f.Rule).
			WithLevel(string(f.Severity)).
			WithMessage(sarif.NewTextMessage(f.Message + " (fix: " + f.Fix + ")")).
			AddLocation(sarif.NewLocationWithPhysicalLocation(
				sarif.NewPhysicalLocation().
					WithArtifactLocation(sarif.NewSimpleArtifactLocation(f.File).WithURIBaseID("%SRCROOT%")).
					WithRegion(sarif.NewSimpleRegion(f.Line, f.Line).WithStartColumn(f.Col))))
		res.PartialFingerprints = map[string]string{"mpspatchAudit/v1": f.Fingerprint}
		if suppressed {
			res.Suppressions = append(res.Suppressions,
				sarif.NewSuppression().WithKind("external").WithJustification(reasons[f.Fingerprint]))
		}
	}
	for _, f := range r.New {
		add(f, false)
	}
	for _, f := range r.Accepted {
		add(f, true)
	}
	run.WithColumnKind("unicodeCodePoints")
	rep.AddRun(run)
	return rep
}

// WriteSARIF writes the SARIF log of r, indented, without the padding go-sarif's
// constructors put in every object (empty arrays and property bags, -1 indexes, the
// schema's default newline sequences): only what the audit says.
func WriteSARIF(w io.Writer, r Result, reasons map[string]string) error {
	raw, err := json.Marshal(SARIF(r, reasons))
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return err
	}
	doc, _ = pruneSARIF(doc)
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(out, '\n'))
	return err
}

// pruneSARIF drops what carries no information from a decoded SARIF document: empty
// arrays and objects, the -1 that marks an unset index or offset, and newlineSequences
// equal to the schema's default. It reports whether v itself is empty.
func pruneSARIF(v any) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			pe, empty := pruneSARIF(e)
			if empty || k == "newlineSequences" && isDefaultNewlines(e) {
				delete(x, k)
				continue
			}
			x[k] = pe
		}
		return x, len(x) == 0
	case []any:
		out := x[:0]
		for _, e := range x {
			if pe, empty := pruneSARIF(e); !empty {
				out = append(out, pe)
			}
		}
		return out, len(out) == 0
	case json.Number:
		return x, x == "-1"
	}
	return v, false
}

func isDefaultNewlines(v any) bool {
	a, ok := v.([]any)
	return ok && len(a) == 2 && a[0] == "\r\n" && a[1] == "\n"
}

func firstSentence(s string) string {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '.' && s[i+1] == ' ' || s[i] == ':' && s[i+1] == ' ' {
			return s[:i]
		}
	}
	return s
}
