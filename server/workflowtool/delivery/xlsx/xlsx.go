// Package xlsx renders a workflow task's deliverables as a spreadsheet,
// deliverables.xlsx, with excelize. Importing the package registers the
// format with server/workflowtool/delivery, so every delivery prepared
// from then on has it; it is the one package of rein that links excelize
// (cmd/rein imports it).
package xlsx

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/xuri/excelize/v2"

	"github.com/reinhq/rein/server/workflowtool/delivery"
)

// Name is the file Render writes in a delivery folder.
const Name = "deliverables.xlsx"

func init() { delivery.Register(delivery.Format{Name: Name, Render: Render}) }

// Render writes a workbook: a summary sheet (the task and every
// deliverable artifact) and one sheet per deliverable. A deliverable that
// is a list of objects (or an object holding one) becomes a table with a
// column per key; anything else is listed as pointer and value.
func Render(w io.Writer, t *delivery.Task) error {
	x := excelize.NewFile()
	defer x.Close()
	const summary = "summary"
	if err := x.SetSheetName("Sheet1", summary); err != nil {
		return err
	}
	rows := [][]any{{"task_id", t.ID}, {"workflow", t.Workflow}, {"status", string(t.Status)}, {},
		{"step_id", "producer", "attempt", "sha256"}}
	for _, a := range t.Deliverables {
		rows = append(rows, []any{a.StepID, a.Producer, a.Attempt, a.SHA256})
	}
	if err := setRows(x, summary, rows); err != nil {
		return err
	}
	for i, a := range t.Deliverables {
		var v any
		if err := json.Unmarshal(a.Output, &v); err != nil {
			return err
		}
		name := sheetName(a.StepID, i)
		if _, err := x.NewSheet(name); err != nil {
			return err
		}
		if err := setRows(x, name, table(v)); err != nil {
			return err
		}
	}
	return x.Write(w)
}

// sheetName is a valid, unique sheet name for the i-th deliverable
// (at most 31 characters, none of []:*?/\).
func sheetName(id string, i int) string {
	r := []rune(id)
	for k, c := range r {
		switch c {
		case '[', ']', ':', '*', '?', '/', '\\':
			r[k] = '_'
		}
	}
	if len(r) > 26 {
		r = r[:26]
	}
	return fmt.Sprintf("%d %s", i+1, string(r))
}

func setRows(x *excelize.File, sheet string, rows [][]any) error {
	for i, row := range rows {
		if len(row) == 0 {
			continue
		}
		cell, err := excelize.CoordinatesToCellName(1, i+1)
		if err != nil {
			return err
		}
		if err := x.SetSheetRow(sheet, cell, &row); err != nil {
			return err
		}
	}
	return nil
}

// table turns v into rows: a header and a row per object of a list of
// objects (found at the top or as the only list field of an object);
// otherwise pointer/value rows.
func table(v any) [][]any {
	if m, ok := v.(map[string]any); ok {
		var lists []string
		for k, e := range m {
			if objectList(e) {
				lists = append(lists, k)
			}
		}
		if len(lists) == 1 {
			v = m[lists[0]]
		}
	}
	if objectList(v) {
		items := v.([]any)
		cols := map[string]bool{}
		for _, it := range items {
			for k := range it.(map[string]any) {
				cols[k] = true
			}
		}
		keys := slices.Sorted(maps.Keys(cols))
		head := make([]any, len(keys))
		for i, k := range keys {
			head[i] = k
		}
		rows := [][]any{head}
		for _, it := range items {
			row := make([]any, len(keys))
			for i, k := range keys {
				row[i] = cellValue(it.(map[string]any)[k])
			}
			rows = append(rows, row)
		}
		return rows
	}
	rows := [][]any{{"pointer", "value"}}
	for _, l := range delivery.Leaves(v) {
		rows = append(rows, []any{l[0], l[1]})
	}
	return rows
}

func objectList(v any) bool {
	l, ok := v.([]any)
	if !ok || len(l) == 0 {
		return false
	}
	for _, e := range l {
		if _, ok := e.(map[string]any); !ok {
			return false
		}
	}
	return true
}

// cellValue is a JSON value as a cell: numbers, booleans and strings as
// themselves, anything else as its JSON.
func cellValue(v any) any {
	switch v.(type) {
	case string, float64, bool, nil:
		return v
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}
