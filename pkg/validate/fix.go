package validate

import (
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/torchwrap/generator/schema"
)

// suggest proposes a corrected value for a string the schema refused, from the
// definition it failed: a duration in days written in hours, a name with its
// capitals and stray characters replaced. "" when there is nothing to propose.
func (x *explainer) suggest(node *schema.Schema, value string) string {
	def := node.Resolved()
	var fix string
	switch x.defs[def] {
	case "duration", "positiveDuration":
		fix = durationFix(value)
	case "jobName":
		fix = jobNameFix(value, *def.MaxLength)
	case "dnsLabel", "customLabelValue":
		fix = nameFix(value, false)
	case "dnsSubdomain", "priorityClassName":
		fix = nameFix(value, true)
	case "memory":
		fix = quantityFix(value)
	case "image":
		fix = imageFix(value)
	}
	// Propose only what the schema accepts.
	if fix == "" || !accepts(def, fix) {
		return ""
	}
	return fix
}

// accepts tells whether a definition's text rules accept s: its length, its
// pattern, not the pattern of its not, and those of each part of its allOf.
func accepts(def *schema.Schema, s string) bool {
	if def.MaxLength != nil && len(s) > *def.MaxLength {
		return false
	}
	if ok, err := regexp.MatchString(def.Pattern, s); err != nil || !ok {
		return false
	}
	if def.Not != nil && def.Not.Pattern != "" {
		if ok, err := regexp.MatchString(def.Not.Pattern, s); err != nil || ok {
			return false
		}
	}
	for _, part := range def.AllOf {
		if !accepts(part.Resolved(), s) {
			return false
		}
	}
	return true
}

var dayUnits = regexp.MustCompile(`([0-9]+(?:\.[0-9]+)?)(d|w)`)

// durationFix rewrites days and weeks, which Go durations do not have, in
// hours: 7d is 168h, 1d12h is 24h12h (which Go reads as 36h).
func durationFix(value string) string {
	fixed := dayUnits.ReplaceAllStringFunc(value, func(m string) string {
		parts := dayUnits.FindStringSubmatch(m)
		n, err := strconv.ParseFloat(parts[1], 64)
		if err != nil {
			return m
		}
		hours := n * 24
		if parts[2] == "w" {
			hours *= 7
		}
		return strconv.FormatFloat(hours, 'f', -1, 64) + "h"
	})
	d, err := time.ParseDuration(fixed)
	if err != nil || d < 0 {
		return ""
	}
	s := d.String() // 36h0m0s: drop the zero minutes and seconds
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// nameFix lowercases a name and replaces what a DNS label may not hold.
func nameFix(value string, dots bool) string {
	var b strings.Builder
	for _, r := range strings.ToLower(value) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '.' && dots:
			b.WriteRune(r)
		default:
			b.WriteRune('-')
		}
	}
	return strings.Trim(b.String(), "-.")
}

// jobNameFix makes a job name of value: nameFix, then "job-" before a leading
// digit, cut to max characters without a final '-'.
func jobNameFix(value string, max int) string {
	fix := nameFix(value, false)
	if fix != "" && fix[0] >= '0' && fix[0] <= '9' {
		fix = "job-" + fix
	}
	if len(fix) > max {
		fix = strings.TrimRight(fix[:max], "-")
	}
	return fix
}

// jobNameProblems says what exactly is wrong with a job name of at most max
// characters, or "" when it cannot say (an empty name).
func jobNameProblems(value string, max int) string {
	if value == "" {
		return ""
	}
	var problems []string
	switch value[0] {
	case '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		problems = append(problems, "it starts with a digit, not a letter")
	case '-':
		problems = append(problems, `it starts with "-", not a letter`)
	}
	if strings.HasSuffix(value, "-") {
		problems = append(problems, `it ends with "-", not a letter or digit`)
	}
	var held []string
	for _, r := range value {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
		case unicode.IsUpper(r):
			if !slices.Contains(held, "capital letters") {
				held = append(held, "capital letters")
			}
		case !slices.Contains(held, strconv.Quote(string(r))):
			held = append(held, strconv.Quote(string(r)))
		}
	}
	if len(held) > 0 {
		problems = append(problems, "it holds "+schema.AndList(held)+", but only lowercase letters, digits and '-' are allowed")
	}
	if n := utf8.RuneCountInString(value); n > max {
		problems = append(problems, fmt.Sprintf("it is %d characters long, more than %d", n, max))
	}
	return strings.Join(problems, "; ")
}

// memoryUnitFix proposes a size with a unit for a number written where a
// memory size belongs (16 is 16Gi), when it is too small to be a number of
// bytes; "" otherwise.
func memoryUnitFix(value any) string {
	n, ok := value.(json.Number)
	if !ok {
		return ""
	}
	if f, err := n.Float64(); err != nil || f >= schema.MemoryFloor {
		return ""
	}
	return schema.MemoryGuess(n.String())
}

// milliCPUFix writes a number of CPUs with a fraction in millicores (0.5 is
// 500m), when that is exact; "" otherwise.
func milliCPUFix(value any) string {
	n, ok := value.(json.Number)
	if !ok {
		return ""
	}
	r, ok := new(big.Rat).SetString(n.String())
	if !ok || r.Sign() <= 0 || r.IsInt() {
		return ""
	}
	if r.Mul(r, big.NewRat(1000, 1)); !r.IsInt() {
		return ""
	}
	return r.Num().String() + "m"
}

var bytesSuffix = regexp.MustCompile(`^([0-9.]+)\s*([kKmMgGtTpPeE])(i?)[bB]?$`)

// quantityFix turns the usual ways of writing sizes (64GB, 64 gi) into a
// Kubernetes quantity (64Gi or 64G).
func quantityFix(value string) string {
	m := bytesSuffix.FindStringSubmatch(strings.TrimSpace(value))
	if m == nil {
		return ""
	}
	unit := strings.ToUpper(m[2])
	if unit == "K" && m[3] == "" {
		unit = "k"
	}
	if m[3] != "" || strings.HasSuffix(strings.ToLower(value), "ib") {
		return m[1] + unit + "i"
	}
	return m[1] + unit
}

// imageFix lowercases an image's repository path, which runtimes require to
// be lowercase, and keeps its tag and digest as they are.
func imageFix(value string) string {
	name, digest, hasDigest := strings.Cut(strings.TrimSpace(value), "@")
	tag := ""
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, tag = name[:i], name[i:]
	}
	fixed := strings.ToLower(name) + tag
	if hasDigest {
		fixed += "@" + digest
	}
	return fixed
}
