package gitcli

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mpspatch/mpspatch/internal/gitserver"
)

// TestLsRemoteAsksOnlyForWhatItNeeds serves a repository that, like a big forge, holds
// far more refs/pull/* refs than tags, and checks that the tag and branch look-ups send
// protocol v2 ref prefixes (so the server lists only tags, or tags and branches) and that
// the answer costs a small fraction of a full listing. Byte counts, not times.
func TestLsRemoteAsksOnlyForWhatItNeeds(t *testing.T) {
	if testing.Short() {
		t.Skip("starts git http-backend")
	}
	root := t.TempDir()
	repo := filepath.Join(root, "up.git")
	commits, err := gitserver.BuildRepo(repo, []gitserver.Commit{
		{Files: map[string]string{"a.txt": "a\n"}, Tags: []string{"v2.9.0"}},
		{Files: map[string]string{"a.txt": "b\n"}, AnnotatedTags: []string{"v2.9.1"}},
		{Files: map[string]string{"a.txt": "c\n"}, Tags: []string{"v2.10.0"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var updates strings.Builder
	const pulls = 3000
	for i := 1; i <= pulls; i++ {
		fmt.Fprintf(&updates, "create refs/pull/%d/head %s\n", i, commits[i%len(commits)])
	}
	cmd := exec.Command("git", "--git-dir", repo, "update-ref", "--stdin")
	cmd.Stdin = strings.NewReader(updates.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("update-ref: %v: %s", err, out)
	}
	srv, err := gitserver.Start(root, gitserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	// A hostile user config: protocol v0 would make every ls-remote list every ref.
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".gitconfig"), "[protocol]\n\tversion = 0\n")
	env := append(DeterministicEnv(home), srv.Env()...)
	for i, kv := range env {
		if strings.HasPrefix(kv, "GIT_CONFIG_GLOBAL=") {
			env[i] = "GIT_CONFIG_GLOBAL=" + filepath.Join(home, ".gitconfig")
		}
	}
	g := &Git{Env: env}
	url := srv.URL + "/up.git"
	ctx := context.Background()

	lsRefs := func(patterns ...string) ([]RemoteRef, gitserver.Request) {
		t.Helper()
		srv.Reset()
		refs, err := g.LsRemote(ctx, url, patterns...)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range srv.Requests() {
			if r.Command == "ls-refs" {
				return refs, r
			}
		}
		t.Fatalf("ls-remote %v sent no protocol v2 ls-refs request: %+v", patterns, srv.Requests())
		return nil, gitserver.Request{}
	}

	_, all := lsRefs()
	if len(all.RefPrefixes) != 0 {
		t.Errorf("a listing of every ref sent prefixes %v", all.RefPrefixes)
	}
	tests := []struct {
		name         string
		patterns     []string
		wantPrefixes []string
		wantNames    []string
	}{
		{"release tags", []string{"refs/tags/v*"}, []string{"refs/tags/"},
			[]string{"refs/tags/v2.10.0", "refs/tags/v2.9.0", "refs/tags/v2.9.1", "refs/tags/v2.9.1^{}"}},
		{"one tag and its peel", []string{"refs/tags/v2.9.1", "refs/tags/v2.9.1^{}"}, []string{"refs/tags/"},
			[]string{"refs/tags/v2.9.1", "refs/tags/v2.9.1^{}"}},
		{"a tag or a branch", []string{"refs/tags/main", "refs/tags/main^{}", "refs/heads/main"},
			[]string{"refs/heads/", "refs/tags/"}, []string{"refs/heads/main"}},
	}
	for _, tt := range tests {
		refs, req := lsRefs(tt.patterns...)
		var names []string
		for _, r := range refs {
			names = append(names, r.Name)
		}
		slices.Sort(names)
		prefixes := slices.Sorted(slices.Values(req.RefPrefixes))
		if !slices.Equal(prefixes, tt.wantPrefixes) {
			t.Errorf("%s: ref prefixes %v, want %v", tt.name, prefixes, tt.wantPrefixes)
		}
		if !slices.Equal(names, tt.wantNames) {
			t.Errorf("%s: refs %v, want %v", tt.name, names, tt.wantNames)
		}
		if req.Bytes*20 > all.Bytes {
			t.Errorf("%s: the listing cost %d bytes, a full listing %d: want under 1/20", tt.name, req.Bytes, all.Bytes)
		}
		t.Logf("%s: %d bytes (full listing of %d pull refs: %d bytes)", tt.name, req.Bytes, pulls, all.Bytes)
	}

	// A pattern outside refs/tags/ and refs/heads/ must still be found: no prefix then.
	refs, req := lsRefs("refs/pull/7/head")
	if len(req.RefPrefixes) != 0 || len(refs) != 1 || refs[0].Name != "refs/pull/7/head" {
		t.Errorf("refs/pull/7/head: prefixes %v, refs %v", req.RefPrefixes, refs)
	}
}

func TestLsRemoteScope(t *testing.T) {
	tests := []struct {
		patterns []string
		want     []string
	}{
		{nil, nil},
		{[]string{"refs/tags/v*"}, []string{"--tags"}},
		{[]string{"refs/heads/main"}, []string{"--heads"}},
		{[]string{"refs/tags/x", "refs/heads/x"}, []string{"--tags", "--heads"}},
		{[]string{"refs/tags/x", "refs/pull/1/head"}, nil},
		{[]string{"v2.9.1"}, nil},
	}
	for _, tt := range tests {
		if have := lsRemoteScope(tt.patterns); !slices.Equal(have, tt.want) {
			t.Errorf("lsRemoteScope(%q) = %q, want %q", tt.patterns, have, tt.want)
		}
	}
}
