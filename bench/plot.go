package bench

import (
	"image/color"
	"os"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// plotBurst draws the burst over time, by when each claim was due: answers
// per second by outcome (top) and claim latency p50/p99/max (bottom).
func plotBurst(lr *loadResult, path string) error {
	// Answers are counted by when they arrived (due time + latency), so the
	// top panel shows the rate served, not the rate offered; latencies are
	// placed by when their claim was due, so queueing shows as a rise.
	var last uint32
	for _, s := range lr.samples {
		last = max(last, s.intendedMs+s.latencyUs/1000)
	}
	// About 400 buckets, at least 100 ms each.
	bucketMs := max(uint32(100), (last+1)/400+1)
	n := int(last/bucketMs) + 1
	perOutcome := make([][]float64, numOutcomes)
	for i := range perOutcome {
		perOutcome[i] = make([]float64, n)
	}
	hists := make([]*hdrhistogram.Histogram, n)
	for i := range hists {
		hists[i] = hdrhistogram.New(1, 3_600_000_000, 2)
	}
	for _, s := range lr.samples {
		perOutcome[s.outcome][int((s.intendedMs+s.latencyUs/1000)/bucketMs)]++
		_ = hists[int(s.intendedMs/bucketMs)].RecordValue(int64(max(s.latencyUs, 1)))
	}
	secs := func(b int) float64 { return float64(b) * float64(bucketMs) / 1000 }
	perSec := float64(time.Second/time.Millisecond) / float64(bucketMs)

	rate := plot.New()
	rate.Title.Text = "seckill bench: claims answered per second, by when they were answered"
	rate.X.Label.Text = "seconds into the burst"
	rate.Y.Label.Text = "answers/s"
	rate.Legend.Top = true
	palette := []color.RGBA{{0, 114, 178, 255}, {230, 159, 0, 255}, {0, 158, 115, 255}, {204, 121, 167, 255},
		{213, 94, 0, 255}, {86, 180, 233, 255}, {0, 0, 0, 255}}
	for o := Outcome(0); o < numOutcomes; o++ {
		pts := make(plotter.XYs, 0, n)
		total := 0.0
		for b := 0; b < n; b++ {
			pts = append(pts, plotter.XY{X: secs(b), Y: perOutcome[o][b] * perSec})
			total += perOutcome[o][b]
		}
		if total == 0 {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = palette[int(o)%len(palette)]
		rate.Add(l)
		rate.Legend.Add(o.String(), l)
	}

	lat := plot.New()
	lat.Title.Text = "claim latency from the intended send time (open loop), by when the claim was due"
	lat.X.Label.Text = "seconds into the burst"
	lat.Y.Label.Text = "ms (log scale)"
	lat.Y.Scale = plot.LogScale{}
	lat.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	lat.Legend.Top = true
	for i, q := range []struct {
		name string
		at   float64
	}{{"p50", 50}, {"p99", 99}, {"max", 100}} {
		pts := make(plotter.XYs, 0, n)
		for b := 0; b < n; b++ {
			if hists[b].TotalCount() == 0 {
				continue
			}
			pts = append(pts, plotter.XY{X: secs(b), Y: max(float64(hists[b].ValueAtQuantile(q.at))/1000, 0.01)})
		}
		if len(pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = palette[i]
		lat.Add(l)
		lat.Legend.Add(q.name, l)
	}

	img := vgimg.New(vg.Points(900), vg.Points(700))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadX: vg.Points(8), PadY: vg.Points(8),
		PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(6)}
	canvases := plot.Align([][]*plot.Plot{{rate}, {lat}}, tiles, dc)
	rate.Draw(canvases[0][0])
	lat.Draw(canvases[1][0])
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
