// Package suggest finds the name a user most likely meant: "did you mean" for config keys,
// DSL methods and options.
package suggest

// Closest returns the candidate nearest to name by edit distance, if it is near
// enough to be a plausible typo.
func Closest(name string, candidates []string) (string, bool) {
	best, bestDist := "", -1
	for _, c := range candidates {
		d := Distance(name, c)
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	limit := max(2, len(name)/3)
	return best, bestDist >= 0 && bestDist <= limit
}

// Distance is the optimal-string-alignment distance: insertions,
// deletions, substitutions and swaps of neighbours each cost 1, so that
// "cmomit" is as close to "commit" as "comit" is.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
