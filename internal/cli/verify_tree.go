package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mpspatch/mpspatch/builder"
	"github.com/mpspatch/mpspatch/internal/gitcli"
	"github.com/mpspatch/mpspatch/verify"
)

// foreignTorch says why the torch e loads is not tree's build: it is loaded from outside
// the tree, or its git version is not the tree's HEAD (a stale build). nil when it is the
// tree's build, or when no tree was named.
func foreignTorch(ctx context.Context, e verify.Env, tree string) error {
	if tree == "" {
		return nil
	}
	abs, err := filepath.Abs(tree)
	if err != nil {
		return fmt.Errorf("verify --tree %s: %w", tree, err)
	}
	if e.TorchPath == "" || !builder.InTree(abs, e.TorchPath) {
		return fmt.Errorf("verify --tree %s: %s loads torch from %s, not the tree's build: refusing to verify it "+
			"(build the tree with mpspatch build --tree %s, remove the install that shadows it, or pass --allow-foreign-torch)",
			tree, e.Executable, e.TorchPath, tree)
	}
	if _, err := os.Stat(filepath.Join(abs, ".git")); err != nil || e.TorchGit == "" || e.TorchGit == "Unknown" {
		return nil
	}
	head, err := (&gitcli.Git{}).HeadCommit(ctx, abs)
	if err != nil || head == e.TorchGit {
		return nil
	}
	return fmt.Errorf("verify --tree %s: the torch loaded was built from %s, but the tree's HEAD is %s: a stale build; "+
		"run mpspatch build --tree %s (or pass --allow-foreign-torch)", tree, e.TorchGit, head, tree)
}
