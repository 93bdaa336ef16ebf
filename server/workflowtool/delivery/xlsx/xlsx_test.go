package xlsx_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"

	"github.com/reinhq/rein/server/workflowtool/delivery"
	"github.com/reinhq/rein/server/workflowtool/delivery/xlsx"
	"github.com/reinhq/rein/trace"
)

// Importing the package adds deliverables.xlsx to every delivery.
func TestRegistered(t *testing.T) {
	t.Parallel()
	if !slices.ContainsFunc(delivery.Formats(), func(f delivery.Format) bool { return f.Name == xlsx.Name }) {
		t.Errorf("Formats() has no %s once package xlsx is imported", xlsx.Name)
	}
}

// A list of objects becomes a table, a column per key; anything else
// pointer and value rows; the summary lists the deliverables. The same
// task gives the same bytes.
func TestRender(t *testing.T) {
	t.Parallel()
	task := &delivery.Task{ID: "r1", Workflow: "orders", Status: trace.RunSucceeded, Deliverables: []delivery.Artifact{
		{StepID: "assign", Producer: "adapter:a", Attempt: 1, SHA256: "bb",
			Output: json.RawMessage(`{"assignments":[{"item":"frame","material":"steel"},{"item":"bracket","qty":2}],"route":"weld"}`)},
		{StepID: "a/b:c*d?[e]", Output: json.RawMessage(`{"n":1,"s":"x"}`)},
	}}
	var a, b bytes.Buffer
	if err := xlsx.Render(&a, task); err != nil {
		t.Fatal(err)
	}
	if err := xlsx.Render(&b, task); err != nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Errorf("rendered twice, the bytes differ (%v)", err)
	}
	x, err := excelize.OpenReader(&a)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if got := x.GetSheetList(); !slices.Equal(got, []string{"summary", "1 assign", "2 a_b_c_d__e_"}) {
		t.Errorf("sheets = %q", got)
	}
	for sheet, want := range map[string]string{
		"summary":       "task_id,r1|workflow,orders|status,succeeded||step_id,producer,attempt,sha256|assign,adapter:a,1,bb|a/b:c*d?[e],,0",
		"1 assign":      "item,material,qty|frame,steel|bracket,,2",
		"2 a_b_c_d__e_": "pointer,value|/n,1|/s,x",
	} {
		rows, err := x.GetRows(sheet)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rows {
			got = append(got, strings.Join(r, ","))
		}
		if strings.Join(got, "|") != want {
			t.Errorf("sheet %q = %q, want %q", sheet, strings.Join(got, "|"), want)
		}
	}
}
