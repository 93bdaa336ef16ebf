package trace

import (
	"math"
	"strconv"
	"time"

	"github.com/reinhq/rein/value"
)

// AppendJSON appends e as one JSON object, byte for byte what encoding/json
// writes for it with SetEscapeHTML(false) (zero fields left out as their
// tags say), its time in UTC. It does not allocate when dst has room; the
// JSONL sink and the SQLite journal use it on the hot path of every step.
func AppendJSON(dst []byte, e *Event) []byte {
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendInt(dst, e.Seq, 10)
	dst = append(dst, `,"time":"`...)
	dst = e.Time.UTC().AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, `","kind":`...)
	dst = value.AppendString(dst, string(e.Kind))
	dst = append(dst, `,"run_id":`...)
	dst = value.AppendString(dst, e.RunID)
	dst = appendStringField(dst, `,"flow":`, e.Flow)
	dst = appendStringField(dst, `,"step_id":`, e.StepID)
	dst = appendStringField(dst, `,"step_type":`, e.StepType)
	dst = appendIntField(dst, `,"attempt":`, int64(e.Attempt))
	dst = appendStringField(dst, `,"status":`, e.Status)
	if e.DurationMS != 0 {
		dst = appendFloat(append(dst, `,"duration_ms":`...), e.DurationMS)
	}
	dst = appendStringField(dst, `,"model":`, e.Model)
	dst = appendStringField(dst, `,"tool":`, e.Tool)
	dst = appendIntField(dst, `,"tokens_in":`, int64(e.TokensIn))
	dst = appendIntField(dst, `,"tokens_out":`, int64(e.TokensOut))
	dst = appendStringField(dst, `,"error_class":`, e.ErrorClass)
	dst = appendStringField(dst, `,"error":`, e.Error)
	dst = appendStringField(dst, `,"origin":`, string(e.Origin))
	dst = appendStringField(dst, `,"budget":`, e.Budget)
	dst = appendStringField(dst, `,"decision":`, e.Decision)
	dst = appendStringField(dst, `,"plan_step":`, e.PlanStep)
	dst = appendStringField(dst, `,"input_sha256":`, e.InputSHA)
	dst = appendStringField(dst, `,"output_sha256":`, e.OutputSHA)
	dst = appendStringField(dst, `,"preview":`, e.Preview)
	if p := &e.Process; *p != (Process{}) {
		dst = strconv.AppendInt(append(dst, `,"process":{"pgid":`...), int64(p.PGID), 10)
		if p.Start != 0 {
			dst = strconv.AppendUint(append(dst, `,"start":`...), p.Start, 10)
		}
		dst = appendStringField(dst, `,"boot":`, p.Boot)
		dst = appendStringField(dst, `,"owner":`, p.Owner)
		dst = append(dst, '}')
	}
	dst = appendIntField(dst, `,"turn":`, int64(e.Turn))
	dst = appendStringField(dst, `,"data":`, e.Data)
	return append(dst, '}')
}

func appendStringField(dst []byte, key, v string) []byte {
	if v == "" {
		return dst
	}
	return value.AppendString(append(dst, key...), v)
}

func appendIntField(dst []byte, key string, v int64) []byte {
	if v == 0 {
		return dst
	}
	return strconv.AppendInt(append(dst, key...), v, 10)
}

// appendFloat writes f as encoding/json does: the shortest representation
// that reads back as f, in exponent form only below 1e-6 or from 1e21 on.
func appendFloat(dst []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 becomes e-9, as encoding/json writes it.
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}
