package gitcli

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// gitFailure runs f and returns the *Error it must fail with.
func gitFailure(t *testing.T, err error) *Error {
	t.Helper()
	var ge *Error
	if !errors.As(err, &ge) {
		t.Fatalf("error = %v (%T), want *Error", err, err)
	}
	return ge
}

// Real git's failures, read back as what they are about: the kind, and a sentence that
// names the revision or remote and the fix, with no argv.
func TestFailureKindsRealGit(t *testing.T) {
	g := newGit(t)
	g.LogPath = "" // as the author commands run git: no log, so Output is kept
	ctx := context.Background()
	dir := newRepo(t, g, map[string]string{"a": "a\n"})
	git(t, g, dir, "tag", "v1")

	t.Run("unknown tag in rev-parse", func(t *testing.T) {
		_, err := g.RevParseCommits(ctx, dir, "HEAD", "v1", "v9.9.9")
		ge := gitFailure(t, err)
		if ge.Kind() != FailUnknownRevision {
			t.Fatalf("kind %v, want unknown revision (stderr %q)", ge.Kind(), ge.Stderr)
		}
		want := "unknown revision v9.9.9 in " + dir + "; fetch it with `git -C " + dir + " fetch origin tag v9.9.9`"
		if have := ge.Summary(); !strings.HasPrefix(have, want) {
			t.Errorf("summary %q\nwant prefix %q", have, want)
		}
		if !strings.Contains(ge.Output, "v9.9.9") {
			t.Errorf("Output %q does not keep git's message", ge.Output)
		}
	})
	t.Run("unknown end of a range", func(t *testing.T) {
		for _, rng := range []string{"nope..HEAD", "v1..nope", "v1...nope"} {
			_, err := g.RevListParents(ctx, dir, rng)
			ge := gitFailure(t, err)
			if have := ge.Summary(); !strings.HasPrefix(have, "unknown revision nope in ") {
				t.Errorf("%s: summary %q, want the missing end named", rng, have)
			}
		}
	})
	t.Run("missing commit upstream", func(t *testing.T) {
		missing := strings.Repeat("ab", 20)
		err := g.Clone(ctx, "file://"+dir, filepath.Join(t.TempDir(), "x"), missing, CloneOptions{})
		ge := gitFailure(t, err)
		if ge.Kind() != FailMissingRemoteRef || !strings.Contains(ge.Summary(), "has no commit "+missing) {
			t.Errorf("kind %v, summary %q (stderr %q)", ge.Kind(), ge.Summary(), ge.Stderr)
		}
	})
	t.Run("not a repository", func(t *testing.T) {
		_, err := g.LsRemote(ctx, filepath.Join(t.TempDir(), "none"))
		ge := gitFailure(t, err)
		if ge.Kind() != FailNoRepository {
			t.Errorf("kind %v, want no repository (stderr %q)", ge.Kind(), ge.Stderr)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		// A loopback port that was just free: nothing listens, the connection is refused.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		_, err = g.LsRemote(ctx, "http://"+addr+"/x.git")
		ge := gitFailure(t, err)
		if ge.Kind() != FailUnreachable {
			t.Fatalf("kind %v, want unreachable (stderr %q)", ge.Kind(), ge.Stderr)
		}
		sum := ge.Summary()
		if !strings.HasPrefix(sum, "cannot reach http://"+addr+"/x.git (") || strings.Contains(sum, "ls-remote") {
			t.Errorf("summary %q", sum)
		}
	})
}

func TestClassify(t *testing.T) {
	tests := []struct {
		stderr  string
		kind    FailureKind
		subject string
	}{
		{"fatal: ambiguous argument 'v9.9.9^{commit}': unknown revision or path not in the working tree.; Use '--' to separate", FailUnknownRevision, "v9.9.9"},
		{"fatal: bad revision 'v2~3'", FailUnknownRevision, "v2"},
		{"fatal: invalid reference: topic", FailUnknownRevision, "topic"},
		{"fatal: couldn't find remote ref v9.9.9", FailMissingRemoteRef, "v9.9.9"},
		{"fatal: remote error: upload-pack: not our ref abababababababababababababababababababab", FailMissingRemoteRef, "abababababababababababababababababababab"},
		{"remote: Not Found; fatal: repository 'https://h/x/' not found", FailNoRepository, "https://h/x"},
		{"fatal: unable to access 'https://h/x/': The requested URL returned error: 404", FailNoRepository, "https://h/x"},
		{"fatal: unable to access 'https://h/x/': Could not resolve host: h", FailUnreachable, "https://h/x"},
		{"ssh: connect to host h port 22: Connection refused; fatal: Could not read from remote repository.", FailUnreachable, ""},
		{"error: pathspec 'x' did not match any file(s) known to git", FailOther, ""},
		{"", FailOther, ""},
	}
	for _, tt := range tests {
		kind, subject := classify(tt.stderr)
		if kind != tt.kind || subject != tt.subject {
			t.Errorf("classify(%q) = %v %q, want %v %q", tt.stderr, kind, subject, tt.kind, tt.subject)
		}
	}
}

// A failed clone's message held every progress line git redrew, joined into one line of
// hundreds of characters; the tail keeps git's reasons only.
func TestTailLeavesOutProgress(t *testing.T) {
	tb := &tailBuffer{max: 8}
	tb.Write([]byte("Cloning into 'x'...\nremote: Enumerating objects: 12, done.\nremote: Counting objects:  50% (6/12)\rremote: Counting objects: 100% (12/12), done.\n" +
		"Receiving objects:  10% (1/12)\rReceiving objects:  45% (6/12), 1.20 MiB | 3.00 MiB/s\rReceiving objects: 100% (12/12), done.\nremote: Total 12 (delta 0), reused 0\n" +
		"Resolving deltas: 100% (3/3), done.\nfatal: early EOF\n"))
	if have, want := tb.String(), "Cloning into 'x'...; fatal: early EOF"; have != want {
		t.Errorf("tail %q, want %q", have, want)
	}
}

func FuzzClassify(f *testing.F) {
	f.Add("fatal: ambiguous argument 'a..b': unknown revision")
	f.Add("fatal: unable to access 'https://u:p@h/x/': Could not resolve host: h")
	f.Fuzz(func(t *testing.T, stderr string) {
		e := &Error{Op: "x", Args: []string{"ls-remote", "--", "https://u:secret@h/x"}, Stderr: stderr}
		kind, _ := classify(stderr)
		if sum := e.Summary(); (sum == "") != (kind == FailOther) {
			t.Fatalf("kind %v but summary %q", kind, sum)
		}
		if strings.Contains(e.Summary(), "secret") {
			t.Fatalf("summary shows a credential: %q", e.Summary())
		}
	})
}
