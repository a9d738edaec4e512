package harness

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// writeChart draws two panels side by side, as a PNG: on the left the
// last stream's fan-out latency against N for each server (and the
// go-sdk's less its debounce), medians over runs; on the right the paired
// ratios ours ÷ floor and ours ÷ go-sdk against N, for that latency and for
// the server CPU per delivered notification.
//
// The axes hold log10 of the values, with ticks labelled in the values
// themselves: gonum's LogScale places a centred axis label by the linear
// midpoint of the range, which pushes the plot down.
func writeChart(res *Results, path string) error {
	rp := newReport(res)
	lat, err := latencyPlot(rp)
	if err != nil {
		return err
	}
	rat, err := ratioPlot(rp)
	if err != nil {
		return err
	}
	const width, height = 14 * vg.Inch, 6 * vg.Inch
	img := vgimg.New(width, height)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Points(18), PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(6)}
	plots := [][]*plot.Plot{{lat, rat}}
	canvases := plot.Align(plots, tiles, dc)
	lat.Draw(canvases[0][0])
	rat.Draw(canvases[0][1])
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

var (
	serverColors = map[string]color.Color{
		Ours.ID:  color.RGBA{R: 0x1f, G: 0x5f, B: 0xbf, A: 0xff},
		Floor.ID: color.RGBA{R: 0x20, G: 0x90, B: 0x40, A: 0xff},
		GoSDK.ID: color.RGBA{R: 0xd0, G: 0x40, B: 0x20, A: 0xff},
	}
	dashes = [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(2), vg.Points(2)}}
	shapes = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.RingGlyph{}}
)

// bounds tracks the data's range on both axes.
type bounds struct{ xlo, xhi, ylo, yhi float64 }

func newBounds() *bounds { return &bounds{math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)} }

func (b *bounds) add(x, y float64) {
	b.xlo, b.xhi = math.Min(b.xlo, x), math.Max(b.xhi, x)
	b.ylo, b.yhi = math.Min(b.ylo, y), math.Max(b.yhi, y)
}

// addLine adds a log-log line with points to p.
func addLine(p *plot.Plot, bd *bounds, label string, xs, ys []float64, c color.Color, dash []vg.Length, shape draw.GlyphDrawer) error {
	var pts plotter.XYs
	for i := range xs {
		if math.IsNaN(ys[i]) || ys[i] <= 0 {
			continue
		}
		pts = append(pts, plotter.XY{X: math.Log10(xs[i]), Y: math.Log10(ys[i])})
		bd.add(xs[i], ys[i])
	}
	if len(pts) == 0 {
		return nil
	}
	line, sc, err := plotter.NewLinePoints(pts)
	if err != nil {
		return err
	}
	line.Color, line.Width, line.Dashes = c, vg.Points(2), dash
	sc.Color, sc.Shape, sc.Radius = c, shape, vg.Points(3.5)
	p.Add(line, sc)
	p.Legend.Add(label, line, sc)
	return nil
}

func newLogPlot(title, xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(12)
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	p.Add(plotter.NewGrid())
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	return p
}

// setLogAxes sets whole decades around bd (ratios: the y axis in 1, 2, 5
// steps around 1 too).
func setLogAxes(p *plot.Plot, bd *bounds, ratio bool) {
	if math.IsInf(bd.ylo, 1) {
		bd = &bounds{10, 100, 1, 10}
		p.Title.Text += " (no data)"
	}
	if ratio {
		bd.ylo, bd.yhi = math.Min(bd.ylo, 0.9), math.Max(bd.yhi, 1.1)
	}
	p.Y.Min = math.Floor(math.Log10(bd.ylo))
	p.Y.Max = math.Ceil(math.Log10(bd.yhi * 1.3))
	p.X.Min = math.Floor(math.Log10(bd.xlo))
	p.X.Max = math.Ceil(math.Log10(bd.xhi))
	if p.X.Max == p.X.Min {
		p.X.Max++
	}
	p.X.Tick.Marker = logTicks(func(v float64) string { return commas(int(v)) }, false)
	p.Y.Tick.Marker = logTicks(func(v float64) string {
		if v >= 1000 {
			return commas(int(v))
		}
		return strconv.FormatFloat(v, 'f', -1, 64)
	}, true)
}

func latencyPlot(rp *report) (*plot.Plot, error) {
	cfg := rp.cfg
	p := newLogPlot("Fan-out: trigger call → last stream's notification",
		"open listen streams N (log scale)", fmt.Sprintf("ms (log scale; median of %s)", plural(cfg.Runs, "run")))
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(8), -vg.Points(8)
	bd := newBounds()
	xs := make([]float64, len(cfg.Ns))
	for k, n := range cfg.Ns {
		xs[k] = float64(n)
	}
	for i, s := range rp.res.Servers {
		ys := make([]float64, len(cfg.Ns))
		less := make([]float64, len(cfg.Ns))
		for k := range cfg.Ns {
			a := rp.agg(i, k)
			ys[k], less[k] = math.NaN(), math.NaN()
			if a == nil || !a.Full {
				continue
			}
			ys[k] = a.get(mLast, 0).Median
			less[k] = a.get(mLast, rp.debounceMS()).Median
		}
		if err := addLine(p, bd, s.Kind.Name, xs, ys, serverColors[s.Kind.ID], nil, shapes[i%len(shapes)]); err != nil {
			return nil, err
		}
		if s.Kind.ID == GoSDK.ID {
			if err := addLine(p, bd, fmt.Sprintf("go-sdk − %v debounce", cfg.Debounce), xs, less, serverColors[s.Kind.ID], dashes[1], shapes[3]); err != nil {
				return nil, err
			}
		}
	}
	setLogAxes(p, bd, false)
	return p, nil
}

func ratioPlot(rp *report) (*plot.Plot, error) {
	cfg := rp.cfg
	p := newLogPlot("ours ÷ floor and ours ÷ go-sdk (paired by round)",
		"open listen streams N (log scale)", fmt.Sprintf("ratio (log scale; median of %s; below 1: ours is lower)", plural(cfg.Runs, "round")))
	p.Legend.Top, p.Legend.Left = true, false
	p.Legend.XOffs, p.Legend.YOffs = -vg.Points(8), -vg.Points(8)
	bd := newBounds()
	xs := make([]float64, len(cfg.Ns))
	for k, n := range cfg.Ns {
		xs[k] = float64(n)
	}
	type curve struct {
		label string
		get   func(r row) Summary
		color color.Color
		dash  []vg.Length
		shape draw.GlyphDrawer
		m     metric
	}
	fc, gc := serverColors[Floor.ID], serverColors[GoSDK.ID]
	curves := []curve{
		{"last stream: ours ÷ floor", func(r row) Summary { return r.vsFloor }, fc, nil, shapes[0], mLast},
		{"last stream: ours ÷ go-sdk", func(r row) Summary { return r.vsSDK }, gc, nil, shapes[0], mLast},
		{fmt.Sprintf("last stream: ours ÷ (go-sdk − %v)", cfg.Debounce), func(r row) Summary { return r.vsSDKLess }, gc, dashes[1], shapes[3], mLast},
		{"CPU per notification: ours ÷ floor", func(r row) Summary { return r.vsFloor }, fc, dashes[2], shapes[2], mCPU},
		{"CPU per notification: ours ÷ go-sdk", func(r row) Summary { return r.vsSDK }, gc, dashes[2], shapes[2], mCPU},
	}
	for _, c := range curves {
		ys := make([]float64, len(cfg.Ns))
		for k := range cfg.Ns {
			ys[k] = c.get(rp.row(c.m, k)).Median
		}
		if err := addLine(p, bd, c.label, xs, ys, c.color, c.dash, c.shape); err != nil {
			return nil, err
		}
	}
	// The parity line.
	one, err := plotter.NewLine(plotter.XYs{{X: -10, Y: 0}, {X: 10, Y: 0}})
	if err != nil {
		return nil, err
	}
	one.Color, one.Width = color.Gray{Y: 0x60}, vg.Points(1)
	p.Add(one)
	setLogAxes(p, bd, true)
	return p, nil
}

// logTicks marks every 1…9 × 10^k between the axis bounds (log10 values),
// labelling 1, 2 and 5 of each decade (only 1 unless with125).
func logTicks(label func(float64) string, with125 bool) plot.Ticker {
	return plot.TickerFunc(func(lo, hi float64) []plot.Tick {
		var ticks []plot.Tick
		for e := math.Floor(lo); e <= hi; e++ {
			for i := 1; i < 10; i++ {
				v := float64(i) * math.Pow10(int(e))
				lv := math.Log10(v)
				if lv < lo-1e-9 || lv > hi+1e-9 {
					continue
				}
				t := plot.Tick{Value: lv}
				if i == 1 || (with125 && (i == 2 || i == 5)) {
					t.Label = label(v)
				}
				ticks = append(ticks, t)
			}
		}
		return ticks
	})
}
