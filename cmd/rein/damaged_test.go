package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
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
		// A garbage log header while committed runs are only in the log:
		// SQLite would ignore the log and drop them.
		{"WAL header garbage", func(t *testing.T, db string) {
			f, err := os.OpenFile(db+"-wal", os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt([]byte(strings.Repeat("garbage!", 4)), 0); err != nil {
				t.Fatal(err)
			}
		}, "the header of its write-ahead log is damaged"},
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

// checkpointed moves everything the -wal file of db holds into db itself
// (and empties the log), as a rein that closed cleanly leaves it.
func checkpointed(t *testing.T, db string) {
	t.Helper()
	sdb, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	if _, err := sdb.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
}

// damageRecord overwrites 8 bytes in the middle of the longest event JSON
// of run id, in the database file on disk.
func damageRecord(t *testing.T, db, id string) {
	t.Helper()
	checkpointed(t, db)
	sdb, err := sql.Open("sqlite", db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	var row []byte
	err = sdb.QueryRow(`SELECT payload FROM run_events WHERE run_id = ? ORDER BY length(payload) DESC, seq LIMIT 1`, id).Scan(&row)
	sdb.Close()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(b, row)
	if at < 0 || bytes.Count(b, row) != 1 || len(row) < 32 {
		t.Fatalf("the longest event of run %s (%d bytes) is not once in %s", id, len(row), db)
	}
	copy(b[at+len(row)/2:], "\x00\xff\x00\xff\x00\xff\x00\xff")
	if err := os.WriteFile(db, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func wantExitDamaged(t *testing.T, what string, code int, stderr string, want ...string) {
	t.Helper()
	if code != exitDamaged || !strings.Contains(stderr, "the run store is damaged") || !strings.Contains(stderr, "rein runs check") {
		t.Errorf("%s: exit %d, want %d (the run store is damaged; rein runs check)\nstderr: %s", what, code, exitDamaged, stderr)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("%s: stderr lacks %q:\n%s", what, w, stderr)
		}
	}
}

// A journal record damaged on disk is exit 6 for the commands that read
// it, not exit 1; rein runs check decodes every record and finds it.
func TestDamagedJournalRecordIsExit6(t *testing.T) {
	t.Parallel()
	flowPath := writeFlow(t, "name: ok\ntools:\n  e: {command: [cat], effect: none}\nsteps:\n  - {id: a, tool: e, args: {x: \"some text for the record\"}}\n")
	db := filepath.Join(t.TempDir(), "rein.db")
	var ids []string
	for range 3 {
		code, out, stderr := cli(t, "run", flowPath, "--db", db, "-o", "json")
		var res struct {
			RunID string `json:"run_id"`
		}
		if err := json.Unmarshal([]byte(out), &res); code != exitOK || err != nil {
			t.Fatalf("run: exit %d %v\n%s%s", code, err, out, stderr)
		}
		ids = append(ids, res.RunID)
	}
	damageRecord(t, db, ids[1])
	code, out, stderr := cli(t, "runs", "show", ids[1], "--db", db)
	wantExitDamaged(t, "runs show", code, stderr+out, ids[1])
	if code, out, stderr := cli(t, "runs", "show", ids[0], "--db", db); code != exitOK {
		t.Errorf("runs show of an undamaged run: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = cli(t, "runs", "check", "--db", db)
	if code != exitDamaged || strings.Contains(out, ": ok") || !strings.Contains(out, "of run "+ids[1]) {
		t.Errorf("runs check: exit %d, want %d naming run %s\n%s", code, exitDamaged, ids[1], out)
	}
}

// rein runs approve reads the run before it writes: on a damaged journal
// it records nothing and exits 6.
func TestApproveOnDamagedJournalRecordsNothing(t *testing.T) {
	t.Parallel()
	fx := newDurable(t, "approval")
	code, out, stderr := fx.cli("run", fx.dir, "-o", "json")
	var res durableResult
	if err := json.Unmarshal([]byte(out), &res); code != exitWaiting || err != nil {
		t.Fatalf("run: exit %d %v\n%s%s", code, err, out, stderr)
	}
	damageRecord(t, fx.db, res.RunID)
	code, out, stderr = fx.cli("runs", "approve", res.RunID, "review")
	wantExitDamaged(t, "runs approve", code, stderr, res.RunID, "nothing was recorded")
	if strings.Contains(out+stderr, "approved by") || strings.Contains(out+stderr, "decision is recorded") {
		t.Errorf("runs approve reports a decision:\n%s%s", out, stderr)
	}
	s, err := sqlite.Open(context.Background(), fx.db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	as, err := s.Approvals(context.Background(), &store.ListApprovalsParams{RunID: res.RunID})
	if err != nil || len(as) != 1 || as[0].Status != store.ApprovalPending {
		t.Fatalf("approvals after the refused approve: %+v, %v; want the one still pending", as, err)
	}
	if got := fx.calls(); len(got) != 1 {
		t.Errorf("tool calls after the refused approve: %v, want only the draft", got)
	}
}

// A page zeroed on disk is never reported as ordinary failure or as
// success by a command that meets it: each page in turn, every command
// that reads or writes it exits 6, and rein runs check always finds it.
func TestZeroedPageIsExit6(t *testing.T) {
	t.Parallel()
	flowPath := writeFlow(t, "name: ok\ntools:\n  e: {command: [cat], effect: none}\nsteps:\n  - {id: a, tool: e, args: {x: \"some text for the record\"}}\n")
	base := filepath.Join(t.TempDir(), "rein.db")
	var last string
	for range 12 {
		code, out, stderr := cli(t, "run", flowPath, "--db", base, "-o", "json")
		var res struct {
			RunID string `json:"run_id"`
		}
		if err := json.Unmarshal([]byte(out), &res); code != exitOK || err != nil {
			t.Fatalf("run: exit %d %v\n%s%s", code, err, out, stderr)
		}
		last = res.RunID
	}
	checkpointed(t, base)
	sound, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	const pageSize = 4096
	pages := len(sound) / pageSize
	met := map[string]int{}
	for p := 2; p < pages; p++ { // page 1 holds the header, which Open checks
		db := filepath.Join(t.TempDir(), "rein.db")
		b := bytes.Clone(sound)
		clear(b[(p-1)*pageSize : p*pageSize])
		if err := os.WriteFile(db, b, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"runs", "list"}, {"runs", "show", last}, {"run", flowPath}} {
			code, out, stderr := cli(t, append(args, "--db", db)...)
			switch code {
			case exitOK:
			case exitDamaged:
				met[args[0]+" "+args[1]]++
				wantExitDamaged(t, fmt.Sprintf("page %d zeroed: rein %v", p, args), code, stderr)
			default:
				t.Errorf("page %d zeroed: rein %v: exit %d, want 0 (the page is not read) or 6\n%s%s", p, args, code, out, stderr)
			}
		}
		code, out, _ := cli(t, "runs", "check", "--db", db)
		if code != exitDamaged || strings.Contains(out, ": ok") {
			t.Errorf("page %d zeroed: runs check: exit %d\n%s", p, code, out)
		}
	}
	for _, c := range []string{"runs list", "runs show", "run " + flowPath} {
		if met[c] == 0 {
			t.Errorf("rein %s met none of %d zeroed pages", c, pages-2)
		}
	}
}
