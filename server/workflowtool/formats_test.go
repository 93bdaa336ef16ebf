package workflowtool_test

// The spreadsheet of a delivery is a format its package registers when
// imported; the tests prepare deliveries with it, as cmd/rein does.
import _ "github.com/reinhq/rein/server/workflowtool/delivery/xlsx"
