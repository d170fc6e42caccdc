package metalcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const goodEntry = `
[[finding]]
rule = "MPS002"
file = "a.mm"
fingerprint = "0123456789abcdef"
reason = "guarded by the caller's lock"
`

func TestParseBaselineErrors(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		wantLine int
		wantMsg  string
	}{
		{"todo reason", "version = 1\n" + goodEntry + "\n[[finding]]\nrule = \"MPS001\"\nfile = \"b.mm\"\nfingerprint = \"fedcba9876543210\"\nreason = \"TODO: explain\"\n",
			9, `finding 2: reason is "TODO: explain"`},
		{"empty reason", "\n[[finding]]\nrule = \"MPS001\"\nfile = \"b.mm\"\nfingerprint = \"fedcba9876543210\"\n",
			2, "finding 1: reason is empty"},
		{"unknown rule", "[[finding]]\nrule = \"MPS999\"\nfile = \"b.mm\"\nfingerprint = \"fedcba9876543210\"\nreason = \"x\"\n",
			1, `unknown rule "MPS999"`},
		{"short fingerprint", "[[finding]]\nrule = \"MPS001\"\nfile = \"b.mm\"\nfingerprint = \"abc\"\nreason = \"x\"\n",
			1, "is not 16 hex digits"},
		{"no file", "[[finding]]\nrule = \"MPS001\"\nfingerprint = \"fedcba9876543210\"\nreason = \"x\"\n",
			1, "file is empty"},
		{"unknown key", "[[finding]]\nrule = \"MPS001\"\nline = 3\n",
			3, `unknown key "finding.line"`},
		{"syntax error", "version = \n", 1, ""},
		{"duplicate", goodEntry + goodEntry, 8, "duplicates finding 1"},
		{"bad version", "version = 7\n", 0, "version 7 is not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseBaseline("base.toml", []byte(tt.src))
			var be *BaselineError
			if !errors.As(err, &be) {
				t.Fatalf("have %v, want a *BaselineError", err)
			}
			if be.File != "base.toml" || be.Line != tt.wantLine || !strings.Contains(be.Msg, tt.wantMsg) {
				t.Errorf("have %q (line %d), want line %d and %q", err, be.Line, tt.wantLine, tt.wantMsg)
			}
		})
	}
}

func TestParseBaselineNamesRule(t *testing.T) {
	b, err := ParseBaseline("b.toml", []byte(strings.Replace(goodEntry, "MPS002", "unguarded-container", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if have := b.Findings[0].Rule; have != "MPS002" {
		t.Errorf("rule by name loaded as %q, want MPS002", have)
	}
}

// TestWriteBaselineRoundTrip: a written baseline is rejected until its reasons are filled
// in, and then accepts exactly the findings it was written from.
func TestWriteBaselineRoundTrip(t *testing.T) {
	rep := auditFixtures(t, 0)
	var buf bytes.Buffer
	if err := WriteBaseline(&buf, rep.Findings); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "statement") {
		t.Errorf("the written baseline carries statements (code text of the audited tree):\n%s", buf.String())
	}
	if _, err := ParseBaseline("w.toml", buf.Bytes()); err == nil || !strings.Contains(err.Error(), "w.toml:") || !strings.Contains(err.Error(), TODOReason) {
		t.Fatalf("have %v, want the TODO reason rejected with file and line", err)
	}
	filled := bytes.ReplaceAll(buf.Bytes(), []byte(TODOReason), []byte("accepted for the test"))
	b, err := ParseBaseline("w.toml", filled)
	if err != nil {
		t.Fatal(err)
	}
	res := b.Apply(rep.Files, rep.Findings)
	if len(res.New) != 0 || len(res.Accepted) != len(rep.Findings) || len(res.Stale) != 0 {
		t.Errorf("have %d new, %d accepted, %d stale; want 0, %d, 0", len(res.New), len(res.Accepted), len(res.Stale), len(rep.Findings))
	}
}

func TestApplyNilBaseline(t *testing.T) {
	var b *Baseline
	fs := []Finding{{Rule: "MPS001", File: "a", Fingerprint: "0123456789abcdef"}}
	res := b.Apply(1, fs)
	if len(res.New) != 1 || len(res.Accepted) != 0 || res.Accepted == nil {
		t.Errorf("nil baseline: have %+v", res)
	}
	if len(b.Reasons()) != 0 {
		t.Errorf("nil baseline has reasons")
	}
	// Scripts read "stale" without a special case: it is there, empty, with no baseline.
	var buf bytes.Buffer
	if err := WriteJSON(&buf, res); err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if string(doc["stale"]) != "[]" {
		t.Errorf("stale is %q in %s, want []", doc["stale"], buf.String())
	}
}

// FuzzParseBaseline: any input either fails with a *BaselineError or yields entries that
// all carry a known rule, a file, a well-formed fingerprint and a real reason.
func FuzzParseBaseline(f *testing.F) {
	f.Add([]byte("version = 1\n" + goodEntry))
	f.Add([]byte(goodEntry + goodEntry))
	f.Add([]byte("[[finding]]\nrule = \"MPS001\"\nreason = \"TODO: explain\"\n"))
	f.Add([]byte("version = 2"))
	f.Add([]byte("[[finding]\n"))
	f.Add([]byte("  [[ finding ]]\nrule='lazy-singleton'\nfile='x'\nfingerprint='0000000000000000'\nreason='ok'\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ParseBaseline("fuzz.toml", data)
		if err != nil {
			var be *BaselineError
			if !errors.As(err, &be) {
				t.Fatalf("error %v is not a *BaselineError", err)
			}
			return
		}
		for _, e := range b.Findings {
			if _, ok := LookupRule(e.Rule); !ok || e.File == "" || !fingerprintRE().MatchString(e.Fingerprint) ||
				strings.TrimSpace(e.Reason) == "" || strings.HasPrefix(strings.ToUpper(strings.TrimSpace(e.Reason)), "TODO") {
				t.Fatalf("accepted a bad entry %+v", e)
			}
		}
	})
}
