package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/store"
)

// mapErr turns database errors into the store's vocabulary: unique
// violations (a journal version or run ID taken), serialization failures
// and deadlocks are store.ErrConflict; no rows is store.ErrNotFound. The
// store's own errors (which wrap ErrConflict or ErrNotFound where they
// mean it) keep their text after what. what says what was being done ("commit run r1").
func mapErr(what string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "23505": // unique_violation
			return fmt.Errorf("%s: %s (%s): %w", what, pe.Message, pe.ConstraintName, store.ErrConflict)
		case "40001", "40P01": // serialization_failure, deadlock_detected
			return fmt.Errorf("%s: %s: %w", what, pe.Message, store.ErrConflict)
		}
	}
	return fmt.Errorf("postgres store: %s: %w", what, err)
}

// retryable reports whether err means the statement did not run to a
// known end because the connection or server failed (lost connection,
// server restarting, backend terminated) or because PostgreSQL aborted the
// transaction for a retry (serialization failure, deadlock). Commit retries
// these; its version check makes the retry safe.
func retryable(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "57P01", "57P02", "57P03", "40001", "40P01": // admin/crash shutdown, cannot connect now
			return true
		}
		return strings.HasPrefix(pe.Code, "08") // connection exception
	}
	var ne net.Error
	var ce *pgconn.ConnectError
	return errors.As(err, &ne) || errors.As(err, &ce) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, pgconn.ErrConnClosed) || pgconn.SafeToRetry(err)
}

// again runs fn, the whole of one statement including reading its rows,
// up to three times: again after a failure that never reached the server,
// and, when idempotent is set, after a lost connection or a server
// restart too — so the dead connections a restarted or killed backend
// leaves in the pool cost a short delay, not an error.
func again(ctx context.Context, idempotent bool, fn func() error) error {
	var backoff time.Duration
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || attempt == 3 || ctx.Err() != nil {
			return err
		}
		if !pgconn.SafeToRetry(err) && !(idempotent && retryable(ctx, err)) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff = 50 * time.Millisecond
	}
}

// hideDSN removes from text the DSN forms redact.DSN knows, and the
// passwords found in dsn and any extra secrets, however short: they are
// known to be passwords, so even a short one is hidden.
func hideDSN(text, dsn string, secrets ...string) string {
	text = redact.DSN(text)
	for _, s := range append(redact.Passwords(dsn), secrets...) {
		if s != "" {
			text = strings.ReplaceAll(text, s, redact.DSNMask)
		}
	}
	return text
}
