// Command chart draws docs/performance.png from loadgen's JSON reports: the
// publish→receive p50 and p99 and the hub's RSS per stream against the number
// of streams, for each set of reports (e.g. before and after a change). Each
// point is the median of the runs of that shape. It also prints the medians
// of every shape as a Markdown table.
//
//	go run ./k6/loadgen/chart -o docs/performance.png before=/tmp/perf/before after=/tmp/perf/after
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// report is the part of loadgen's JSON the chart reads.
type report struct {
	Shape struct {
		Streams   int     `json:"streams"`
		Rooms     int     `json:"rooms"`
		Rate      float64 `json:"publishesPerSec"`
		PageRooms int     `json:"pageRooms"`
	} `json:"shape"`
	Connect struct {
		OK int `json:"ok"`
	} `json:"connect"`
	Delivery struct {
		Lost       int64   `json:"lost"`
		Duplicated int64   `json:"duplicated"`
		PerSec     float64 `json:"deliveredPerSec"`
		P50        float64 `json:"p50ms"`
		P99        float64 `json:"p99ms"`
	} `json:"delivery"`
	Hub struct {
		CPU         float64 `json:"cpuSecsPer1000Deliveries"`
		KBPerStream float64 `json:"rssKBPerStream"`
	} `json:"hub"`
	Redis struct {
		CPU float64 `json:"cpuSecsPer1000Deliveries"`
	} `json:"redis"`
}

// point is one shape's medians.
type point struct{ streams, p50, p99, kb float64 }

type series struct {
	name   string
	points []point
}

func main() {
	out := flag.String("o", "docs/performance.png", "the PNG to write")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: chart [-o file.png] name=dir ...")
		os.Exit(2)
	}
	var all []series
	fmt.Println("| set | streams / rooms / publishes/s | runs | connected | lost / dup | deliveries/s | hub CPU-s per 1k | hub + redis | KB per stream | p50 / p99 ms |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, arg := range flag.Args() {
		name, dir, ok := strings.Cut(arg, "=")
		if !ok {
			fmt.Fprintln(os.Stderr, "chart: arguments are name=dir")
			os.Exit(2)
		}
		reports, err := readReports(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "chart:", err)
			os.Exit(1)
		}
		all = append(all, load(name, reports))
		table(name, reports)
	}
	img := draw2(all)
	f, err := os.Create(*out)
	if err == nil {
		err = png.Encode(f, img)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chart:", err)
		os.Exit(1)
	}
}

// readReports reads every report (JSON) in dir.
func readReports(dir string) ([]report, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no reports in %s", dir)
	}
	out := make([]report, 0, len(files))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var r report
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// median is the median over rs of f.
func median(rs []report, f func(report) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	sort.Float64s(v)
	return v[len(v)/2]
}

// load takes the medians of the room-stream reports per stream count.
func load(name string, reports []report) series {
	by := map[int][]report{}
	for _, r := range reports {
		if r.Shape.PageRooms == 0 && r.Shape.Streams > 0 {
			by[r.Shape.Streams] = append(by[r.Shape.Streams], r)
		}
	}
	s := series{name: name}
	for n, rs := range by {
		s.points = append(s.points, point{float64(n),
			median(rs, func(r report) float64 { return r.Delivery.P50 }),
			median(rs, func(r report) float64 { return r.Delivery.P99 }),
			median(rs, func(r report) float64 { return r.Hub.KBPerStream })})
	}
	sort.Slice(s.points, func(i, j int) bool { return s.points[i].streams < s.points[j].streams })
	return s
}

// table prints one row per shape of the reports: medians of its runs, and the sums
// of lost and duplicated events over them.
func table(name string, reports []report) {
	type key struct {
		streams, rooms, page int
		rate                 float64
	}
	by := map[key][]report{}
	var keys []key
	for _, r := range reports {
		k := key{r.Shape.Streams, r.Shape.Rooms, r.Shape.PageRooms, r.Shape.Rate}
		if by[k] == nil {
			keys = append(keys, k)
		}
		by[k] = append(by[k], r)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].page != keys[j].page {
			return keys[i].page < keys[j].page
		}
		return keys[i].streams < keys[j].streams
	})
	for _, k := range keys {
		rs := by[k]
		med := func(f func(report) float64) float64 { return median(rs, f) }
		var lost, dup int64
		for _, r := range rs {
			lost += r.Delivery.Lost
			dup += r.Delivery.Duplicated
		}
		shape := fmt.Sprintf("%d / %d / %.0f", k.streams, k.rooms, k.rate)
		if k.page > 0 {
			shape += fmt.Sprintf(" (page streams of %d rooms)", k.page)
		}
		fmt.Printf("| %s | %s | %d | %.0f | %d / %d | %.0f | %.4f | %.4f | %.0f | %.1f / %.1f |\n", name, shape, len(rs),
			med(func(r report) float64 { return float64(r.Connect.OK) }), lost, dup,
			med(func(r report) float64 { return r.Delivery.PerSec }),
			med(func(r report) float64 { return r.Hub.CPU }),
			med(func(r report) float64 { return r.Hub.CPU + r.Redis.CPU }),
			med(func(r report) float64 { return r.Hub.KBPerStream }),
			med(func(r report) float64 { return r.Delivery.P50 }),
			med(func(r report) float64 { return r.Delivery.P99 }))
	}
}

var palette = []color.RGBA{{200, 60, 40, 255}, {30, 110, 200, 255}, {40, 150, 70, 255}, {140, 80, 170, 255}}

const (
	width, height = 1000, 420
	panelW        = 440
	margin        = 60
)

func draw2(all []series) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	left := image.Rect(margin, 40, margin+panelW-40, height-margin)
	right := image.Rect(width/2+margin, 40, width/2+margin+panelW-40, height-margin)
	panel(img, left, "publish -> receive latency (ms, log scale; solid p99, dashed p50)", all, true,
		func(p point) []float64 { return []float64{p.p99, p.p50} })
	panel(img, right, "hub RSS per open stream (KB)", all, false,
		func(p point) []float64 { return []float64{p.kb} })
	for i, s := range all {
		c := palette[i%len(palette)]
		y := 18 + i*14
		fill(img, image.Rect(width-200, y-6, width-180, y-2), c)
		label(img, width-172, y, s.name)
	}
	label(img, width/2-60, height-12, "streams open on one hub")
	return img
}

// panel draws one chart: axes, ticks and one polyline per value per series;
// logY: a logarithmic y axis from 1 (values below 1 sit on it).
func panel(img *image.RGBA, r image.Rectangle, title string, all []series, logY bool, values func(point) []float64) {
	maxX, maxY := 0.0, 0.0
	for _, s := range all {
		for _, p := range s.points {
			maxX = math.Max(maxX, p.streams)
			for _, v := range values(p) {
				maxY = math.Max(maxY, v)
			}
		}
	}
	maxY = niceCeil(maxY)
	scale := func(v float64) float64 { return v / maxY }
	ticks := []float64{0, maxY / 4, maxY / 2, 3 * maxY / 4, maxY}
	if logY {
		maxY = math.Pow(10, math.Ceil(math.Log10(math.Max(maxY, 10))))
		scale = func(v float64) float64 { return math.Log10(math.Max(v, 1)) / math.Log10(maxY) }
		ticks = nil
		for v := 1.0; v <= maxY; v *= 10 {
			ticks = append(ticks, v)
		}
	}
	label(img, r.Min.X, r.Min.Y-12, title)
	gray := color.RGBA{150, 150, 150, 255}
	line(img, r.Min.X, r.Max.Y, r.Max.X, r.Max.Y, gray, false)
	line(img, r.Min.X, r.Min.Y, r.Min.X, r.Max.Y, gray, false)
	for _, v := range ticks {
		y := r.Max.Y - int(float64(r.Dy())*scale(v))
		line(img, r.Min.X-4, y, r.Max.X, y, color.RGBA{230, 230, 230, 255}, false)
		label(img, r.Min.X-44, y+4, strconv.FormatFloat(v, 'f', -1, 64))
	}
	xs := map[float64]bool{}
	for _, s := range all {
		for _, p := range s.points {
			xs[p.streams] = true
		}
	}
	px := func(x float64) int { return r.Min.X + int(float64(r.Dx())*x/maxX) }
	py := func(y float64) int { return r.Max.Y - int(float64(r.Dy())*scale(y)) }
	for x := range xs {
		label(img, px(x)-14, r.Max.Y+16, strconv.Itoa(int(x)))
	}
	for i, s := range all {
		c := palette[i%len(palette)]
		for k := range values(point{}) {
			for j := 1; j < len(s.points); j++ {
				a, b := s.points[j-1], s.points[j]
				line(img, px(a.streams), py(values(a)[k]), px(b.streams), py(values(b)[k]), c, k > 0)
			}
			for _, p := range s.points {
				fill(img, image.Rect(px(p.streams)-2, py(values(p)[k])-2, px(p.streams)+3, py(values(p)[k])+3), c)
			}
		}
	}
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func fill(img *image.RGBA, r image.Rectangle, c color.Color) {
	draw.Draw(img, r, &image.Uniform{c}, image.Point{}, draw.Src)
}

// line draws a 2-pixel line (dashed when asked) with Bresenham's algorithm.
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA, dashed bool) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for n := 0; ; n++ {
		if !dashed || (n/6)%2 == 0 {
			img.SetRGBA(x0, y0, c)
			img.SetRGBA(x0, y0+1, c)
		}
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func label(img *image.RGBA, x, y int, s string) {
	d := font.Drawer{Dst: img, Src: image.Black, Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func sign(v int) int {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}
