package builder

import (
	"maps"
	"strings"
	"testing"
)

// TestSccacheSettings: each kind of remote becomes sccache's own variables, secrets
// only from the environment, and the launcher variables name sccache.
func TestSccacheSettings(t *testing.T) {
	env := []string{"PATH=/bin", "CACHE_PW=pw1"}
	tests := []struct {
		opts  CacheOptions
		want  map[string]string
		shown string
	}{
		{CacheOptions{Remote: "redis://cache.lan:6379/2", PasswordEnv: "CACHE_PW"},
			map[string]string{"SCCACHE_REDIS": "redis://:pw1@cache.lan:6379/2"}, "redis://cache.lan:6379/2"},
		{CacheOptions{Remote: "s3://bucket/torch/mps", Env: map[string]string{"SCCACHE_REGION": "eu-west-1"}},
			map[string]string{"SCCACHE_BUCKET": "bucket", "SCCACHE_S3_KEY_PREFIX": "torch/mps", "SCCACHE_REGION": "eu-west-1"}, "s3://bucket/torch/mps"},
		{CacheOptions{Remote: "gs://b/p", Dir: "/c"}, map[string]string{"SCCACHE_GCS_BUCKET": "b", "SCCACHE_GCS_KEY_PREFIX": "p", "SCCACHE_DIR": "/c"}, "gs://b/p"},
		{CacheOptions{Remote: "https://dav.lan/cache"}, map[string]string{"SCCACHE_WEBDAV_ENDPOINT": "https://dav.lan/cache"}, "https://dav.lan/cache"},
	}
	for _, tt := range tests {
		l := &Launcher{Tool: "sccache", Path: "/usr/bin/sccache", env: map[string]string{}}
		if err := l.configure(tt.opts, "/src/pytorch", env); err != nil {
			t.Fatalf("%s: %v", tt.opts.Remote, err)
		}
		want := maps.Clone(tt.want)
		for _, v := range launcherVars {
			want[v] = "/usr/bin/sccache"
		}
		if !maps.Equal(l.env, want) {
			t.Errorf("%s: env %v, want %v", tt.opts.Remote, l.env, want)
		}
		if l.Remote != tt.shown || strings.Contains(l.Remote, "pw1") {
			t.Errorf("%s: shown as %q, want %q", tt.opts.Remote, l.Remote, tt.shown)
		}
	}
	l := &Launcher{Tool: "sccache", Path: "/usr/bin/sccache", env: map[string]string{}}
	if err := l.configure(CacheOptions{Remote: "ftp://x"}, "/t", env); err == nil || !strings.Contains(err.Error(), `scheme "ftp" not supported`) {
		t.Errorf("ftp remote: %v", err)
	}
}

func TestCacheStatsParsing(t *testing.T) {
	sc, err := parseSccacheStats([]byte(`{"stats":{"cache_hits":{"counts":{"C/C++":5,"CUDA":1}},"cache_misses":{"counts":{"C/C++":2}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	l := &Launcher{Tool: "sccache", Remote: "redis://r:6379"}
	s := l.statsBetween(map[string]int{"hits": 1}, sc)
	if s.Hits != 5 || s.Misses != 2 || s.RemoteHits != 0 || int(s.HitRate) != 71 {
		t.Errorf("sccache stats %+v, want 5 hits 2 misses", s)
	}
	if _, err := parseSccacheStats([]byte("not json")); err == nil {
		t.Error("garbage sccache output parsed")
	}
	before := parseCcacheStats([]byte("direct_cache_hit\t4\npreprocessed_cache_hit\t1\ncache_miss\t10\nremote_storage_hit\t0\nnot a counter line\n"))
	after := parseCcacheStats([]byte("direct_cache_hit\t9\npreprocessed_cache_hit\t2\ncache_miss\t10\nremote_storage_hit\t6\n"))
	c := (&Launcher{Tool: "ccache"}).statsBetween(before, after)
	if c.Hits != 6 || c.Misses != 0 || c.RemoteHits != 6 || c.HitRate != 100 {
		t.Errorf("ccache stats %+v, want 6 hits, all remote", c)
	}
	if got := (&Launcher{Tool: "ccache"}).statsBetween(after, after); got.HitRate != 0 || got.Hits != 0 {
		t.Errorf("nothing compiled: %+v", got)
	}
}
