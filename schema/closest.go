package schema

import "strings"

// Closest returns the candidate a mistyped word most likely meant: the same
// word in other letter case, the one candidate that starts with the word, or
// one within a few edits (a third of the word's length; a swap of two
// neighbouring letters is one edit); "" when none is close. A candidate
// whose differing part is wholly other is no typo of the word, however
// short that part: team-a is not a typo of team-b. lower holds the
// candidates in lower case.
func Closest(word string, candidates, lower []string) string {
	word = strings.ToLower(word)
	starting := -1
	for i, c := range lower {
		if c == word {
			return candidates[i]
		}
		if word != "" && strings.HasPrefix(c, word) {
			if starting >= 0 {
				starting = len(candidates) // more than one
			} else {
				starting = i
			}
		}
	}
	if starting >= 0 && starting < len(candidates) {
		return candidates[starting]
	}
	best, bestDistance := -1, len(word)/3+1
	for i, c := range lower {
		d := editDistance(word, c, bestDistance-1)
		if d < bestDistance && !replaced(word, c, d) {
			best, bestDistance = i, d
		}
	}
	if best < 0 {
		return ""
	}
	return candidates[best]
}

// replaced tells whether a and b, d edits apart, differ in a part that has
// nothing left of either: what lies between their common beginning and
// their common end is, on both sides, not empty, and takes as many edits as
// its longer side has letters.
func replaced(a, b string, d int) bool {
	prefix := 0
	for prefix < len(a) && prefix < len(b) && a[prefix] == b[prefix] {
		prefix++
	}
	suffix := 0
	for suffix < len(a)-prefix && suffix < len(b)-prefix && a[len(a)-1-suffix] == b[len(b)-1-suffix] {
		suffix++
	}
	restA, restB := len(a)-prefix-suffix, len(b)-prefix-suffix
	return restA > 0 && restB > 0 && d >= max(restA, restB)
}

// editDistance is the distance between a and b in bytes, counting an
// insertion, a deletion, a substitution and a swap of two neighbours as one
// edit each (optimal string alignment), or max+1 as soon as it is known to
// exceed max.
func editDistance(a, b string, max int) int {
	if len(a)-len(b) > max || len(b)-len(a) > max {
		return max + 1
	}
	// Three rows: the one before the previous, for swaps.
	before, prev, cur := make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], before[j-2]+1)
			}
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > max {
			return max + 1
		}
		before, prev, cur = prev, cur, before
	}
	return prev[len(b)]
}
