package schema

import (
	"regexp"
	"strconv"
)

// MemoryFloor is the least memory, in bytes, that a size setting should ask
// for: 1Mi. Less is almost surely a size whose unit was left out.
const MemoryFloor = 1 << 20

var smallSize = regexp.MustCompile(`^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(k|Ki)?$`)

// MemoryGuess proposes the size that a memory quantity below MemoryFloor most
// likely meant: a number without unit in Gi, or in Mi from 1024 on (16 is
// 16Gi, 4096 is 4096Mi); k and Ki one unit up (512Ki is 512Mi). "" when it
// cannot tell: zero, or any other unit.
func MemoryGuess(quantity string) string {
	m := smallSize.FindStringSubmatch(quantity)
	if m == nil {
		return ""
	}
	n, err := strconv.ParseFloat(m[1], 64)
	switch {
	case err != nil || n == 0:
		return ""
	case m[2] == "k":
		return m[1] + "M"
	case m[2] == "Ki":
		return m[1] + "Mi"
	case n < 1024:
		return m[1] + "Gi"
	default:
		return m[1] + "Mi"
	}
}
