package upstream

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mpspatch/mpspatch/internal/gitcli"
	"github.com/mpspatch/mpspatch/internal/gitserver"
)

func (fx *fixture) cache(t *testing.T) *Cache {
	return &Cache{Dir: t.TempDir(), Git: &gitcli.Git{Env: fx.env}}
}

func (fx *fixture) check(t *testing.T, c *Cache, refs ...string) *Report {
	t.Helper()
	rep, err := c.Check(context.Background(), CheckOptions{URL: fx.url, Refs: refs, Base: fx.base, Series: fx.series})
	if err != nil {
		t.Fatalf("check %v: %v", refs, err)
	}
	return rep
}

// wants returns every object ID the server was asked for since the last Reset, and the
// number of fetch requests.
func (fx *fixture) wants() (map[string]bool, int) {
	w := map[string]bool{}
	n := 0
	for _, r := range fx.srv.Requests() {
		if r.Command == "fetch" {
			n++
		}
		for _, o := range r.Wants {
			w[o] = true
		}
	}
	return w, n
}

func TestCheckAcrossThreeTags(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	c := fx.cache(t)
	rep := fx.check(t, c, "v1.0.0", "v1.1.0", "v1.2.0")

	want := map[string][]string{
		"v1.0.0": {"exact", "exact", "exact", "exact", "exact", "exact"},
		"v1.1.0": {"exact", "offset 5", "3-way needed", "conflict (hunk 1/1)", "absorbed", "missing file"},
		"v1.2.0": {"offset 3", "offset 5", "conflict (hunk 1/1)", "absorbed", "exact", "exact"},
	}
	if len(rep.Columns) != 3 {
		t.Fatalf("have %d columns, want 3", len(rep.Columns))
	}
	for _, col := range rep.Columns {
		if col.Commit != fx.tagged[col.Ref] {
			t.Errorf("%s resolved to %s, want %s (the peeled commit)", col.Ref, col.Commit, fx.tagged[col.Ref])
		}
		var have []string
		for _, cell := range col.Cells {
			have = append(have, cell.String())
		}
		if strings.Join(have, " | ") != strings.Join(want[col.Ref], " | ") {
			t.Errorf("%s:\nhave %s\nwant %s", col.Ref, strings.Join(have, " | "), strings.Join(want[col.Ref], " | "))
		}
	}
	if rep.Columns[1].Cells[3].File != "aten/d.cpp" || rep.Columns[1].Cells[5].File != "aten/f.cpp" {
		t.Errorf("conflict and missing cells name %q and %q, want aten/d.cpp and aten/f.cpp",
			rep.Columns[1].Cells[3].File, rep.Columns[1].Cells[5].File)
	}
	if rep.AllApply() {
		t.Error("AllApply is true with conflicts in the table")
	}

	wanted, fetches := fx.wants()
	for _, b := range fx.filler {
		if wanted[b] {
			t.Errorf("the check fetched blob %s of a file the series does not touch", b)
		}
	}
	// One fetch for the three commits, one for their touched blobs (the base is v1.0.0,
	// so the three-way question needs nothing more).
	if fetches != 2 {
		t.Errorf("have %d fetch requests, want 2: %+v", fetches, fx.srv.Requests())
	}
}

func TestCacheReusedAcrossTags(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	c := fx.cache(t)

	fx.check(t, c, "v1.1.0")
	first, _ := fx.wants()
	fx.srv.Reset()

	rep := fx.check(t, c, "v1.2.0")
	second, _ := fx.wants()
	for o := range second {
		if first[o] {
			t.Errorf("the second tag fetched object %s again", o)
		}
	}
	// The touched blobs v1.2.0 changed, and only those, were fetched.
	for _, f := range touched {
		b12, b11, b10 := fx.blobs["aten/"+f+"@v1.2.0"], fx.blobs["aten/"+f+"@v1.1.0"], fx.blobs["aten/"+f+"@v1.0.0"]
		known := b12 == b11 || b12 == b10 // b12 == b10: the base's blob, fetched for the 3-way check
		if second[b12] == known {
			t.Errorf("%s at v1.2.0 (blob %s): fetched %v, want %v", f, b12, second[b12], !known)
		}
	}
	if rep.Stats.CommitsFetched != 1 {
		t.Errorf("stats: %d commits fetched, want 1", rep.Stats.CommitsFetched)
	}

	t.Run("a warm run fetches nothing", func(t *testing.T) {
		fx.srv.Reset()
		rep := fx.check(t, c, "v1.2.0", "v1.1.0")
		if _, n := fx.wants(); n != 0 {
			t.Errorf("warm run made %d fetch requests: %+v", n, fx.srv.Requests())
		}
		if st := rep.Stats; st.LsRemotes != 1 || st.CommitsFetched != 0 || st.BlobsFetched != 0 {
			t.Errorf("warm stats %+v, want one ls-remote and nothing fetched", st)
		}
	})

	t.Run("concurrent runs share the cache", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = c.Check(context.Background(), CheckOptions{URL: fx.url, Refs: []string{"main", "v1.2.0"}, Base: fx.base, Series: fx.series})
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
	})

	t.Run("clean empties it", func(t *testing.T) {
		freed, err := c.Clean()
		if err != nil || freed == 0 {
			t.Fatalf("clean: freed %d, %v", freed, err)
		}
		fx.srv.Reset()
		fx.check(t, c, "v1.2.0")
		if _, n := fx.wants(); n == 0 {
			t.Error("after clean, the check fetched nothing: the cache was not emptied")
		}
	})
}

func TestResolveUnknownRef(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	_, err := fx.cache(t).Check(context.Background(), CheckOptions{URL: fx.url, Refs: []string{"v9.9.9"}, Series: fx.series})
	if err == nil || !strings.Contains(err.Error(), "v9.9.9: no tag or branch of that name") {
		t.Fatalf("have %v, want an error naming v9.9.9", err)
	}
}

func TestNewerTags(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	tags, err := NewerTags(context.Background(), &gitcli.Git{Env: fx.env}, fx.url, "v1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, tg := range tags {
		have = append(have, tg.Name+"="+tg.Commit[:7])
	}
	want := []string{"v1.1.0=" + fx.tagged["v1.1.0"][:7], "v1.2.0=" + fx.tagged["v1.2.0"][:7]}
	if strings.Join(have, ",") != strings.Join(want, ",") {
		t.Errorf("have %v, want %v (release candidates left out, annotated tags peeled)", have, want)
	}
}

func TestBaseMissingFromTheRemote(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	rep, err := fx.cache(t).Check(context.Background(), CheckOptions{URL: fx.url, Refs: []string{"v1.1.0"},
		Base: strings.Repeat("0123456789", 4), Series: fx.series})
	if err != nil {
		t.Fatal(err)
	}
	// c.cpp would merge, but without its base the question cannot be asked.
	if have := rep.Columns[0].Cells[2].String(); have != "conflict (hunk 1/1)" {
		t.Errorf("c.cpp without a base: have %s, want conflict (hunk 1/1)", have)
	}
	if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "three-way merges not tried") {
		t.Errorf("warnings %q, want one saying three-way merges were not tried", rep.Warnings)
	}
}

func TestCredentialsUsedButNeverShown(t *testing.T) {
	t.Parallel()
	const secret = "t0ken-s3cret"
	fx := newFixtureWith(t, gitserver.Options{User: "ci", Password: secret})
	url := strings.Replace(fx.url, "https://", "https://ci:"+secret+"@", 1)
	var progress []string
	c := fx.cache(t)
	rep, err := c.Check(context.Background(), CheckOptions{URL: url, Refs: []string{"v1.1.0"}, Base: fx.base, Series: fx.series,
		Progress: func(s string) { progress = append(progress, s) }})
	if err != nil {
		t.Fatalf("check with credentials: %v", err)
	}
	if rep.URL != strings.Replace(fx.url, "https://", "https://***@", 1) {
		t.Errorf("report URL %q, want the redacted one", rep.URL)
	}
	if strings.Contains(strings.Join(progress, "\n"), secret) {
		t.Errorf("progress shows the credentials:\n%s", strings.Join(progress, "\n"))
	}
	// An error names the URL too, redacted.
	_, err = c.Check(context.Background(), CheckOptions{URL: url, Refs: []string{"v9.9.9"}, Series: fx.series})
	if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "***@") {
		t.Errorf("error %v: want one naming the redacted URL", err)
	}
	// The credentials reach nothing the cache keeps on disk.
	filepath.WalkDir(c.Dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if data, _ := os.ReadFile(p); strings.Contains(string(data), secret) {
				t.Errorf("%s holds the credentials", p)
			}
		}
		return nil
	})
	// Without them the server says no.
	if _, err := fx.cache(t).Check(context.Background(), CheckOptions{URL: fx.url, Refs: []string{"v1.1.0"}, Series: fx.series}); err == nil {
		t.Error("check without credentials succeeded; the server does not check them")
	}
}
