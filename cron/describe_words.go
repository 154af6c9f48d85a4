package cron

import (
	"strconv"
	"strings"
)

// consecutive returns the runs of consecutive values in v, which is
// sorted, as first and last value.
func consecutive(v []int) [][2]int {
	var r [][2]int
	for _, x := range v {
		if n := len(r); n > 0 && r[n-1][1] == x-1 {
			r[n-1][1] = x
			continue
		}
		r = append(r, [2]int{x, x})
	}
	return r
}

// enumerate joins items as a list in English: "a", "a and b", "a, b and
// c", with "or" for and if asked.
func enumerate(items []string, and string) string {
	switch n := len(items); n {
	case 0:
		return ""
	case 1:
		return items[0]
	default:
		return strings.Join(items[:n-1], ", ") + " " + and + " " + items[n-1]
	}
}

// plural returns "minute" for 1, "5 minutes" for 5.
func plural(n int, unit string) string {
	if n == 1 {
		return unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

// ordinal returns "hour" for 1, "2nd hour" for 2, "11th hour" for 11,
// "21st hour" for 21.
func ordinal(n int, unit string) string {
	suffix := "th"
	switch {
	case n == 1:
		return unit
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix + " " + unit
}

func pad2(n int) string {
	if n < 10 {
		return "0" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}
