package amdraw

import "github.com/xres/xres/yarn/amstatus"

// DrawGPUs draws the listed workers' GPUs over time as an inline SVG, one
// row per GPU, written as the start timeline is (svgWriter, every string
// escaped):
//
//	■ utilisation (0–100 %) ■ memory used (0–max MiB)        (legend)
//	container_…_000002 gpu 0  ╱‾‾‾╲__╱‾‾‾‾‾                 utilisation line
//	                          ____╱‾‾‾‾‾‾‾‾‾                memory line
//
// The x axis is shared: from the earliest sample drawn to the latest, on
// the hosts' clocks. Each point's tooltip would cost a node per point;
// the row's title says the latest figures instead. "" when no worker has
// a sample.
func DrawGPUs(workers []amstatus.WorkerGPUs) string {
	const rowH, top = 34, 22
	var first, last int64
	var maxMem float64
	rows := 0
	for _, wk := range workers {
		for i := range wk.GPUs {
			g := &wk.GPUs[i]
			if g.N == 0 {
				continue
			}
			rows++
			if first == 0 || g.First < first {
				first = g.First
			}
			last = max(last, g.Last.At)
			for _, p := range g.History[:g.N] {
				maxMem = max(maxMem, float64(p.MemMiB))
			}
		}
	}
	if rows == 0 {
		return ""
	}
	span := float64(max(last-first, 1))
	maxMem = max(maxMem, 1)
	width, height := svgLabelW+svgChartW+svgRightM, top+rows*rowH+svgBottom
	w := &svgWriter{}
	w.s(`<svg id="gpu-svg" xmlns="http://www.w3.org/2000/svg" width="`)
	w.int(width)
	w.s(`" height="`)
	w.int(height)
	w.s(`" viewBox="0 0 `)
	w.int(width)
	w.s(" ")
	w.int(height)
	w.s(`" font-family="sans-serif" font-size="10"><style>.util{fill:none;stroke:#4e79a7;stroke-width:1.5}.mem{fill:none;stroke:#f28e2b;stroke-width:1}.label{font-family:monospace}.frame{fill:#f6f6f6}</style>`, "\n")
	w.s(`<g class="legend"><rect x="4" y="4" width="10" height="10" fill="#4e79a7"/><text x="18" y="13">utilisation (0–100 %)</text>`,
		`<rect x="150" y="4" width="10" height="10" fill="#f28e2b"/><text x="164" y="13">memory used (0–`)
	w.num(maxMem)
	w.s(` MiB)</text><text x="`)
	w.int(svgLabelW + svgChartW)
	w.s(`" y="13" text-anchor="end">`)
	w.int(int(last - first))
	w.s(" s</text></g>\n")
	y := top
	for _, wk := range workers {
		for i := range wk.GPUs {
			g := &wk.GPUs[i]
			if g.N == 0 {
				continue
			}
			w.s(`<g class="gpu" data-container="`)
			w.esc(wk.Container)
			w.s(`" data-gpu="`)
			w.esc(g.Last.Index)
			w.s(`"><title>`)
			w.esc(wk.Container + " on " + wk.Host + ", GPU " + g.Last.Index + " " + g.Last.UUID)
			w.s(": ")
			w.num(g.Last.Util)
			w.s(" %, ")
			w.num(g.Last.MemMiB)
			w.s(" MiB</title>")
			w.s(`<text class="label" x="`)
			w.int(svgLabelW - 6)
			w.s(`" y="`)
			w.int(y + rowH/2 + 3)
			w.s(`" text-anchor="end">`)
			w.esc(wk.Container)
			w.s(" gpu ")
			w.esc(g.Last.Index)
			w.s(`</text><rect class="frame" x="`)
			w.int(svgLabelW)
			w.s(`" y="`)
			w.int(y + 2)
			w.s(`" width="`)
			w.int(svgChartW)
			w.s(`" height="`)
			w.int(rowH - 4)
			w.s(`"/>`)
			chartH := float64(rowH - 6)
			line := func(class string, v func(p amstatus.GPUPoint) float64) {
				w.s(`<polyline class="`, class, `" points="`)
				for k, p := range g.History[:g.N] {
					if k > 0 {
						w.s(" ")
					}
					w.num(svgLabelW + float64(g.First+int64(p.At)-first)/span*svgChartW)
					w.s(",")
					w.num(float64(y+rowH-3) - v(p)*chartH)
				}
				w.s(`"/>`)
			}
			line("util", func(p amstatus.GPUPoint) float64 { return float64(p.Util) / 100 })
			line("mem", func(p amstatus.GPUPoint) float64 { return float64(p.MemMiB) / maxMem })
			w.s("</g>\n")
			y += rowH
		}
	}
	w.s("</svg>")
	return string(w.b)
}
