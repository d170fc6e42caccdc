package metalcheck

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
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
// The lines are appended to one buffer and written at once (Finding.String's format, by
// hand: formatting each finding with fmt was most of the time spent after the analysis).
func WriteText(w io.Writer, r Result) error {
	size := 64
	for i := range r.New {
		f := &r.New[i]
		size += len(f.File) + len(f.Rule) + len(f.Name) + len(f.Message) + len(f.Fix) + 40
	}
	b := make([]byte, 0, size)
	for i := range r.New {
		f := &r.New[i]
		b = append(b, f.File...)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(f.Line), 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(f.Col), 10)
		b = append(b, ": "...)
		b = append(b, f.Rule...)
		b = append(b, ' ')
		b = append(b, f.Name...)
		b = append(b, ": "...)
		b = append(b, f.Message...)
		b = append(b, "\n    fix: "...)
		b = append(b, f.Fix...)
		b = append(b, '\n')
	}
	b = fmt.Appendf(b, "%s, %s, %d accepted by the baseline\n",
		countOf(r.Files, "file"), countOf(len(r.New), "new finding"), len(r.Accepted))
	_, err := w.Write(b)
	return err
}

// countOf writes n and word, with an s unless n is 1 ("1 file", "2 files"); the words it is
// given all take a plain s.
func countOf(n int, word string) string {
	if n == 1 {
		return strconv.Itoa(n) + " " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// WriteJSON writes r as an indented JSON document.
func WriteJSON(w io.Writer, r Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// The SARIF 2.1.0 log is written with the small types below, not with go-sarif
// (github.com/owenrumney/go-sarif), which the tests still use to validate the output
// against the schema: go-sarif links gojsonschema and net/http, whose package
// initialisers every mpspatch command would pay at start-up (issue 11), for a document
// of a dozen fields. Fields are declared in alphabetical order and empty ones omitted, so
// the JSON reads as a sorted document that carries only what the audit says.
type sarifLog struct {
	Schema  string     `json:"$schema"`
	Runs    []sarifRun `json:"runs"`
	Version string     `json:"version"`
}

type sarifRun struct {
	ColumnKind string        `json:"columnKind"`
	Language   string        `json:"language"`
	Results    []sarifResult `json:"results,omitempty"`
	Tool       struct {
		Driver sarifDriver `json:"driver"`
	} `json:"tool"`
}

type sarifDriver struct {
	Contents        []string    `json:"contents"`
	InformationURI  string      `json:"informationUri"`
	IsComprehensive bool        `json:"isComprehensive"`
	Language        string      `json:"language"`
	Name            string      `json:"name"`
	Rules           []sarifRule `json:"rules"`
}

type sarifText struct {
	Text string `json:"text"`
}

type sarifRule struct {
	DefaultConfiguration struct {
		Enabled bool   `json:"enabled"`
		Level   string `json:"level"`
	} `json:"defaultConfiguration"`
	FullDescription  sarifText `json:"fullDescription"`
	Help             sarifText `json:"help"`
	HelpURI          string    `json:"helpUri"`
	ID               string    `json:"id"`
	Name             string    `json:"name"`
	ShortDescription sarifText `json:"shortDescription"`
}

type sarifResult struct {
	Kind                string             `json:"kind"`
	Level               string             `json:"level"`
	Locations           []sarifLocation    `json:"locations"`
	Message             sarifText          `json:"message"`
	PartialFingerprints map[string]string  `json:"partialFingerprints"`
	RuleID              string             `json:"ruleId"`
	RuleIndex           int                `json:"ruleIndex"`
	Suppressions        []sarifSuppression `json:"suppressions,omitempty"`
}

type sarifLocation struct {
	PhysicalLocation struct {
		ArtifactLocation struct {
			URI       string `json:"uri"`
			URIBaseID string `json:"uriBaseId"`
		} `json:"artifactLocation"`
		Region struct {
			EndLine     int `json:"endLine"`
			StartColumn int `json:"startColumn,omitempty"`
			StartLine   int `json:"startLine"`
		} `json:"region"`
	} `json:"physicalLocation"`
}

type sarifSuppression struct {
	Justification string `json:"justification"`
	Kind          string `json:"kind"`
}

// sarifReport builds the SARIF 2.1.0 log of r: every rule in tool.driver.rules, new
// findings as results, accepted ones as results with an external suppression carrying
// the reason.
func sarifReport(r Result, reasons map[string]string) sarifLog {
	run := sarifRun{ColumnKind: "unicodeCodePoints", Language: "en-US"}
	d := &run.Tool.Driver
	d.Contents = []string{"localizedData", "nonLocalizedData"}
	d.InformationURI = ToolURI
	d.Language = "en-US"
	d.Name = ToolName
	index := make(map[string]int, len(Rules))
	for i, rule := range Rules {
		index[rule.ID] = i
		sr := sarifRule{
			FullDescription:  sarifText{rule.Summary},
			Help:             sarifText{rule.Fix},
			HelpURI:          ToolURI + "#" + rule.ID,
			ID:               rule.ID,
			Name:             rule.Name,
			ShortDescription: sarifText{rule.Name + ": " + firstSentence(rule.Summary)},
		}
		sr.DefaultConfiguration.Enabled = true
		sr.DefaultConfiguration.Level = string(rule.Severity)
		d.Rules = append(d.Rules, sr)
	}
	add := func(f Finding, suppressed bool) {
		res := sarifResult{
			Kind:                "fail",
			Level:               string(f.Severity),
			Message:             sarifText{f.Message + " (fix: " + f.Fix + ")"},
			PartialFingerprints: map[string]string{"mpspatchAudit/v1": f.Fingerprint},
			RuleID:              f.Rule,
			RuleIndex:           -1,
		}
		if i, ok := index[f.Rule]; ok {
			res.RuleIndex = i
		}
		var loc sarifLocation
		loc.PhysicalLocation.ArtifactLocation.URI = f.File
		loc.PhysicalLocation.ArtifactLocation.URIBaseID = "%SRCROOT%"
		loc.PhysicalLocation.Region.StartLine = f.Line
		loc.PhysicalLocation.Region.EndLine = f.Line
		loc.PhysicalLocation.Region.StartColumn = f.Col
		res.Locations = []sarifLocation{loc}
		if suppressed {
			res.Suppressions = []sarifSuppression{{Kind: "external", Justification: reasons[f.Fingerprint]}}
		}
		run.Results = append(run.Results, res)
	}
	for _, f := range r.New {
		add(f, false)
	}
	for _, f := range r.Accepted {
		add(f, true)
	}
	return sarifLog{
		Schema:  "https://raw.githubusercontent.com/oasis-tcs/sarif-spec/main/sarif-2.1/schema/sarif-schema-2.1.0.json",
		Runs:    []sarifRun{run},
		Version: "2.1.0",
	}
}

// WriteSARIF writes the SARIF 2.1.0 log of r, indented, for GitHub code scanning and
// other SARIF viewers.
func WriteSARIF(w io.Writer, r Result, reasons map[string]string) error {
	out, err := json.MarshalIndent(sarifReport(r, reasons), "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(out, '\n'))
	return err
}

func firstSentence(s string) string {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '.' && s[i+1] == ' ' || s[i] == ':' && s[i+1] == ' ' {
			return s[:i]
		}
	}
	return s
}
