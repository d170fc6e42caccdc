package verify

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/jstemmer/go-junit-report/v2/junit"

	"github.com/mpspatch/mpspatch/internal/atomicfile"
)

// Record is one line of results.jsonl and of `verify --json`: a type tag and the fields of
// the thing it carries, flattened. Types: run, env, result, scaling, boundary, notice,
// summary.
type Record struct {
	Type    string
	Payload any // a pointer to RunInfo, Env, Result, ScalingRow, BoundaryRow, noticeRow or summaryRow
}

// noticeRow is a runner decision worth a line in the log.
type noticeRow struct {
	Target  string `json:"target"`
	Message string `json:"message"`
}

// summaryRow closes a run: the verdict per test and target, and the overall status.
type summaryRow struct {
	Status string         `json:"status"` // pass, fail, interrupted, empty
	Rule   string         `json:"rule"`
	Counts map[string]int `json:"counts"` // patched verdicts by outcome
	Tests  []Row          `json:"tests"`
}

// RunRecord wraps the run's settings.
func RunRecord(i RunInfo) Record { return Record{"run", &i} }

// EnvRecord wraps an environment.
func EnvRecord(e Env) Record { return Record{"env", &e} }

// ResultRecord wraps a result.
func ResultRecord(r Result) Record { return Record{"result", &r} }

// ScalingRecord wraps a scaling row.
func ScalingRecord(s ScalingRow) Record { return Record{"scaling", &s} }

// BoundaryRecord wraps a thread-boundary row.
func BoundaryRecord(b BoundaryRow) Record { return Record{"boundary", &b} }

// NoticeRecord wraps a notice.
func NoticeRecord(target, msg string) Record {
	return Record{"notice", &noticeRow{Target: target, Message: msg}}
}

// SummaryRecord wraps the closing summary of r.
func SummaryRecord(r *Report) Record {
	c := map[string]int{}
	for o, n := range r.Counts(TargetPatched) {
		c[string(o)] = n
	}
	return Record{"summary", &summaryRow{Status: r.Status(), Rule: VerdictRule, Counts: c, Tests: r.Rows()}}
}

// MarshalJSON writes the type tag first, then the payload's fields, on one level.
func (rec Record) MarshalJSON() ([]byte, error) {
	head, _ := json.Marshal(rec.Type)
	if rec.Payload == nil {
		return []byte(`{"type":` + string(head) + `}`), nil
	}
	b, err := json.Marshal(rec.Payload)
	if err != nil {
		return nil, err
	}
	if len(b) < 2 || b[0] != '{' {
		return nil, fmt.Errorf("record %s: payload is not an object", rec.Type)
	}
	if string(b) == "{}" {
		return []byte(`{"type":` + string(head) + `}`), nil
	}
	return []byte(`{"type":` + string(head) + "," + string(b[1:])), nil
}

// writeRecord writes rec as one line of JSON.
func writeRecord(w io.Writer, rec Record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// writeJSONL writes the whole report as JSON lines: run, envs, results, scaling rows,
// notices, summary. The live writer (dirWriter) produces the same lines in arrival order.
func writeJSONL(w io.Writer, r *Report) error {
	bw := bufio.NewWriter(w)
	recs := []Record{RunRecord(r.Info)}
	for _, e := range r.Envs {
		recs = append(recs, EnvRecord(e))
	}
	for _, res := range r.Results {
		recs = append(recs, ResultRecord(res))
	}
	for _, s := range r.ScalingRows {
		recs = append(recs, ScalingRecord(s))
	}
	for _, b := range r.Boundaries {
		recs = append(recs, BoundaryRecord(b))
	}
	for _, n := range r.Notices {
		t, m, _ := strings.Cut(n, ": ")
		recs = append(recs, NoticeRecord(t, m))
	}
	recs = append(recs, SummaryRecord(r))
	for _, rec := range recs {
		if err := writeRecord(bw, rec); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// JUnit builds the JUnit XML document: one testsuite per target and file, one testcase per
// test and repetition. Crashes and timeouts are <error> elements whose type names the death
// and the signatures, so CI dashboards show them apart from assertion failures.
func junitSuites(r *Report) junit.Testsuites {
	suites := junit.Testsuites{Name: "mpspatch verify"}
	type key struct{ target, file string }
	var order []key
	byKey := map[key]*junit.Testsuite{}
	var total float64
	for _, res := range r.Results {
		k := key{res.Target, res.File}
		ts, ok := byKey[k]
		if !ok {
			ts = &junit.Testsuite{Name: res.Target + "/" + res.File, Package: res.Target, File: res.File}
			if e, ok := r.EnvOf(res.Target); ok {
				ts.AddProperty("torch", e.Torch)
				ts.AddProperty("torch_git", e.TorchGit)
				ts.AddProperty("torch_path", e.TorchPath)
				ts.AddProperty("device", e.Device)
				ts.AddProperty("python", e.Python)
			}
			byKey[k] = ts
			order = append(order, k)
		}
		name := res.ID
		if _, after, ok := strings.Cut(res.ID, "::"); ok {
			name = after
		}
		if r.Info.Repeat > 1 {
			name = fmt.Sprintf("%s #%d", name, res.Repeat)
		}
		tc := junit.Testcase{
			Name:      name,
			Classname: res.Target + "." + strings.TrimSuffix(res.File, ".py"),
			Time:      fmt.Sprintf("%.3f", res.Duration),
		}
		detail := res.Message
		if res.Log != "" {
			detail += "\nlog: " + res.Log
		}
		typ := string(res.Outcome)
		if res.Death != "" {
			typ += " " + res.Death
		}
		if len(res.Signatures) > 0 {
			typ += " [" + strings.Join(res.Signatures, ",") + "]"
		}
		switch res.Outcome {
		case Fail:
			tc.Failure = &junit.Result{Message: firstLine(res.Message), Type: typ, Data: detail}
		case Error, Crash, Timeout:
			tc.Error = &junit.Result{Message: firstLine(res.Message), Type: typ, Data: detail}
		case Skip:
			tc.Skipped = &junit.Result{Message: firstLine(res.Message)}
		}
		ts.AddTestcase(tc)
		t := parseSeconds(ts.Time) + res.Duration
		ts.Time = fmt.Sprintf("%.3f", t)
		total += res.Duration
	}
	for i, k := range order {
		ts := byKey[k]
		ts.ID = i
		suites.AddSuite(*ts)
	}
	suites.Time = fmt.Sprintf("%.3f", total)
	return suites
}

func parseSeconds(s string) float64 {
	var f float64
	fmt.Sscanf(s, "%g", &f)
	return f
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// writeJUnit writes the JUnit XML of r.
func writeJUnit(w io.Writer, r *Report) error {
	s := junitSuites(r)
	if _, err := io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"); err != nil {
		return err
	}
	return s.WriteXML(w)
}

// dirWriter writes the report directory as results arrive: results.jsonl grows a line per
// event, junit.xml and report.html are rewritten (atomically) after each result, so a run
// stopped at any point leaves valid reports of what finished.
type dirWriter struct {
	Dir    string
	report *Report
	jsonl  *os.File
	err    error
}

// Report file names inside the report directory.
const (
	ResultsFile = "results.jsonl"
	JUnitFile   = "junit.xml"
	HTMLFile    = "report.html"
)

// newDirWriter creates dir and starts results.jsonl with the run record.
func newDirWriter(dir string, info RunInfo) (*dirWriter, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create report dir: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, ResultsFile))
	if err != nil {
		return nil, fmt.Errorf("create report: %w", err)
	}
	w := &dirWriter{Dir: dir, report: &Report{Info: info}, jsonl: f}
	w.line(RunRecord(info))
	w.render()
	return w, nil
}

// Report is the report collected so far.
func (w *dirWriter) Report() *Report { return w.report }

// Err is the first write error, if any; the run goes on, the caller reports it at the end.
func (w *dirWriter) Err() error { return w.err }

func (w *dirWriter) line(rec Record) {
	if err := writeRecord(w.jsonl, rec); err != nil && w.err == nil {
		w.err = fmt.Errorf("write %s: %w", filepath.Join(w.Dir, ResultsFile), err)
	}
}

// Env implements events.
func (w *dirWriter) Env(e Env) {
	w.report.Env(e)
	w.line(EnvRecord(e))
	w.render()
}

// Started implements events.
func (w *dirWriter) Started(string, string) {}

// Result implements events.
func (w *dirWriter) Result(res Result) {
	w.report.Result(res)
	w.line(ResultRecord(res))
	w.render()
}

// Scaling implements events; the HTML is redrawn when the results next change or at Close.
func (w *dirWriter) Scaling(s ScalingRow) {
	w.report.Scaling(s)
	w.line(ScalingRecord(s))
}

// Boundary implements events.
func (w *dirWriter) Boundary(b BoundaryRow) {
	w.report.Boundary(b)
	w.line(BoundaryRecord(b))
}

// Notice implements events.
func (w *dirWriter) Notice(target, msg string) {
	w.report.Notice(target, msg)
	w.line(NoticeRecord(target, msg))
}

// Close writes the summary line and the final junit.xml and report.html. interrupted marks
// a run stopped before the end.
func (w *dirWriter) Close(interrupted bool) error {
	w.report.Interrupted = interrupted
	w.line(SummaryRecord(w.report))
	if err := w.jsonl.Close(); err != nil && w.err == nil {
		w.err = err
	}
	w.render()
	return w.err
}

func (w *dirWriter) render() {
	for _, f := range []struct {
		name  string
		write func(io.Writer, *Report) error
	}{{JUnitFile, writeJUnit}, {HTMLFile, writeHTML}} {
		if err := atomicfile.Write(filepath.Join(w.Dir, f.name), func(out io.Writer) error { return f.write(out, w.report) }, atomicfile.Options{}); err != nil && w.err == nil {
			w.err = err
		}
	}
}

// sortedKeys returns the keys of m, sorted.
func sortedKeys[V any](m map[string]V) []string {
	k := make([]string, 0, len(m))
	for s := range m {
		k = append(k, s)
	}
	sort.Strings(k)
	return k
}

// readReport rebuilds a report from results.jsonl (or the output of `verify --json`), so
// that the HTML and JUnit reports of an archived run can be drawn again by a newer mpspatch.
// Lines of unknown type are skipped; a line that is not JSON is an error naming its number.
func readReport(r io.Reader) (*Report, error) {
	rep := &Report{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var head struct {
			Type    string `json:"type"`
			Status  string `json:"status"`
			Target  string `json:"target"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(line, &head); err != nil {
			return nil, fmt.Errorf("results line %d: %w", n, err)
		}
		var err error
		switch head.Type {
		case "run":
			err = json.Unmarshal(line, &rep.Info)
		case "env":
			var e Env
			if err = json.Unmarshal(line, &e); err == nil {
				rep.Env(e)
			}
		case "result":
			var res Result
			if err = json.Unmarshal(line, &res); err == nil {
				rep.Result(res)
			}
		case "scaling":
			var s ScalingRow
			if err = json.Unmarshal(line, &s); err == nil {
				rep.Scaling(s)
			}
		case "boundary":
			var b BoundaryRow
			if err = json.Unmarshal(line, &b); err == nil {
				rep.Boundary(b)
			}
		case "notice":
			rep.Notice(head.Target, head.Message)
		case "summary":
			rep.Interrupted = head.Status == "interrupted"
		}
		if err != nil {
			return nil, fmt.Errorf("results line %d (%s): %w", n, head.Type, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	return rep, nil
}

// WriteReports writes junit.xml and report.html of rep into dir.
func WriteReports(dir string, rep *Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create report dir: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(dir, JUnitFile), func(w io.Writer) error { return writeJUnit(w, rep) }, atomicfile.Options{}); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, HTMLFile), func(w io.Writer) error { return writeHTML(w, rep) }, atomicfile.Options{})
}
