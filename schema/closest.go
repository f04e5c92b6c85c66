package schema

import "strings"

// Closest returns the candidate a mistyped word most likely meant: the same
// word in other letter case, the one candidate that starts with the word, or
// one within a few edits; "" when none is close. lower holds the candidates
// in lower case.
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
		if d := editDistance(word, c, bestDistance); d < bestDistance || (d == bestDistance && best < 0) {
			best, bestDistance = i, d
		}
	}
	if best < 0 {
		return ""
	}
	return candidates[best]
}

// editDistance is the Levenshtein distance between a and b, in bytes, or
// max+1 as soon as it is known to exceed max.
func editDistance(a, b string, max int) int {
	if len(a)-len(b) > max || len(b)-len(a) > max {
		return max + 1
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
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
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > max {
			return max + 1
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
