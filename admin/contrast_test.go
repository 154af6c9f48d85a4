package admin_test

import (
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// themes returns the colours of the page's stylesheet, by the name of
// their custom property: the light theme's, and the dark theme's (the
// light ones with those the dark media query sets).
func themes(t *testing.T) (light, dark map[string]string) {
	b, err := os.ReadFile("assets/admin.css")
	require.NoError(t, err)
	css := string(b)
	root := strings.Index(css, ":root {")
	media := strings.Index(css, "@media (prefers-color-scheme: dark)")
	require.True(t, root >= 0 && media > root, "a :root block, then the dark theme's")
	end := media + strings.Index(css[media:], "\n}\n")
	prop := regexp.MustCompile(`--([a-z-]+): (#[0-9a-fA-F]{6})\b`)
	read := func(s string) map[string]string {
		m := map[string]string{}
		for _, p := range prop.FindAllStringSubmatch(s, -1) {
			m[p[1]] = p[2]
		}
		return m
	}
	light = read(css[root:media])
	dark = read(css[root:media])
	for k, v := range read(css[media:end]) {
		dark[k] = v
	}
	return light, dark
}

// luminance is the relative luminance of a colour #rrggbb, as WCAG 2
// defines it.
func luminance(t *testing.T, hex string) float64 {
	var l float64
	for i, w := range []float64{0.2126, 0.7152, 0.0722} {
		v, err := strconv.ParseUint(hex[1+2*i:3+2*i], 16, 8)
		require.NoError(t, err)
		c := float64(v) / 255
		if c <= 0.03928 {
			c /= 12.92
		} else {
			c = math.Pow((c+0.055)/1.055, 2.4)
		}
		l += w * c
	}
	return l
}

// contrast is the contrast ratio of two colours, from 1 to 21.
func contrast(t *testing.T, a, b string) float64 {
	la, lb := luminance(t, a), luminance(t, b)
	return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)
}

// Every colour of text on every background it is shown on reads at WCAG
// AA's 4.5:1, in the light theme and in the dark one; and the dark theme
// sets every colour the light one does.
func TestContrast(t *testing.T) {
	light, dark := themes(t)
	// The text colours and the backgrounds they are shown on: the
	// statuses and links on a row, hovered or not; the messages on
	// their boxes; the header's name and badge.
	pairs := [][2]string{
		{"fg", "bg"}, {"fg", "soft"}, {"fg", "flash-bg"}, {"fg", "warn-bg"}, {"fg", "error-bg"},
		{"bad", "error-bg"}, {"head-fg", "head-bg"}, {"head-bg", "head-fg"},
	}
	for _, fg := range []string{"muted", "accent", "ok", "bad", "warn", "run"} {
		pairs = append(pairs, [2]string{fg, "bg"}, [2]string{fg, "soft"})
	}
	for theme, colours := range map[string]map[string]string{"light": light, "dark": dark} {
		for _, p := range pairs {
			fg, bg := colours[p[0]], colours[p[1]]
			require.NotEmpty(t, fg, "%s: --%s", theme, p[0])
			require.NotEmpty(t, bg, "%s: --%s", theme, p[1])
			assert.GreaterOrEqual(t, contrast(t, fg, bg), 4.5, "%s theme: --%s %s on --%s %s", theme, p[0], fg, p[1], bg)
		}
	}
	for k, v := range light {
		assert.NotEqual(t, v, dark[k], "the dark theme keeps the light --%s", k)
	}
}
