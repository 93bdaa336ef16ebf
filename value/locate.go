package value

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Locate adds the line and column to a JSON syntax error of data (as
// encoding/json returns it); any other error comes back as it is. The
// error's Offset counts the bytes read including the offending one, so that
// byte is at Offset-1.
func Locate(data []byte, err error) error {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return err
	}
	line, col := 1, 1
	for i := 0; i < int(se.Offset)-1 && i < len(data); i++ {
		if data[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Errorf("line %d col %d: %w", line, col, err)
}
