package session_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/sessiontest"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/postgres"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/tool"
)

func TestConformanceSQLite(t *testing.T) {
	t.Parallel()
	sessiontest.Run(t, sessiontest.Harness{New: func(t *testing.T) store.Store {
		st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "rein.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeStore(t, st) })
		return st
	}})
}

// TestConformancePostgres runs the suite on the PostgreSQL of
// REIN_TEST_POSTGRES_DSN, each subtest in a schema of its own, dropped
// afterwards. Without one it skips, except under CI=true, where it fails.
func TestConformancePostgres(t *testing.T) {
	t.Parallel()
	dsn := os.Getenv("REIN_TEST_POSTGRES_DSN")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(`REIN_TEST_POSTGRES_DSN is not set under CI=true: start PostgreSQL (eval "$(bash .ci/postgres)") before go test`)
		}
		t.Skip(`REIN_TEST_POSTGRES_DSN is not set; to run it: eval "$(bash .ci/postgres)" && go test ./session`)
	}
	sessiontest.Run(t, sessiontest.Harness{New: func(t *testing.T) store.Store {
		var b [6]byte
		_, _ = rand.Read(b[:])
		schema := "rein_session_" + hex.EncodeToString(b[:])
		st, err := postgres.Open(context.Background(), dsn, &postgres.Options{Schema: schema, MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			closeStore(t, st)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Errorf("drop schema %s: %v", schema, err)
				return
			}
			defer conn.Close(ctx)
			if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
				t.Errorf("drop schema %s: %v", schema, err)
			}
		})
		return st
	}})
}

func closeStore(t *testing.T, st store.Store) {
	if err := st.Close(); err != nil {
		t.Error(err)
	}
}

// TestNewRefuses: what New cannot make a Service of, and an empty
// message, are business errors that say what to give instead.
func TestNewRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "flow.yaml"), []byte("name: plain\nsteps:\n  - {id: greet, type: llm, model: m, prompt_template: hi}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "script.yaml"), []byte("replies:\n  - {step: greet, raw: hi}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(ctx, ":memory:", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore(t, st)
	save := tool.Func(tool.Spec{Name: "save_note", Effect: tool.EffectWrite}, func(context.Context, any) (any, error) { return nil, nil })
	charges := tool.Func(tool.Spec{Name: "find_charges", Effect: tool.EffectRead}, func(context.Context, any) (any, error) { return nil, nil })
	durable, err := rein.Open(ctx, rein.Config{Store: st, Load: &project.LoadOptions{Tools: []tool.Tool{save, charges}}})
	if err != nil {
		t.Fatal(err)
	}
	memory, err := rein.Open(ctx, rein.Config{})
	if err != nil {
		t.Fatal(err)
	}
	flowProject, err := durable.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer flowProject.Close()
	agent, err := durable.Load(filepath.Join("sessiontest", "testdata", "notes"))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	for _, tc := range []struct {
		name string
		c    *rein.Client
		p    *project.Project
		cfg  *session.Config
		want string
	}{
		{"no client", nil, agent, nil, "needs a *rein.Client"},
		{"no project", durable, nil, nil, "needs the agent's project"},
		{"a flow, not an agent", durable, flowProject, nil, "is not an agent"},
		{"a client without a store", memory, agent, nil, "keeps no runs"},
		{"a negative budget", durable, agent, &session.Config{MaxBytes: -1}, "negative history budget"},
	} {
		_, err := session.New(tc.c, tc.p, tc.cfg)
		if fault.ClassOf(err) != fault.Business || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New = %v (%s), want a business error saying %q", tc.name, err, fault.ClassOf(err), tc.want)
		}
	}
	svc, err := session.New(durable, agent, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Ask(ctx, "s", ""); fault.ClassOf(err) != fault.Business || err == nil || !strings.Contains(err.Error(), "the message is empty") {
		t.Errorf("Ask with an empty message = %v, want a business error", err)
	}
}
