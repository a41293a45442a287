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

// set paints one pixel, ignoring those outside the image.
func (p *pngCanvas) set(x, y int, c color.RGBA) {
	if x < 0 || y < 0 || x >= plotW || y >= plotH {
		return
	}
	i := y*p.img.Stride + 4*x
	p.img.Pix[i], p.img.Pix[i+1], p.img.Pix[i+2], p.img.Pix[i+3] = c.R, c.G, c.B, c.A
}

func (p *pngCanvas) dot(x, y int, half int, c color.RGBA) {
	for dy := -half; dy <= half; dy++ {
		for dx := -half; dx <= half; dx++ {
			p.set(x+dx, y+dy, c)
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
						p.set(x0+i*adv+col*fontScale+dx, y0+row*fontScale+dy, c)
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
	img.Pix[0] = 0xff
	for n := 1; n < len(img.Pix); n *= 2 { // white, by doubling copies
		copy(img.Pix[n:], img.Pix[:n])
	}
	draw(&pngCanvas{img: img}, r)
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
