package metalcheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/mpspatch/mpspatch/internal/lazyregexp"
)

// TODOReason is the reason --write-baseline puts in every entry. The loader rejects it: an
// accepted finding must say why it is acceptable.
const TODOReason = "TODO: explain"

// Baseline is a file of accepted findings.
type Baseline struct {
	Version  int     `toml:"version"`
	Findings []Entry `toml:"finding"`

	// Path is the file it was read from.
	Path string `toml:"-"`
}

// Entry is one accepted finding. Rule, File and Fingerprint identify it; Function and
// Statement are there for the reader; Reason is mandatory.
type Entry struct {
	Rule        string `toml:"rule" json:"rule"`
	File        string `toml:"file" json:"file"`
	Function    string `toml:"function,omitempty" json:"function,omitempty"`
	Statement   string `toml:"statement,omitempty" json:"statement,omitempty"`
	Fingerprint string `toml:"fingerprint" json:"fingerprint"`
	Reason      string `toml:"reason" json:"reason"`
	// Line is the line of the entry's [[finding]] header in the baseline file.
	Line int `toml:"-" json:"line,omitempty"`
}

// BaselineError is a problem in a baseline file, with the line it is on.
type BaselineError struct {
	File string
	Line int
	Msg  string
}

func (e *BaselineError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("baseline %s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("baseline %s: %s", e.File, e.Msg)
}

var fingerprintRE = lazyregexp.New(`^[0-9a-f]{16}$`)

// LoadBaseline reads and checks a baseline file.
func LoadBaseline(path string) (*Baseline, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read baseline: %w", err)
	}
	return ParseBaseline(path, data)
}

var headerRE = lazyregexp.New(`^\s*\[\[\s*finding\s*\]\]`)

// ParseBaseline decodes a baseline (strictly: unknown keys are errors) and checks every
// entry: a known rule, a file, a 16-hex fingerprint, and a reason that is not the
// placeholder --write-baseline writes.
func ParseBaseline(name string, data []byte) (*Baseline, error) {
	var b Baseline
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		var strict *toml.StrictMissingError
		if errors.As(err, &strict) && len(strict.Errors) > 0 {
			row, _ := strict.Errors[0].Position()
			return nil, &BaselineError{File: name, Line: row, Msg: fmt.Sprintf("unknown key %q", strings.Join(strict.Errors[0].Key(), "."))}
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, _ := de.Position()
			return nil, &BaselineError{File: name, Line: row, Msg: de.Error()}
		}
		return nil, &BaselineError{File: name, Msg: err.Error()}
	}
	b.Path = name
	// The decoder keeps no positions; the n-th [[finding]] header is the n-th entry.
	var lines []int
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if headerRE().Match(sc.Bytes()) {
			lines = append(lines, n)
		}
	}
	if b.Version != 0 && b.Version != 1 {
		return nil, &BaselineError{File: name, Msg: fmt.Sprintf("version %d is not supported (want 1)", b.Version)}
	}
	seen := map[string]int{}
	for i := range b.Findings {
		e := &b.Findings[i]
		if i < len(lines) {
			e.Line = lines[i]
		}
		bad := func(format string, args ...any) error {
			return &BaselineError{File: name, Line: e.Line, Msg: fmt.Sprintf("finding %d: ", i+1) + fmt.Sprintf(format, args...)}
		}
		if r, ok := LookupRule(e.Rule); !ok {
			return nil, bad("unknown rule %q", e.Rule)
		} else {
			e.Rule = r.ID
		}
		if e.File == "" {
			return nil, bad("file is empty")
		}
		if !fingerprintRE().MatchString(e.Fingerprint) {
			return nil, bad("fingerprint %q is not 16 hex digits (copy it from `mpspatch audit --json`)", e.Fingerprint)
		}
		reason := strings.TrimSpace(e.Reason)
		switch {
		case reason == "":
			return nil, bad("reason is empty; say why this finding is accepted")
		case strings.HasPrefix(strings.ToUpper(reason), "TODO"):
			return nil, bad("reason is %q; replace it with why this finding is accepted", e.Reason)
		}
		key := e.Rule + "\x00" + e.File + "\x00" + e.Fingerprint
		if prev, dup := seen[key]; dup {
			return nil, bad("duplicates finding %d", prev)
		}
		seen[key] = i + 1
	}
	return &b, nil
}

// Apply splits findings into those the baseline does not accept (new) and those it does,
// and lists entries that matched nothing (stale: the code changed or was fixed). A nil
// baseline accepts nothing.
func (b *Baseline) Apply(files int, findings []Finding) Result {
	r := Result{Files: files, New: []Finding{}, Accepted: []Finding{}, Stale: []Entry{}}
	if b == nil {
		r.New = append(r.New, findings...)
		return r
	}
	used := make([]bool, len(b.Findings))
	index := map[string]int{}
	for i, e := range b.Findings {
		index[e.Rule+"\x00"+e.File+"\x00"+e.Fingerprint] = i
	}
	for _, f := range findings {
		if i, ok := index[f.Rule+"\x00"+f.File+"\x00"+f.Fingerprint]; ok {
			used[i] = true
			r.Accepted = append(r.Accepted, f)
			continue
		}
		r.New = append(r.New, f)
	}
	for i, e := range b.Findings {
		if !used[i] {
			r.Stale = append(r.Stale, e)
		}
	}
	return r
}

// Reasons maps fingerprints to the reasons given for them.
func (b *Baseline) Reasons() map[string]string {
	m := map[string]string{}
	if b == nil {
		return m
	}
	for _, e := range b.Findings {
		m[e.Fingerprint] = e.Reason
	}
	return m
}

// WriteBaseline writes a baseline accepting findings, each with the TODOReason placeholder
// that the loader rejects until a person replaces it. Entries name the rule, file and
// function only: the statement (the audited project's code text) is left out, so that a
// baseline committed to this project carries no code from the audited tree; the
// fingerprint still identifies the statement.
func WriteBaseline(w io.Writer, findings []Finding) error {
	b := Baseline{Version: 1}
	for _, f := range findings {
		b.Findings = append(b.Findings, Entry{Rule: f.Rule, File: f.File, Function: f.Function,
			Fingerprint: f.Fingerprint, Reason: TODOReason})
	}
	if _, err := io.WriteString(w, "# mpspatch audit baseline: findings accepted on purpose.\n"+
		"# Every entry needs a reason; \""+TODOReason+"\" is rejected until you write one.\n"+
		"# rule, file and fingerprint identify a finding; function is for reading.\n\n"); err != nil {
		return err
	}
	enc := toml.NewEncoder(w)
	enc.SetIndentTables(false)
	return enc.Encode(b)
}
