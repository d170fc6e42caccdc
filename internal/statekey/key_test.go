package statekey

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func isolate(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, ".cache"))
	return filepath.Join(home, ".config", "mpspatch", keyFile)
}

func TestEnsureCreatesOnePrivateKey(t *testing.T) {
	path := isolate(t)
	if _, _, err := Load(); err != ErrNoKey {
		t.Fatalf("before: Load = %v, want ErrNoKey", err)
	}
	k1, err := Ensure()
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 || len(k1) != 32 {
		t.Fatalf("key file %s: %v, %v, %d bytes", path, fi, err, len(k1))
	}
	k2, where, err := Load()
	if err != nil || !bytes.Equal(k1, k2) || where != path {
		t.Fatalf("Load after Ensure: %v %q, same key %v", err, where, bytes.Equal(k1, k2))
	}
}

func TestKeyOthersCanReadIsRefused(t *testing.T) {
	path := isolate(t)
	if _, err := Ensure(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(); err == nil || !strings.Contains(err.Error(), "others may read it") {
		t.Fatalf("Load of a world-readable key: %v", err)
	}
}

func TestMACIsBoundToItsDomain(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	a := MAC(key, "mpspatch journal v3", []byte("body"))
	if !Equal(a, MAC(key, "mpspatch journal v3", []byte("body"))) {
		t.Fatal("same key, domain and body: MACs differ")
	}
	if Equal(a, MAC(key, "mpspatch run stamp v1", []byte("body"))) {
		t.Fatal("a journal MAC verifies as a stamp MAC")
	}
	if Equal(nil, nil) {
		t.Fatal("an empty MAC verifies")
	}
}
