package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mpspatch/mpspatch/internal/gitcli"
	"github.com/mpspatch/mpspatch/internal/gitserver"
)

// TestCloneOverHTTPS clones from a smart-HTTP server that wants credentials, with a
// submodule at a relative URL: the credentials work but show nowhere, a clone killed
// mid-fetch is resumed by running the command again, a finished clone is left alone,
// and a re-tagged release is refused.
func TestCloneOverHTTPS(t *testing.T) {
	isolateGit(t)
	root := t.TempDir()
	sub, err := gitserver.BuildRepo(filepath.Join(root, "sub.git"), []gitserver.Commit{{Files: map[string]string{"third.c": "int third;\n"}}})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := gitserver.BuildRepo(filepath.Join(root, "up.git"), []gitserver.Commit{
		{Files: map[string]string{
			"setup.py":    "# pinned\n",
			".gitmodules": "[submodule \"third_party/sub\"]\n\tpath = third_party/sub\n\turl = ../sub.git\n",
		}, Gitlinks: map[string]string{"third_party/sub": sub[0]}, AnnotatedTags: []string{"v2.9.1"}},
		{Files: map[string]string{"setup.py": "# later\n"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	const secret = "s3cret-t0ken"
	var mu sync.Mutex
	var interrupt func(*http.Request)
	srv, err := gitserver.Start(root, gitserver.Options{User: "ci", Password: secret, OnPack: func(hr *http.Request, r gitserver.Request) {
		mu.Lock()
		f := interrupt
		mu.Unlock()
		if f != nil && strings.HasPrefix(hr.URL.Path, "/up.git/") {
			f(hr)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	t.Setenv("GIT_SSL_CAINFO", srv.CAFile)
	url := strings.Replace(srv.URL, "https://", "https://ci:"+secret+"@", 1) + "/up.git"
	cfg := writeConfigTag(t, url, "v2.9.1", ids[0])
	dir := filepath.Join(t.TempDir(), "pytorch")

	noSecret := func(what, s string) {
		t.Helper()
		if strings.Contains(s, secret) {
			t.Errorf("%s shows the credentials:\n%s", what, s)
		}
	}

	t.Run("interrupted mid-fetch, then resumed", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		mu.Lock()
		interrupt = func(hr *http.Request) {
			cancel()              // as Ctrl-C, or a kill of mpspatch, mid-fetch
			<-hr.Context().Done() // the pack is never sent: git was killed
		}
		mu.Unlock()
		var out, errb bytes.Buffer
		code := Main(ctx, []string{"--config", cfg, "clone", "--dir", dir}, IOStreams{In: strings.NewReader(""), Out: &out, Err: &errb})
		mu.Lock()
		interrupt = nil
		mu.Unlock()
		if code != ExitInterrupted {
			t.Fatalf("interrupted clone: exit %d, want %d\n%s", code, ExitInterrupted, errb.String())
		}
		if !gitcli.CloneInterrupted(dir) {
			t.Fatal("the interrupted clone left no marker")
		}
		noSecret("stderr", errb.String())

		code, stdout, stderr := runMain(t, "--config", cfg, "--json", "clone", "--dir", dir)
		if code != ExitOK {
			t.Fatalf("resume: exit %d\n%s", code, stderr)
		}
		if !strings.Contains(stderr, "did not finish (interrupted); resuming it") {
			t.Errorf("resume did not say so:\n%s", stderr)
		}
		var rep cloneReport
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil || !rep.Resumed {
			t.Errorf("report %s (%v), want resumed", stdout, err)
		}
		if gitcli.CloneInterrupted(dir) {
			t.Error("the marker is still there after the clone finished")
		}
		if head := gitRun(t, dir, "rev-parse", "HEAD"); head != ids[0] {
			t.Errorf("HEAD %s, want %s", head, ids[0])
		}
		if data, _ := os.ReadFile(filepath.Join(dir, "third_party/sub/third.c")); string(data) != "int third;\n" {
			t.Errorf("submodule not checked out over HTTPS: %q", data)
		}
		noSecret("stdout", stdout)
		noSecret("stderr", stderr)
		for _, f := range []string{rep.Log, filepath.Join(dir, ".git", "config"), filepath.Join(dir, ".git", "modules", "third_party", "sub", "config")} {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			noSecret(f, string(data))
		}
		if !strings.Contains(stdout, `"url": "https://***@127.0.0.1`) {
			t.Errorf("report URL not redacted as expected:\n%s", stdout)
		}
	})

	t.Run("a finished clone is a no-op", func(t *testing.T) {
		srv.Reset()
		code, stdout, stderr := runMain(t, "--config", cfg, "clone", "--dir", dir)
		if code != ExitOK || !strings.Contains(stdout, "is already a finished clone of https://***@") {
			t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
		}
		for _, r := range srv.Requests() {
			if r.Command == "fetch" {
				t.Errorf("the no-op fetched: %+v", r)
			}
		}
	})

	t.Run("a moved tag is refused", func(t *testing.T) {
		if err := gitserver.MoveTag(filepath.Join(root, "up.git"), "v2.9.1", ids[1]); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := runMain(t, "--config", cfg, "clone", "--dir", filepath.Join(t.TempDir(), "x"))
		if code != ExitCheckFailed || !strings.Contains(stderr, "points at "+ids[1]+", but the config pins "+ids[0]) {
			t.Errorf("exit %d, want %d naming both commits\n%s", code, ExitCheckFailed, stderr)
		}
		noSecret("stderr", stderr)
	})
}
