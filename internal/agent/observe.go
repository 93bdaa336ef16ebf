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
// and blob reference. An object is cut by its fields, not its bytes
// (shrink): its small fields (ids, statuses) survive whole whatever their
// order, and its large ones are summarised.
func (l *Loop) observe(ctx context.Context, out any) (obs, blob string) {
	b, err := value.Canonical(out)
	if err != nil {
		return fmt.Sprintf("the output could not be encoded: %v", err), ""
	}
	if len(b) <= l.cfg.ObservationLimit {
		return string(b), ""
	}
	shown := b
	if m, ok := out.(map[string]any); ok {
		if s, err := value.Canonical(shrink(m)); err == nil {
			shown = s
		}
	}
	note := "[observation cut: " + strconv.Itoa(len(b)) + " bytes, the first " + strconv.Itoa(l.cfg.ObservationLimit) + " shown"
	if l.cfg.Blobs != nil {
		if ref, err := l.cfg.Blobs.PutBlob(ctx, b); err == nil {
			blob = ref
			note += "; whole in blob " + ref
		}
	}
	return value.Preview(shown, l.cfg.ObservationLimit) + "\n" + note + "]", blob
}

// smallField is the most a field may take, encoded, to be kept whole when an
// object is shrunk.
const smallField = 256

// shrink is m with its small fields whole and its large ones summarised: a
// list of objects keeps, per item, the item's small fields (a workflow's
// artifacts by step, producer, digest and status; its next actions by step
// and action) and the item's size; any other large value becomes a note of
// its size. What a caller acts on next (an id, a status) survives a cut
// whatever its key sorts after.
func shrink(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if small(v) {
			out[k] = v
			continue
		}
		if list, ok := v.([]any); ok {
			items := make([]any, len(list))
			for i, it := range list {
				if o, ok := it.(map[string]any); ok {
					items[i] = keepSmall(o)
				} else {
					items[i] = cutNote(it)
				}
			}
			out[k] = items
			continue
		}
		out[k] = cutNote(v)
	}
	return out
}

// keepSmall is o's small fields, with "_cut" giving o's whole size when a
// field was left out.
func keepSmall(o map[string]any) map[string]any {
	out := make(map[string]any, len(o))
	for k, v := range o {
		if small(v) {
			out[k] = v
		}
	}
	if len(out) < len(o) {
		b, _ := value.Canonical(o)
		out["_cut"] = strconv.Itoa(len(b)) + " bytes; the small fields shown"
	}
	return out
}

func small(v any) bool {
	b, err := value.Canonical(v)
	return err == nil && len(b) <= smallField
}

func cutNote(v any) map[string]any {
	b, _ := value.Canonical(v)
	return map[string]any{"_cut": strconv.Itoa(len(b)) + " bytes"}
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
