package agent

import (
	"context"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/reinhq/rein/value"
)

// observe renders a tool's output as the model will see it: its canonical
// JSON, cut to Config.ObservationLimit bytes. A longer one is stored whole
// through Config.Blobs; the preview then ends with a note giving its size
// and blob reference.
func (l *Loop) observe(ctx context.Context, out any) (obs, blob string) {
	b, err := value.Canonical(out)
	if err != nil {
		return fmt.Sprintf("the output could not be encoded: %v", err), ""
	}
	if len(b) <= l.cfg.ObservationLimit {
		return string(b), ""
	}
	note := "[observation cut: " + strconv.Itoa(len(b)) + " bytes, the first " + strconv.Itoa(l.cfg.ObservationLimit) + " shown"
	if l.cfg.Blobs != nil {
		if ref, err := l.cfg.Blobs.PutBlob(ctx, b); err == nil {
			blob = ref
			note += "; whole in blob " + ref
		}
	}
	return value.Preview(b, l.cfg.ObservationLimit) + "\n" + note + "]", blob
}

// cutText bounds an error observation the same way, without a blob.
func (l *Loop) cutText(s string) string {
	if len(s) <= l.cfg.ObservationLimit {
		return s
	}
	return value.Preview([]byte(s), l.cfg.ObservationLimit) + "\n[cut: " + strconv.Itoa(len(s)) + " bytes]"
}

// cut cuts s to n bytes on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func quoteCut(s string, n int) string { return strconv.Quote(cut(s, n)) }
