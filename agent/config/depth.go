package config

import "fmt"

// maxNesting bounds how deep a config file nests tables and arrays, counting each dotted
// key part as a level ([streams.producer] and linger.ms are four). StoatFlow's keys need
// about ten; the TOML decoder takes time that grows with the square of the depth, so a file
// nested 10,000 deep kept validate busy for half a minute.
const maxNesting = 64

// checkNesting scans a TOML text, skipping strings and comments, for nesting deeper than
// maxNesting, before the decoder sees it. It returns the line of the first such place.
func checkNesting(data []byte) (line int, err error) {
	type frame struct{ table bool } // an inline table (keys inside) or an array
	var stack []frame
	line, dots := 1, 0
	inKey := true // at a key: the start of a line at the top, or inside an inline table
	header := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case c == '\n':
			line++
			if len(stack) == 0 {
				inKey, header, dots = true, false, 0
			}
		case c == '#':
			for i < len(data) && data[i] != '\n' {
				i++
			}
			i--
		case c == '"' || c == '\'':
			end, lines := skipString(data, i)
			i, line = end, line+lines
		case inKey && c == '.':
			dots++
		case inKey && c == '=':
			inKey = false
		case c == '[' && len(stack) == 0 && inKey && !header:
			header = true // a table header: [a.b] or [[a.b]]
		case c == ']' && header:
		case c == '[' || c == '{':
			stack = append(stack, frame{table: c == '{'})
			inKey, dots = c == '{', 0
		case (c == ']' || c == '}') && len(stack) > 0:
			stack = stack[:len(stack)-1]
			inKey, dots = false, 0
		case c == ',' && len(stack) > 0 && stack[len(stack)-1].table:
			inKey, dots = true, 0
		}
		if len(stack)+dots > maxNesting {
			return line, fmt.Errorf("nested more than %d levels deep (tables, arrays and dotted key parts)", maxNesting)
		}
	}
	return 0, nil
}

// skipString returns the index of the last byte of the string that starts at data[i] (basic
// or literal, single- or multi-line) and the new lines it holds. An unterminated string ends
// the text: the decoder reports it.
func skipString(data []byte, i int) (end, lines int) {
	q := data[i]
	multi := i+2 < len(data) && data[i+1] == q && data[i+2] == q
	j := i + 1
	if multi {
		j = i + 3
	}
	for ; j < len(data); j++ {
		switch c := data[j]; {
		case c == '\\' && q == '"':
			j++
			if j < len(data) && data[j] == '\n' {
				lines++
			}
		case c == '\n':
			lines++
			if !multi {
				return j - 1, lines - 1
			}
		case c == q && !multi:
			return j, lines
		case c == q && j+2 < len(data) && data[j+1] == q && data[j+2] == q:
			// A closing """ may be followed by up to two more quotes, part of the string.
			for j+3 < len(data) && data[j+3] == q {
				j++
			}
			return j + 2, lines
		}
	}
	return len(data) - 1, lines
}
