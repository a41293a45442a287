package bench

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image/color"
)

// svgCanvas writes SVG elements by hand, in pixels from the top left.
type svgCanvas struct{ b bytes.Buffer }

func hexColor(c color.RGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

func (s *svgCanvas) line(x1, y1, x2, y2 float64, c color.RGBA, w float64) {
	fmt.Fprintf(&s.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%g"/>`+"\n",
		x1, y1, x2, y2, hexColor(c), w)
}

func (s *svgCanvas) polyline(pts [][2]float64, c color.RGBA, w float64) {
	fmt.Fprintf(&s.b, `<polyline fill="none" stroke="%s" stroke-width="%g" stroke-linejoin="round" points="`, hexColor(c), w)
	for i, p := range pts {
		if i > 0 {
			s.b.WriteByte(' ')
		}
		fmt.Fprintf(&s.b, "%.1f,%.1f", p[0], p[1])
	}
	s.b.WriteString("\"/>\n")
}

// text draws str with its baseline at y; anchor is "start", "middle" or
// "end".
func (s *svgCanvas) text(x, y float64, str, anchor string, c color.RGBA) {
	fmt.Fprintf(&s.b, `<text x="%.1f" y="%.1f" text-anchor="%s" fill="%s">`, x, y, anchor, hexColor(c))
	_ = xml.EscapeText(&s.b, []byte(str))
	s.b.WriteString("</text>\n")
}

// PlotSVG returns the report's plot as an SVG document.
func PlotSVG(r *Report) []byte {
	var s svgCanvas
	fmt.Fprintf(&s.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="13">`+"\n",
		plotW, plotH, plotW, plotH)
	fmt.Fprintf(&s.b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", plotW, plotH)
	draw(&s, r)
	s.b.WriteString("</svg>\n")
	return s.b.Bytes()
}
