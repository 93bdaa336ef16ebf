package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
)

// crashedStore leaves in a fresh folder what a crashed rein leaves: a
// database file with checkpointed runs and a -wal file with newer ones.
func crashedStore(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	live := filepath.Join(t.TempDir(), "rein.db")
	create := func(s *sqlite.Store, prefix string, n int) {
		for i := range n {
			id := fmt.Sprintf("%s-%d", prefix, i)
			if _, _, err := s.CreateRun(ctx, &store.CreateRunParams{ID: id, Flow: "f", FlowText: []byte("name: f # " + strings.Repeat(id, 400))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	s, err := sqlite.Open(ctx, live, nil)
	if err != nil {
		t.Fatal(err)
	}
	create(s, "old", 40)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = sqlite.Open(ctx, live, nil); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	create(s, "new", 8)
	dir := t.TempDir()
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(live + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "rein.db"+suffix), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "rein.db")
}

// Every command refuses a damaged store with exit 6 and says what is
// wrong; rein run in particular never reports success on one.
func TestDamagedStoreIsRefused(t *testing.T) {
	t.Parallel()
	flowPath := writeFlow(t, "name: ok\ntools:\n  e: {command: [cat], effect: none}\nsteps:\n  - {id: a, tool: e, args: {x: 1}}\n")
	tests := []struct {
		name   string
		damage func(t *testing.T, db string)
		want   string
	}{
		{"truncated", func(t *testing.T, db string) {
			fi, _ := os.Stat(db)
			if err := os.Truncate(db, fi.Size()/2/4096*4096); err != nil {
				t.Fatal(err)
			}
		}, "it was truncated"},
		{"emptied", func(t *testing.T, db string) {
			if err := os.Truncate(db, 0); err != nil {
				t.Fatal(err)
			}
		}, "the database file is empty"},
		{"header overwritten", func(t *testing.T, db string) {
			f, err := os.OpenFile(db, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt([]byte(strings.Repeat("x", 100)), 0); err != nil {
				t.Fatal(err)
			}
		}, "does not start with the SQLite header"},
		{"WAL frame damaged", func(t *testing.T, db string) {
			b, err := os.ReadFile(db + "-wal")
			if err != nil {
				t.Fatal(err)
			}
			pageSize := int(binary.BigEndian.Uint32(b[8:]))
			b[32+24+pageSize+24+100] ^= 0xff // the second frame's page
			if err := os.WriteFile(db+"-wal", b, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "would be dropped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := crashedStore(t)
			if code, out, stderr := cli(t, "runs", "check", "--db", db); code != exitOK {
				t.Fatalf("check of the sound copy: exit %d\n%s%s", code, out, stderr)
			}
			tt.damage(t, db)
			for _, args := range [][]string{{"run", flowPath}, {"runs", "list"}, {"runs", "show", "new-1"}, {"runs", "prune", "--older-than", "1d"}} {
				code, out, stderr := cli(t, append(args, "--db", db)...)
				if code != exitDamaged || !strings.Contains(stderr, "the run store is damaged") || !strings.Contains(stderr, tt.want) || !strings.Contains(stderr, "rein runs check") {
					t.Errorf("rein %v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, exitDamaged, out, stderr)
				}
			}
			code, out, _ := cli(t, "runs", "check", "--db", db)
			if code != exitDamaged || !strings.Contains(out, "damaged") || !strings.Contains(out, tt.want) {
				t.Errorf("runs check: exit %d\n%s", code, out)
			}
		})
	}
}
