package workload

import (
	"image/color"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// storeColor gives each store the same color in every chart.
func storeColor(name string) color.Color {
	switch name {
	case "ebb":
		return color.RGBA{R: 0x1f, G: 0x5f, B: 0xd0, A: 0xff}
	case "badger":
		return color.RGBA{R: 0xd6, G: 0x3a, B: 0x2a, A: 0xff}
	case "bbolt":
		return color.RGBA{R: 0x2c, G: 0x9e, B: 0x3a, A: 0xff}
	case "buntdb":
		return color.RGBA{R: 0xe0, G: 0x8a, B: 0x10, A: 0xff}
	case "pebble":
		return color.RGBA{R: 0x8a, G: 0x3f, B: 0xb8, A: 0xff}
	}
	return color.Gray{Y: 0x60}
}

func addLine(p *plot.Plot, xys plotter.XYs, c color.Color, dashed bool, width vg.Length, legend string) error {
	if len(xys) == 0 {
		return nil
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	l.LineStyle.Color = c
	l.LineStyle.Width = width
	if dashed {
		l.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	p.Add(l)
	if legend != "" {
		p.Legend.Add(legend, l)
	}
	return nil
}

// savePanels draws plots one above the other into a PNG file.
func savePanels(path string, width, height vg.Length, plots ...*plot.Plot) error {
	img := vgimg.New(width, height)
	dc := draw.New(img)
	t := draw.Tiles{Rows: len(plots), Cols: 1, PadTop: vg.Points(4), PadBottom: vg.Points(4),
		PadLeft: vg.Points(4), PadRight: vg.Points(8), PadY: vg.Points(10)}
	grid := make([][]*plot.Plot, len(plots))
	for i, p := range plots {
		grid[i] = []*plot.Plot{p}
	}
	canvases := plot.Align(grid, t, dc)
	for i, p := range plots {
		p.Draw(canvases[i][0])
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
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

// ChartChurn draws disk bytes (solid) and live bytes (dashed) over time for
// every store, and below it the space amplification (disk / live).
func ChartChurn(path string, r *ChurnResult) error {
	top := plot.New()
	top.Title.Text = "churn: disk bytes (solid) vs live bytes (dashed)"
	top.X.Label.Text = "seconds since writes started"
	top.Y.Label.Text = "MiB"
	top.Legend.Top, top.Legend.Left = true, true
	bottom := plot.New()
	bottom.Title.Text = "space amplification: disk / live bytes"
	bottom.X.Label.Text = "seconds since writes started"
	bottom.Y.Label.Text = "disk / live"
	bottom.Legend.Top, bottom.Legend.Left = true, true
	dur := r.Config.Duration.Seconds()
	ymin, ymax := math.Inf(1), 0.0
	for _, s := range r.Stores {
		var disk, live, amp plotter.XYs
		for _, x := range s.Samples {
			disk = append(disk, plotter.XY{X: x.T, Y: float64(x.Disk) / (1 << 20)})
			live = append(live, plotter.XY{X: x.T, Y: float64(x.Live) / (1 << 20)})
			if x.Live > 0 && x.T <= dur && x.T >= float64(r.Config.TTL) {
				a := float64(x.Disk) / float64(x.Live)
				amp = append(amp, plotter.XY{X: x.T, Y: a})
				ymin, ymax = math.Min(ymin, a), math.Max(ymax, a)
			}
		}
		c := storeColor(s.Store)
		if err := addLine(top, disk, c, false, vg.Points(1.5), s.Store); err != nil {
			return err
		}
		if err := addLine(top, live, c, true, vg.Points(1), ""); err != nil {
			return err
		}
		if err := addLine(bottom, amp, c, false, vg.Points(1.5), s.Store); err != nil {
			return err
		}
	}
	if ymax > 0 {
		bottom.Y.Min, bottom.Y.Max = 0, ymax*1.25
	}
	return savePanels(path, 8*vg.Inch, 8*vg.Inch, top, bottom)
}

// ChartStorm draws the foreground p99 latency per window around the expiry
// instant for every store, and below it the disk bytes.
func ChartStorm(path string, r *StormResult) error {
	top := plot.New()
	top.Title.Text = "storm: foreground p99 latency per window (expiry at 0)"
	top.X.Label.Text = "seconds from the expiry instant"
	top.Y.Label.Text = "p99 ms (log)"
	top.Y.Scale = plot.LogScale{}
	top.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	top.Legend.Top = true
	bottom := plot.New()
	bottom.Title.Text = "disk bytes"
	bottom.X.Label.Text = "seconds from the expiry instant"
	bottom.Y.Label.Text = "MiB"
	bottom.Legend.Top = true
	ymin, ymax := math.Inf(1), 0.0
	for _, s := range r.Stores {
		var lat, disk plotter.XYs
		for _, w := range s.Windows {
			if w.Count == 0 || w.P99 <= 0 {
				continue
			}
			v := w.P99 / 1000
			lat = append(lat, plotter.XY{X: w.T, Y: v})
			ymin, ymax = math.Min(ymin, v), math.Max(ymax, v)
		}
		for _, d := range s.Disk {
			disk = append(disk, plotter.XY{X: d.T, Y: float64(d.Bytes) / (1 << 20)})
		}
		c := storeColor(s.Store)
		if err := addLine(top, lat, c, false, vg.Points(1.5), s.Store); err != nil {
			return err
		}
		if err := addLine(bottom, disk, c, false, vg.Points(1.5), s.Store); err != nil {
			return err
		}
	}
	// One time axis for both panels.
	xmin, xmax := math.Min(top.X.Min, bottom.X.Min), math.Max(top.X.Max, bottom.X.Max)
	top.X.Min, top.X.Max, bottom.X.Min, bottom.X.Max = xmin, xmax, xmin, xmax
	if ymax > 0 {
		top.Y.Min, top.Y.Max = ymin*0.8, ymax*1.5
		if err := addLine(top, plotter.XYs{{X: 0, Y: top.Y.Min}, {X: 0, Y: top.Y.Max}}, color.Gray{Y: 0x80}, true, vg.Points(1), "expiry"); err != nil {
			return err
		}
	}
	return savePanels(path, 8*vg.Inch, 8*vg.Inch, top, bottom)
}
