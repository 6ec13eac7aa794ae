// The experiment page's curves: per chart one metric, per cell group a line (the mean over its seeds) and a
// band (its lowest to its highest seed), as GET /api/v1/experiments/{id}/curves answers them (the page's
// session cookie authenticates it). Colours by executor, dashes tell apart groups of one executor. While a cell
// runs the charts are read again every few seconds, keeping the user's zoom and hidden series.
(function () {
  "use strict";

  const POLL_MS = 5000;
  const { axes, sizeOf, getJSON, executorColor, alpha, placeholder, zoomHook, DASHES } = window.SfumatoCharts;
  const { scaleOf, toDisplay, formatter, valueRange, axisLabel } = window.SfumatoChartUnits;

  // uPlot data and series of one chart: each group's mean, then its band edges, on the union of the steps.
  function curveSpec(cfg, body) {
    const groups = body.groups.filter((g) => g.steps.length);
    if (!groups.length) return null;
    const scale = scaleOf(cfg.unit, groups.flatMap((g) => [g.low, g.high]));
    const fmt = formatter(scale);
    const tables = [];
    const series = [{ label: "step" }];
    const bands = [];
    const seen = new Map();
    groups.forEach((g) => {
      const n = seen.get(g.executor) || 0;
      seen.set(g.executor, n + 1);
      const color = executorColor(g.executor);
      tables.push([g.steps, toDisplay(scale, g.mean)], [g.steps, toDisplay(scale, g.high)], [g.steps, toDisplay(scale, g.low)]);
      const at = series.length;
      series.push({ label: g.label + " (mean of " + g.job_ids.length + ")", stroke: color, dash: DASHES[n % DASHES.length],
        width: 2, spanGaps: true, points: { show: false }, value: (u, v) => fmt(v) });
      series.push({ label: g.label + " highest seed", stroke: alpha(color, 0.25), width: 1, spanGaps: true, points: { show: false },
        value: (u, v) => fmt(v) });
      series.push({ label: g.label + " lowest seed", stroke: alpha(color, 0.25), width: 1, spanGaps: true, points: { show: false },
        value: (u, v) => fmt(v) });
      bands.push({ series: [at + 1, at + 2], fill: alpha(color, 0.14) });
    });
    return { data: uPlot.join(tables), series, bands, yLabel: axisLabel(cfg.title, scale) };
  }

  function ExperimentCharts(section) {
    this.section = section;
    this.src = section.dataset.curvesSrc;
    this.charts = Array.from(section.querySelectorAll("[data-curve-chart]")).map((el) => ({
      el, cfg: JSON.parse(el.dataset.curveChart), plot: null, spec: null, keys: "", state: { zoomed: false, range: null },
    }));
    new ResizeObserver(() => this.charts.forEach((c) => c.plot && c.plot.setSize(sizeOf(c.el)))).observe(section);
    document.addEventListener("sfumato:theme", () => this.charts.forEach((c) => this.draw(c, true)));
  }

  ExperimentCharts.prototype.load = async function () {
    await Promise.all(this.charts.map(async (c) => {
      const width = Math.max(300, Math.round(c.el.clientWidth));
      c.spec = curveSpec(c.cfg, await getJSON(this.src + "?key=" + encodeURIComponent(c.cfg.key) + "&max_points=" + width));
    }));
  };

  // (Re)build a chart when its groups changed (or the theme did), else hand uPlot the new points, keeping the
  // user's zoom and hidden series as the job page's charts do.
  ExperimentCharts.prototype.draw = function (c, rebuild) {
    if (!c.spec) {
      if (c.plot) c.plot.destroy();
      c.plot = null;
      placeholder(c.el, "No cell reported " + c.cfg.key + " yet.");
      return;
    }
    const xs = c.spec.data[0];
    c.el.dataset.lastStep = String(xs[xs.length - 1]);
    const keys = c.spec.series.map((s) => s.label).join("\n");
    if (c.plot && !rebuild && keys === c.keys) {
      c.plot.setData(c.spec.data, !c.state.zoomed);
      return;
    }
    const hidden = new Set();
    if (c.plot) {
      c.plot.series.forEach((s) => { if (!s.show) hidden.add(s.label); });
      c.plot.destroy();
    }
    c.spec.series.forEach((s) => { if (hidden.has(s.label)) s.show = false; });
    c.el.replaceChildren();
    c.el.dataset.groups = String(c.spec.bands.length);
    const range = c.state.range;
    c.plot = new uPlot({
      ...sizeOf(c.el),
      scales: { x: { time: false }, y: { range: valueRange } },
      axes: axes(c.el, c.spec.yLabel, false, "step"),
      series: c.spec.series,
      bands: c.spec.bands,
      cursor: { drag: { x: true, y: false, setScale: true } },
      hooks: { setScale: [zoomHook(c.state, c.el)] },
    }, c.spec.data, c.el);
    if (range) c.plot.setScale("x", { min: range[0], max: range[1] });
    c.keys = keys;
  };

  // Whether a cell is still queued or running, as the polled summary last showed it.
  function live() {
    const summary = document.getElementById("experiment-live");
    return Boolean(summary) && summary.dataset.live === "true";
  }

  ExperimentCharts.prototype.tick = async function () {
    const more = live();  // read before asking: once every cell has ended this answer is the last one
    try {
      await this.load();
      this.charts.forEach((c) => this.draw(c));
    } catch (err) {
      this.charts.forEach((c) => {
        if (c.plot) c.plot.destroy();
        c.plot = null;
        placeholder(c.el, "Could not load the curves.");
      });
      console.warn(err);
    }
    this.section.dataset.polling = String(more);
    if (more) setTimeout(() => this.tick(), POLL_MS);
  };

  document.addEventListener("DOMContentLoaded", function () {
    const section = document.querySelector("[data-curves-src]");
    if (section) new ExperimentCharts(section).tick();
  });
})();
