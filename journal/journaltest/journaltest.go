// Package journaltest fills journal records by reflection and compares
// them field by field, so that a test of an encoding covers every field of
// a record type, including the ones added after the test was written.
package journaltest

import (
	"fmt"
	"reflect"
	"strconv"
	"time"
)

var timeType = reflect.TypeFor[time.Time]()

// Fill sets every field of the struct ptr points to, recursively, to a
// non-zero value of its type that no other field gets (strings carry the
// field's path and characters JSON escapes, numbers a distinct count,
// byte slices a small JSON object, times a distinct UTC instant with
// nanoseconds). It returns the paths of the fields it set, or an error
// naming a field of a kind it cannot fill (extend Fill for it).
func Fill(ptr any) ([]string, error) {
	v := reflect.ValueOf(ptr)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("journaltest.Fill: want a pointer to a struct, got %T", ptr)
	}
	f := filler{}
	err := f.fill(v.Elem(), v.Elem().Type().Name())
	return f.paths, err
}

type filler struct {
	n     int
	paths []string
}

func (f *filler) fill(v reflect.Value, path string) error {
	if v.Type() == timeType {
		f.leaf(path)
		v.Set(reflect.ValueOf(time.Date(2026, 12, 4, 10, 0, f.n, 123456789+f.n, time.UTC)))
		return nil
	}
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			sf := t.Field(i)
			p := path + "." + sf.Name
			if !sf.IsExported() {
				return fmt.Errorf("journaltest.Fill: field %s is unexported: a record holds exported fields only", p)
			}
			if err := f.fill(v.Field(i), p); err != nil {
				return err
			}
		}
		return nil
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		return f.fill(v.Elem(), path)
	case reflect.String:
		f.leaf(path)
		v.SetString(path + "-" + strconv.Itoa(f.n) + " \"q\" <&> \u2028 ✓\n")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		f.leaf(path)
		v.SetInt(int64(f.n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		f.leaf(path)
		v.SetUint(uint64(f.n))
	case reflect.Float32, reflect.Float64:
		f.leaf(path)
		v.SetFloat(float64(f.n) + 0.137482)
	case reflect.Bool:
		f.leaf(path)
		v.SetBool(true)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			f.leaf(path)
			v.SetBytes(fmt.Appendf(nil, `{"%s":%d}`, path, f.n))
			return nil
		}
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		return f.fill(v.Index(0), path+"[0]")
	default:
		return fmt.Errorf("journaltest.Fill: field %s is of kind %s, which Fill does not know: extend journaltest.Fill", path, v.Kind())
	}
	return nil
}

func (f *filler) leaf(path string) {
	f.n++
	f.paths = append(f.paths, path)
}

// Diff compares want and got (values of one struct type) field by field,
// recursively, and returns one line per field that differs, naming its
// path: "Event.PlanStep: got "", want "Event.PlanStep-21 …"". Times are
// equal when they are the same instant in the same location.
func Diff(want, got any) []string {
	var out []string
	diff(reflect.ValueOf(want), reflect.ValueOf(got), reflect.TypeOf(want).Name(), &out)
	return out
}

func diff(want, got reflect.Value, path string, out *[]string) {
	switch {
	case want.Kind() == reflect.Pointer:
		if want.IsNil() || got.IsNil() {
			if want.IsNil() != got.IsNil() {
				*out = append(*out, fmt.Sprintf("%s: got %v, want %v", path, got, want))
			}
			return
		}
		diff(want.Elem(), got.Elem(), path, out)
	case want.Type() == timeType:
		w, g := want.Interface().(time.Time), got.Interface().(time.Time)
		if !w.Equal(g) || w.Location() != g.Location() {
			*out = append(*out, fmt.Sprintf("%s: got %v, want %v", path, g, w))
		}
	case want.Kind() == reflect.Struct:
		for i := range want.NumField() {
			diff(want.Field(i), got.Field(i), path+"."+want.Type().Field(i).Name, out)
		}
	default:
		if !reflect.DeepEqual(want.Interface(), got.Interface()) {
			*out = append(*out, fmt.Sprintf("%s: got %#v, want %#v", path, got.Interface(), want.Interface()))
		}
	}
}
