package rein_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// A SQLite DSN carries the store's options as a query: the file is the
// path before it, and an unknown parameter is refused, naming it.
func TestOpenStoreSQLiteDSNOptions(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "runs.db")
	st, err := openStore(t.Context(), path+"?checkpoint=external&synchronous=full")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got := filepath.Base(st.(interface{ Path() string }).Path()); got != "runs.db" {
		t.Errorf("the store opened %q, want runs.db", got)
	}
	_, err = openStore(t.Context(), path+"?checkpoints=external")
	if err == nil || !strings.Contains(err.Error(), `unknown parameter "checkpoints"`) {
		t.Errorf("an unknown DSN parameter: %v, want an error naming it", err)
	}
}
