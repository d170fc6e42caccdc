package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// oneJSONDocument decodes stdout as exactly one JSON object and fails otherwise.
func oneJSONDocument(t *testing.T, stdout string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(stdout))
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("stdout is not a JSON object: %v\n%s", err, stdout)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		t.Fatalf("stdout holds more than one JSON document:\n%s", stdout)
	}
	return doc
}

// errorMember checks the "error" member of a --json failure against the exit code.
func errorMember(t *testing.T, doc map[string]any, code int) map[string]any {
	t.Helper()
	e, ok := doc["error"].(map[string]any)
	if !ok {
		t.Fatalf("no error object in %v", doc)
	}
	if e["code"] != float64(code) || e["name"] != codeName(code) {
		t.Errorf("error code/name: have %v/%v, want %d/%s", e["code"], e["name"], code, codeName(code))
	}
	if msg, _ := e["message"].(string); msg == "" {
		t.Errorf("error without a message: %v", e)
	}
	if _, ok := e["details"].(map[string]any); !ok {
		t.Errorf("details is not an object: %v", e)
	}
	return e
}

// TestEveryCommandFailsWithAJSONDocument walks the whole command tree, so a command added
// later is covered without touching this test: a bad flag under --json still puts one
// error document on stdout, with the usage exit code.
func TestEveryCommandFailsWithAJSONDocument(t *testing.T) {
	d := &deps{io: IOStreams{Out: io.Discard, Err: io.Discard}, global: &globalOptions{}}
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		for _, sub := range c.Commands() {
			if sub.Name() == "help" {
				continue
			}
			p := append(append([]string{}, path...), sub.Name())
			paths = append(paths, p)
			walk(sub, p)
		}
	}
	walk(newRootCmd(d, ""), nil)
	if len(paths) < 10 {
		t.Fatalf("found only %d commands", len(paths))
	}
	for _, p := range paths {
		t.Run(strings.Join(p, "_"), func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runMain(t, append(p, "--no-such-flag", "--json")...)
			if code != ExitUsage {
				t.Fatalf("exit %d, want %d\nstderr: %s", code, ExitUsage, stderr)
			}
			e := errorMember(t, oneJSONDocument(t, stdout), ExitUsage)
			if !strings.Contains(e["message"].(string), "unknown flag: --no-such-flag") {
				t.Errorf("message: %v", e["message"])
			}
		})
	}
}

func TestJSONErrorDocuments(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name    string
		args    []string
		code    int
		message string
		member  string // a member of the partial result that must survive next to "error"
	}{
		{name: "missing tree", args: []string{"status", "--tree", dir + "/none"}, code: ExitUsage, message: "does not exist"},
		{name: "bad flag value", args: []string{"verify", "--device", "tpu"}, code: ExitUsage, message: "--device"},
		{name: "probe off macOS", args: []string{"probe"}, code: ExitUnsupported, message: "needs macOS"},
		{name: "lint failure keeps the report", args: []string{"check", "--patches", strayPatchDir(t)}, code: ExitCheckFailed,
			message: "checks failed", member: "problems"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runMain(t, append(tt.args, "--json")...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, stdout, stderr)
			}
			doc := oneJSONDocument(t, stdout)
			e := errorMember(t, doc, tt.code)
			if !strings.Contains(e["message"].(string), tt.message) {
				t.Errorf("message %q lacks %q", e["message"], tt.message)
			}
			if tt.member != "" {
				if _, ok := doc[tt.member]; !ok {
					t.Errorf("partial result lost %q: %v", tt.member, doc)
				}
			}
		})
	}
}

// strayPatchDir is a series directory with a patch and no order file: a lint failure.
func strayPatchDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "0001-stray.patch"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestResultSinkFinish(t *testing.T) {
	t.Parallel()
	type report struct {
		Zed   string `json:"zed"`
		Alpha string `json:"alpha"`
		Error string `json:"error,omitempty"`
	}
	fail := func() *errorBody { return newErrorBody(&silentError{code: ExitConflict}, ExitConflict) }
	tests := []struct {
		name  string
		setup func(s *resultSink, p *printer)
		err   *errorBody
		want  string
	}{
		{name: "success writes the result", setup: func(s *resultSink, p *printer) { _ = p.Result(report{Zed: "z"}, nil) },
			want: "{\n  \"zed\": \"z\",\n  \"alpha\": \"\"\n}\n"},
		{name: "success without a result writes nothing", setup: func(*resultSink, *printer) {}, want: ""},
		{name: "failure alone", setup: func(*resultSink, *printer) {}, err: newErrorBody(fmt.Errorf("boom"), ExitCheckFailed),
			want: `{"error":{"code":1,"name":"checks_failed","message":"boom","details":{}}}`},
		{name: "failure keeps the partial result in order, its own reason becomes the message",
			setup: func(s *resultSink, p *printer) {
				_ = p.Result(report{Zed: "z", Alpha: "a", Error: "hunk 2 moved"}, nil)
			},
			err:  fail(),
			want: `{"zed":"z","alpha":"a","error":{"code":3,"name":"conflict","message":"hunk 2 moved","details":{}}}`},
		{name: "a stream that failed before its summary ends with one",
			setup: func(s *resultSink, p *printer) { p.Stream(); _ = p.JSONLine(map[string]string{"type": "run"}) },
			err:   newErrorBody(fmt.Errorf("no torch"), ExitUnsupported),
			want:  `{"type":"run"}` + "\n" + `{"error":{"code":5,"name":"unsupported","message":"no torch","details":{}},"status":"error","type":"summary"}`},
		{name: "a stream's summary carries the error",
			setup: func(s *resultSink, p *printer) {
				_ = p.StreamSummary(map[string]string{"type": "summary", "status": "fail"})
			},
			err:  newErrorBody(&silentError{code: ExitCheckFailed}, ExitCheckFailed),
			want: `{"status":"fail","type":"summary","error":{"code":1,"name":"checks_failed","message":"checks failed","details":{}}}`},
		{name: "stray output gets no second document",
			setup: func(s *resultSink, p *printer) { io.WriteString(p.out, "{}\n") },
			err:   fail(), want: "{}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out strings.Builder
			s := &resultSink{}
			p := &printer{out: s.wrap(&out), err: io.Discard, json: true, sink: s}
			tt.setup(s, p)
			if err := s.finish(&out, tt.err); err != nil {
				t.Fatal(err)
			}
			have := out.String()
			if compact(t, have) != compact(t, tt.want) {
				t.Errorf("have:\n%s\nwant:\n%s", have, tt.want)
			}
		})
	}
}

// compact removes JSON indentation line by line, so the tests compare content and order.
func compact(t *testing.T, s string) string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	var parts []string
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("not JSON: %v\n%s", err, s)
		}
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, b.String())
	}
	return strings.Join(parts, "\n")
}

func TestInterruptedMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want string
	}{
		{context.Canceled, "interrupted"},
		{fmt.Errorf("status: %w", context.Canceled), "interrupted: status"},
		{fmt.Errorf("build interrupted (log: b.log): %w", context.Canceled), "build interrupted (log: b.log)"},
	}
	for _, tt := range tests {
		if have := errorMessage(tt.err, ExitInterrupted); have != tt.want {
			t.Errorf("%v: have %q, want %q", tt.err, have, tt.want)
		}
	}
	// Through Main: a cancelled context is exit 130 and the word "interrupted".
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb strings.Builder
	code := Main(ctx, []string{"status", "--json", "--tree", t.TempDir()}, IOStreams{In: strings.NewReader(""), Out: &out, Err: &errb})
	if code != ExitInterrupted || errb.String() != "mpspatch: interrupted\n" {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
	errorMember(t, oneJSONDocument(t, out.String()), ExitInterrupted)
}
