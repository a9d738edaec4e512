package harness

import (
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// writeChart draws delivery latency (p50, p99, last stream; medians over
// runs and triggers) against N for both servers, on log-log axes, as a PNG.
//
// The axes hold log10 of the values, with ticks labelled in the values
// themselves: gonum's LogScale places a centred axis label by the linear
// midpoint of the range, which pushes the plot down.
func writeChart(res *Results, path string) error {
	p := plot.New()
	p.Title.Text = "subscriptions/listen fan-out over loopback HTTP: trigger call → notification on each stream"
	p.Title.TextStyle.Font.Size = vg.Points(12)
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = "open listen streams N (log scale)"
	p.Y.Label.Text = "delivery latency, ms (log scale; median over runs × triggers)"
	p.Add(plotter.NewGrid())
	// Latency grows with N: the bottom right corner is free.
	p.Legend.Top = false
	p.Legend.Left = false
	p.Legend.XOffs = -vg.Points(8)
	p.Legend.YOffs = vg.Points(8)
	p.Legend.TextStyle.Font.Size = vg.Points(10)

	colors := []color.Color{color.RGBA{R: 0x1f, G: 0x5f, B: 0xbf, A: 0xff}, color.RGBA{R: 0xd0, G: 0x40, B: 0x20, A: 0xff}}
	dashes := [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(2), vg.Points(2)}}
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}}
	stats := []struct {
		name string
		get  func(*fanAgg) Summary
	}{
		{"p50", func(a *fanAgg) Summary { return a.P50 }},
		{"p99", func(a *fanAgg) Summary { return a.P99 }},
		{"last stream", func(a *fanAgg) Summary { return a.Last }},
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	nmin, nmax := math.Inf(1), math.Inf(-1)
	for si, s := range res.Servers {
		name := "ours"
		if s.Kind.ID == GoSDK.ID {
			name = "go-sdk v1.8.0"
		}
		for k, st := range stats {
			var pts plotter.XYs
			for _, set := range s.Fanout {
				a := aggregate(set, s.Idle)
				v := st.get(&a)
				if !a.Full || !v.ok() || v.Median <= 0 {
					continue
				}
				pts = append(pts, plotter.XY{X: math.Log10(float64(a.N)), Y: math.Log10(v.Median)})
				lo, hi = math.Min(lo, v.Median), math.Max(hi, v.Median)
				nmin, nmax = math.Min(nmin, float64(a.N)), math.Max(nmax, float64(a.N))
			}
			if len(pts) == 0 {
				continue
			}
			line, sc, err := plotter.NewLinePoints(pts)
			if err != nil {
				return err
			}
			line.Color = colors[si%len(colors)]
			line.Width = vg.Points(2)
			line.Dashes = dashes[k]
			sc.Color = colors[si%len(colors)]
			sc.Shape = shapes[k]
			sc.Radius = vg.Points(3.5)
			p.Add(line, sc)
			p.Legend.Add(fmt.Sprintf("%s, %s", name, st.name), line, sc)
		}
	}
	if math.IsInf(lo, 1) {
		// Nothing measured: still write a chart saying so.
		lo, hi, nmin, nmax = 1, 10, 10, 100
		p.Title.Text += " (no data)"
	}
	// Whole decades on both axes.
	p.Y.Min = math.Floor(math.Log10(lo))
	p.Y.Max = math.Ceil(math.Log10(hi * 1.3))
	p.X.Min = math.Floor(math.Log10(nmin))
	p.X.Max = math.Ceil(math.Log10(nmax))
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
	return p.Save(9*vg.Inch, 5.5*vg.Inch, path)
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
