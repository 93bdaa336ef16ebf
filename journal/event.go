package journal

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/reinhq/rein/value"
)

// Event is one entry of a run's record. Fields that do not apply are zero and
// are left out of the JSON encoding.
type Event struct {
	Seq      int64     `json:"seq"`
	Time     time.Time `json:"time"`
	Kind     Kind      `json:"kind"`
	RunID    string    `json:"run_id"`
	Flow     string    `json:"flow,omitempty"`
	StepID   string    `json:"step_id,omitempty"`
	StepType string    `json:"step_type,omitempty"`
	Attempt  int       `json:"attempt,omitempty"`
	Status   string    `json:"status,omitempty"`
	// DurationMS is what the event measured (a step, a model call, the
	// run), in milliseconds with nanosecond precision: 0.137 is 137 µs.
	// It is set on every event that measures something; it is left out
	// only where nothing ran (a skipped step, run_started). Journals
	// written before it was fractional hold whole numbers, read the same.
	DurationMS float64 `json:"duration_ms,omitempty"`
	Model      string  `json:"model,omitempty"`
	Tool       string  `json:"tool,omitempty"`
	TokensIn   int     `json:"tokens_in,omitempty"`
	TokensOut  int     `json:"tokens_out,omitempty"`
	ErrorClass string  `json:"error_class,omitempty"`
	Error      string  `json:"error,omitempty"`
	Origin     Origin  `json:"origin,omitempty"`
	Budget     string  `json:"budget,omitempty"`
	Decision   string  `json:"decision,omitempty"`
	// PlanStep names the plan step of a plan step's events.
	PlanStep  string `json:"plan_step,omitempty"`
	InputSHA  string `json:"input_sha256,omitempty"`
	OutputSHA string `json:"output_sha256,omitempty"`
	Preview   string `json:"preview,omitempty"`
	// Process is the process group a tool started (tool_process events).
	Process Process `json:"process,omitzero"`
	// Turn is the agent turn of agent_turn events and of an agent's call
	// events (agent_call events before version 3).
	Turn int `json:"turn,omitempty"`
	// Data is the record an event carries whole, as JSON text: agent_turn
	// (before version 4) the turn a resume rebuilds the agent's transcript
	// from, agent_call (before version 3) a call's outcome, gate_decision
	// (version 1) what the gate saw (safety.Basis).
	Data string `json:"data,omitempty"`
	// Call is the record of a call event (Kind CallRecorded): one
	// invocation's whole story.
	Call *Call `json:"call,omitempty"`
	// Remediation is the record of a remediation event (Kind Remediated):
	// what was done about one executed call (before version 3: JSON in
	// Data; DecodeRemediation reads both).
	Remediation *Remediation `json:"remediation,omitempty"`
	// AgentTurn is the record of an agent_turn event (Kind AgentTurn): the
	// turn a resume rebuilds the agent's transcript from, with its calls'
	// records (before version 4: JSON in Data).
	AgentTurn *Turn `json:"agent_turn,omitempty"`
	// Chain is the cause chain of an attempt_failed event's error (Chain):
	// the errors it wraps, a tool's stderr tail, a provider's error body;
	// bounded and redacted.
	Chain []Cause `json:"chain,omitempty"`
}

// Process identifies an operating-system process group that a tool
// started, and the process that started it, so that a resume in another
// process can find what is left of the group and stop it.
type Process struct {
	// PGID is the group's id (its leader's PID).
	PGID int `json:"pgid"`
	// Start is the leader's start time in clock ticks since boot (Linux);
	// 0 where unknown. With Boot it tells the group from a reused id.
	Start uint64 `json:"start,omitempty"`
	// Boot is the id of the boot Start counts from; "" where unknown.
	Boot string `json:"boot,omitempty"`
	// Owner is the lease owner of the process that started the tool
	// (engine.NewOwner: host, PID and PID namespace).
	Owner string `json:"owner,omitempty"`
	// Mark is the environment entry (NAME=VALUE) every process of the
	// tool's call inherits (tool.Process.Mark): what left the group
	// (setsid) is found by it. "" when the tool sets none.
	Mark string `json:"mark,omitempty"`
}

// PreviewBytes is the length to which Event.Preview is cut.
const PreviewBytes = 200

// Millis converts d to the milliseconds of Event.DurationMS.
func Millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Duration returns DurationMS as a time.Duration.
func (e *Event) Duration() time.Duration {
	return time.Duration(math.Round(e.DurationMS * float64(time.Millisecond)))
}

// AppendEvent appends e as one JSON object, byte for byte what encoding/json
// writes for it with SetEscapeHTML(false) (zero fields left out as their
// tags say), its time in UTC. It does not allocate when dst has room (but
// for a call event's record, which encoding/json writes); the
// JSONL sink and the stores' journals use it on the hot path of every step.
// DecodeEvent reads it back.
func AppendEvent(dst []byte, e *Event) []byte {
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
		dst = appendStringField(dst, `,"mark":`, p.Mark)
		dst = append(dst, '}')
	}
	dst = appendIntField(dst, `,"turn":`, int64(e.Turn))
	dst = appendStringField(dst, `,"data":`, e.Data)
	if e.Call != nil {
		dst = appendCall(append(dst, `,"call":`...), e.Call)
	}
	if e.Remediation != nil {
		dst = appendRemediation(append(dst, `,"remediation":`...), e.Remediation)
	}
	if e.AgentTurn != nil {
		dst = appendTurn(append(dst, `,"agent_turn":`...), e.AgentTurn)
	}
	if len(e.Chain) > 0 {
		dst = appendChain(append(dst, `,"chain":`...), e.Chain)
	}
	return append(dst, '}')
}

// DecodeEvent reads one event's JSON (what AppendEvent writes). Fields it
// does not know are ignored, and fields the data lacks are zero: a record
// of the same Version from an older rein reads. A time whose UTC year is
// outside 0–9999 is an error (AppendEvent could not write it back as JSON).
// Callers name the run and the sequence number.
func DecodeEvent(data []byte, e *Event) error {
	*e = Event{}
	if err := json.Unmarshal(data, e); err != nil {
		return err
	}
	if y := e.Time.UTC().Year(); y < 0 || y > 9999 {
		return fmt.Errorf("time %s is outside the years 0-9999 in UTC", e.Time.Format(time.RFC3339Nano))
	}
	if e.Call != nil {
		e.Call.dropEmpty()
	}
	if m := e.Remediation; m != nil {
		m.dropEmpty()
	}
	if t := e.AgentTurn; t != nil {
		t.dropEmpty()
	}
	if len(e.Chain) == 0 {
		e.Chain = nil
	}
	return nil
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
	if f > 0 && f < 1e9 {
		// a duration in milliseconds (Millis of whole nanoseconds) is n
		// millionths, n below 2^53: f is the double nearest n/1e6, so n's
		// digits with a point six places from the right, trailing zeros
		// cut, are its shortest form, what strconv writes after Ryu.
		if n := math.Round(f * 1e6); n/1e6 == f {
			return appendMillionths(dst, uint64(n))
		}
	}
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

// appendMillionths appends n/1e6 in decimal: "0.002014", "12.5", "3".
func appendMillionths(dst []byte, n uint64) []byte {
	whole, frac := n/1e6, n%1e6
	dst = strconv.AppendUint(dst, whole, 10)
	if frac == 0 {
		return dst
	}
	var b [7]byte
	b[0] = '.'
	for i := 6; i > 0; i-- {
		b[i] = byte('0' + frac%10)
		frac /= 10
	}
	end := 7
	for b[end-1] == '0' {
		end--
	}
	return append(dst, b[:end]...)
}

// ReadEvent decodes the stored event seq of run runID, written with record
// version version: a *VersionError for a record this binary cannot read,
// an error naming the run and the sequence number for one that does not
// decode or names another sequence number. A record stored without its
// sequence number or its run ID (the row holding it names them) gets
// them.
func ReadEvent(runID string, seq int64, version uint64, data []byte) (*Event, error) {
	if err := CheckVersion(runID, "seq "+strconv.FormatInt(seq, 10), version); err != nil {
		return nil, err
	}
	e := new(Event)
	if err := DecodeEvent(data, e); err != nil {
		return nil, fmt.Errorf("run %s seq %d: journal record does not decode (%w): the database is damaged", runID, seq, err)
	}
	switch e.Seq {
	case seq:
	case 0:
		e.Seq = seq
	default:
		return nil, fmt.Errorf("run %s seq %d: journal record says seq %d: the database is damaged", runID, seq, e.Seq)
	}
	if e.RunID == "" {
		e.RunID = runID
	}
	return e, nil
}
