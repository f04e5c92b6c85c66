package validate

import (
	"regexp"
	"strconv"
	"strings"
	"time"

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
	case "jobName", "dnsLabel", "customLabelValue":
		fix = nameFix(value, false)
	case "dnsSubdomain":
		fix = nameFix(value, true)
	case "memory":
		fix = quantityFix(value)
	case "image":
		fix = imageFix(value)
	}
	// Propose only what the schema accepts.
	if fix == "" || (def.MaxLength != nil && len(fix) > *def.MaxLength) {
		return ""
	}
	if ok, err := regexp.MatchString(def.Pattern, fix); err != nil || !ok {
		return ""
	}
	return fix
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
