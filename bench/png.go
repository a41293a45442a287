package bench

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"unicode/utf8"
)

// pngCanvas rasterises the plot: square-brush lines and a scaled bitmap
// font, no anti-aliasing. It is enough to look at a run without an SVG
// viewer.
type pngCanvas struct{ img *image.RGBA }

var _ canvas = (*pngCanvas)(nil)

// fontScale is the size of one font cell in pixels.
const fontScale = 2

func (p *pngCanvas) dot(x, y int, half int, c color.RGBA) {
	for dy := -half; dy <= half; dy++ {
		for dx := -half; dx <= half; dx++ {
			if image.Pt(x+dx, y+dy).In(p.img.Rect) {
				p.img.SetRGBA(x+dx, y+dy, c)
			}
		}
	}
}

func (p *pngCanvas) line(x1, y1, x2, y2 float64, c color.RGBA, w float64) {
	half := int(math.Max(0, math.Round(w/2-0.5)))
	n := int(math.Max(math.Abs(x2-x1), math.Abs(y2-y1))) + 1
	for i := 0; i <= n; i++ {
		t := float64(i) / float64(n)
		p.dot(int(math.Round(x1+(x2-x1)*t)), int(math.Round(y1+(y2-y1)*t)), half, c)
	}
}

func (p *pngCanvas) polyline(pts [][2]float64, c color.RGBA, w float64) {
	for i := 1; i < len(pts); i++ {
		p.line(pts[i-1][0], pts[i-1][1], pts[i][0], pts[i][1], c, w)
	}
}

func (p *pngCanvas) text(x, y float64, s, anchor string, c color.RGBA) {
	adv := 6 * fontScale
	width := float64(utf8.RuneCountInString(s)*adv - fontScale)
	switch anchor {
	case "middle":
		x -= width / 2
	case "end":
		x -= width
	}
	x0, y0 := int(math.Round(x)), int(math.Round(y))-7*fontScale
	i := 0
	for _, r := range s {
		for row, cells := range glyph(r) {
			for col, cell := range cells {
				if cell != '#' {
					continue
				}
				for dy := range fontScale {
					for dx := range fontScale {
						px, py := x0+i*adv+col*fontScale+dx, y0+row*fontScale+dy
						if image.Pt(px, py).In(p.img.Rect) {
							p.img.SetRGBA(px, py, c)
						}
					}
				}
			}
		}
		i++
	}
}

// PlotPNG returns the report's plot as a PNG image.
func PlotPNG(r *Report) ([]byte, error) {
	img := image.NewRGBA(image.Rect(0, 0, plotW, plotH))
	for i := range img.Pix {
		img.Pix[i] = 0xff
	}
	draw(&pngCanvas{img: img}, r)
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
