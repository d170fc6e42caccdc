package series

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// mapSource is a FileSource over a map, as the upstream cache builds from git blobs.
type mapSource map[string]File

func (m mapSource) ReadFile(p string) (File, error) { return m[p], nil }

// sourceOf reads every file the series touches from dir into a mapSource.
func sourceOf(t *testing.T, dir string, s *Series) mapSource {
	t.Helper()
	m := mapSource{}
	for _, p := range s.Patches {
		for _, path := range p.Paths() {
			fi, err := os.Lstat(filepath.Join(dir, path))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(filepath.Join(dir, path))
			if err != nil {
				t.Fatal(err)
			}
			m[path] = File{Exists: true, Data: data, Mode: fi.Mode().Perm()}
		}
	}
	return m
}

func TestComputeFromMatchesComputeOnDisk(t *testing.T) {
	fx := newFixture(t, mpsBase, mpsSteps()...)
	s := mustLoad(t, fx.patches)
	src := sourceOf(t, fx.repo, s)

	want, werr := Compute(openRoot(t, fx.repo), s, Forward)
	have, herr := ComputeFrom(src, s.Patches, Forward)
	if werr != nil || herr != nil {
		t.Fatalf("compute: on disk %v, from source %v", werr, herr)
	}
	if !reflect.DeepEqual(have.Changes, want.Changes) {
		t.Errorf("changes differ:\nhave %+v\nwant %+v", have.Changes, want.Changes)
	}
	for i := range want.Results {
		if have.Results[i].Outcome() != want.Results[i].Outcome() {
			t.Errorf("%s: have %s, want %s", want.Results[i].Name, have.Results[i].Outcome(), want.Results[i].Outcome())
		}
	}

	t.Run("missing file is a conflict", func(t *testing.T) {
		delete(src, "aten/mps/Stream.mm")
		_, err := ComputeFrom(src, s.Patches[:1], Forward)
		var ce *ConflictError
		if !errors.As(err, &ce) || ce.Conflicts[0].Reason != "file does not exist" {
			t.Fatalf("have %v, want a \"file does not exist\" conflict", err)
		}
	})
	t.Run("unsafe path refused before the source sees it", func(t *testing.T) {
		bad := *s.Patches[0]
		f := *bad.Files[0]
		f.OldName, f.NewName = "../escape.mm", "../escape.mm"
		bad.Files = append([]*gitdiff.File{&f}, bad.Files[1:]...)
		_, err := ComputeFrom(src, []*Patch{&bad}, Forward)
		var ue *UnsafePathError
		if !errors.As(err, &ue) {
			t.Fatalf("have %v, want an *UnsafePathError", err)
		}
	})
}
