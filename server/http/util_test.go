package http_test

import "encoding/json"

func jsonOf(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}
