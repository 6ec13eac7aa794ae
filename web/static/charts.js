// Sfumato charts (uPlot): the job page's live charts and the compare page's overlays.
// Data comes from /jobs/{id}/metrics.json (session cookie), downsampled on the server to the chart width.
// Live appends never reset the user's zoom or hidden series.
(function () {
  "use strict";

  const HEIGHT = 240;
  const POLL_MS = 3000;
  const TERMINAL = ["succeeded", "failed", "cancelled"];
  const PALETTE = ["#2563eb", "#dc2626", "#16a34a", "#d97706", "#9333ea", "#0891b2", "#db2777", "#65a30d"];
  const DASHES = [[], [6, 4], [2, 3], [10, 3, 2, 3]];

  function cssVar(name, fallback) {
    const value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return value || fallback;
  }

  function executorColor(name) {
    return cssVar("--exec-" + name, cssVar("--exec-other", "#0891b2"));
  }

  function alpha(hex, a) {
    const n = parseInt(hex.slice(1), 16);
    return "rgba(" + (n >> 16) + "," + ((n >> 8) & 255) + "," + (n & 255) + "," + a + ")";
  }

  const GIB = 1073741824;

  // Byte series are plotted in GiB so that the axis gets round ticks.
  function toDisplay(unit, values) {
    return unit === "bytes" ? values.map((v) => (v == null ? null : v / GIB)) : values;
  }

  function formatter(unit) {
    if (unit === "bytes") return (v) => (v == null ? "—" : v.toFixed(2) + " GiB");
    return (v) => {
      if (v == null) return "—";
      const a = Math.abs(v);
      if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(2);
      return String(Number(v.toPrecision(4)));
    };
  }

  function formatSeconds(v) {
    if (v == null) return "—";
    if (v < 120) return v.toFixed(0) + " s";
    if (v < 7200) return (v / 60).toFixed(1) + " min";
    return (v / 3600).toFixed(2) + " h";
  }

  // Axis width from its longest tick label, so "15.00 GiB" is never clipped.
  function axisSize(u, values) {
    const longest = values ? Math.max(0, ...values.map((v) => String(v).length)) : 4;
    return Math.max(40, longest * 7 + 16);
  }

  function axes(unit, right, xLabel) {
    const stroke = cssVar("--pico-muted-color", "#888");
    const grid = { stroke: cssVar("--pico-muted-border-color", "#ddd"), width: 1 };
    const fmt = formatter(unit);
    const list = [
      { stroke, grid, ticks: grid, label: xLabel, labelSize: 18, labelFont: "12px system-ui", font: "11px system-ui",
        values: xLabel === "wall time" ? (u, vals) => vals.map(formatSeconds) : undefined },
      { stroke, grid, ticks: grid, size: axisSize, font: "11px system-ui", values: (u, vals) => vals.map(fmt) },
    ];
    if (right) list.push({ scale: "y2", side: 1, stroke, grid: { show: false }, ticks: grid, size: axisSize, font: "11px system-ui",
      values: (u, vals) => vals.map(formatter()) });
    return list;
  }

  // Track whether the user has zoomed the x axis, so live appends can leave the view alone.
  function zoomHook(state, el) {
    return (u, key) => {
      if (key !== "x") return;
      const xs = u.data[0];
      if (!xs.length) return;
      const eps = 1e-9 * Math.max(1, Math.abs(xs[xs.length - 1]));
      state.zoomed = u.scales.x.min > xs[0] + eps || u.scales.x.max < xs[xs.length - 1] - eps;
      state.range = state.zoomed ? [u.scales.x.min, u.scales.x.max] : null;
      el.dataset.zoomed = String(state.zoomed);
    };
  }

  function sizeOf(el) {
    return { width: Math.max(280, Math.floor(el.clientWidth)), height: HEIGHT };
  }

  function placeholder(el, text) {
    el.replaceChildren();
    const p = document.createElement("div");
    p.className = "empty-chart";
    p.textContent = text;
    el.appendChild(p);
  }

  // ---- job page ------------------------------------------------------------------------------

  // One job's points per key: {steps, values, lows, highs}, ascending steps. A downsampled bucket brings its
  // last value and its minimum and maximum; a raw point (a live append) is its own minimum and maximum.
  function mergeSeries(store, series) {
    let added = false;
    for (const s of series) {
      if (!s.steps.length) continue;
      let cur = store.get(s.key);
      if (!cur) {
        cur = { steps: [], values: [], lows: [], highs: [] };
        store.set(s.key, cur);
        added = true;
      }
      const last = cur.steps.length ? cur.steps[cur.steps.length - 1] : -Infinity;
      for (let i = 0; i < s.steps.length; i++) {
        if (s.steps[i] > last) {
          cur.steps.push(s.steps[i]);
          cur.values.push(s.values[i]);
          cur.lows.push(s.minimum ? s.minimum[i] : s.values[i]);
          cur.highs.push(s.maximum ? s.maximum[i] : s.values[i]);
        }
      }
    }
    return added;
  }

  // A key's field on the chart's x values (null where it has no point).
  function alignedField(xs, s, field) {
    const index = new Map(xs.map((x, i) => [x, i]));
    const col = new Array(xs.length).fill(null);
    for (let i = 0; i < s.steps.length; i++) col[index.get(s.steps[i])] = s[field][i];
    return col;
  }

  // Whether some bucket of the key spans more than its last value (the server downsampled it).
  function hasRange(s) {
    return s.lows.some((low, i) => low !== s.values[i]) || s.highs.some((high, i) => high !== s.values[i]);
  }

  function chartKeys(cfg, store) {
    const band = cfg.band ? cfg.band[1] : null;
    const keys = cfg.keys.filter((k) => store.has(k));
    for (const k of store.keys()) {
      if ((cfg.prefixes || []).some((p) => k.startsWith(p)) && !keys.includes(k) && k !== band) keys.push(k);
    }
    return keys;
  }

  function alignedTable(keys, store) {
    const stepSet = new Set();
    for (const k of keys) for (const s of store.get(k).steps) stepSet.add(s);
    const xs = Array.from(stepSet).sort((a, b) => a - b);
    const index = new Map(xs.map((x, i) => [x, i]));
    const columns = keys.map((k) => {
      const col = new Array(xs.length).fill(null);
      const s = store.get(k);
      for (let i = 0; i < s.steps.length; i++) col[index.get(s.steps[i])] = s.values[i];
      return col;
    });
    return [xs, columns];
  }

  // Build the uPlot data and options for one chart config from the store.
  function jobChartSpec(cfg, store) {
    const keys = chartKeys(cfg, store);
    if (!keys.length) return null;
    const bandKey = cfg.band && store.has(cfg.band[1]) && keys.includes(cfg.band[0]) ? cfg.band[1] : null;
    const [xs, table] = alignedTable(bandKey ? keys.concat([bandKey]) : keys, store);
    const columns = table.map((col) => toDisplay(cfg.unit, col));
    const right = (cfg.right || []).filter((k) => keys.includes(k));
    const fmt = formatter(cfg.unit);
    const series = [{ label: "step" }];
    const data = [xs];
    const bands = [];
    let raw = columns;
    if (cfg.stack) {
      // Stacked areas: each series draws the running sum; the legend shows its own value.
      const sums = new Array(xs.length).fill(0);
      raw = columns.slice(0, keys.length);
      keys.forEach((k, i) => {
        const col = raw[i].map((v, j) => (sums[j] += v == null ? 0 : v));
        data.push(col);
        const color = PALETTE[i % PALETTE.length];
        series.push({ label: k, stroke: color, width: 1, fill: alpha(color, 0.35), points: { show: false },
          value: (u, v, si, di) => (di == null ? "—" : fmt(raw[si - 1][di])) });
        if (i > 0) bands.push({ series: [i + 1, i], fill: alpha(color, 0.35) });
      });
      series.forEach((s, i) => { if (i > 1) s.fill = undefined; });
    } else {
      keys.forEach((k, i) => {
        const color = PALETTE[i % PALETTE.length];
        data.push(columns[i]);
        series.push({ label: k, stroke: color, width: k === cfg.keys[0] ? 2 : 1.25, scale: right.includes(k) ? "y2" : "y",
          spanGaps: true, points: { show: false }, value: (u, v) => fmt(v) });
      });
      if (bandKey) {
        const mean = columns[keys.indexOf(cfg.band[0])];
        const std = columns[keys.length];
        const color = PALETTE[0];
        data.push(mean.map((m, j) => (m == null || std[j] == null ? null : m + std[j])));
        data.push(mean.map((m, j) => (m == null || std[j] == null ? null : m - std[j])));
        const hi = series.length;
        series.push({ label: "+1 std", stroke: alpha(color, 0.25), width: 1, spanGaps: true, points: { show: false }, value: (u, v) => fmt(v) });
        series.push({ label: "−1 std", stroke: alpha(color, 0.25), width: 1, spanGaps: true, points: { show: false }, value: (u, v) => fmt(v) });
        bands.push({ series: [hi, hi + 1], fill: alpha(color, 0.14) });
      } else if (hasRange(store.get(keys[0]))) {
        // The first key's bucket minimum and maximum as a shaded band: no extreme is lost to downsampling.
        const first = store.get(keys[0]);
        const color = PALETTE[0];
        const hi = series.length;
        for (const [field, label] of [["highs", "bucket max"], ["lows", "bucket min"]]) {
          data.push(toDisplay(cfg.unit, alignedField(xs, first, field)));
          series.push({ label: keys[0] + " " + label, stroke: alpha(color, 0.25), width: 1, scale: right.includes(keys[0]) ? "y2" : "y",
            spanGaps: true, points: { show: false }, value: (u, v) => fmt(v) });
        }
        bands.push({ series: [hi, hi + 1], fill: alpha(color, 0.12) });
      }
    }
    return { keys: keys.join("|"), data, series, bands, right: right.length > 0, fromZero: Boolean(cfg.stack) };
  }

  function JobCharts(section) {
    this.section = section;
    this.src = section.dataset.metricsSrc;
    this.live = section.dataset.live === "true";
    this.store = new Map();
    this.charts = Array.from(section.querySelectorAll("[data-chart]")).map((el) => ({
      el, cfg: JSON.parse(el.dataset.chart), plot: null, keys: "", state: { zoomed: false, range: null },
    }));
    const keys = new Set();
    const prefixes = new Set();
    for (const c of this.charts) {
      const own = c.cfg.keys.concat(c.cfg.band ? [c.cfg.band[1]] : []);
      own.forEach((k) => keys.add(k));
      (c.cfg.prefixes || []).forEach((p) => prefixes.add(p));
      c.query = query(own, c.cfg.prefixes || []);
    }
    // Live appends ask for every chart's keys at once (a few new points); the first load asks per chart, so each
    // chart's series are downsampled to its own width and arrive in parallel.
    this.query = query(Array.from(keys), Array.from(prefixes));
    new ResizeObserver(() => this.charts.forEach((c) => c.plot && c.plot.setSize(sizeOf(c.el)))).observe(section);
    document.addEventListener("sfumato:theme", () => this.charts.forEach((c) => this.draw(c, true)));
  }

  JobCharts.prototype.lastStep = function () {
    let last = -1;
    for (const s of this.store.values()) if (s.steps.length) last = Math.max(last, s.steps[s.steps.length - 1]);
    return last;
  };

  function query(keys, prefixes) {
    return "keys=" + encodeURIComponent(keys.join(",")) + "&prefixes=" + encodeURIComponent(prefixes.join(","));
  }

  JobCharts.prototype.fetch = async function (afterStep, chart) {
    const width = Math.max(...this.charts.map((c) => c.el.clientWidth), 300);
    let url = this.src + "?" + (chart ? chart.query : this.query) + "&max_points=" + Math.round(width);
    if (afterStep != null) url += "&after_step=" + afterStep;
    const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
    if (!response.ok) throw new Error("metrics request failed: " + response.status);
    return response.json();
  };

  // (Re)build a chart when its set of series changed, else hand uPlot the new data.
  JobCharts.prototype.draw = function (c, rebuild) {
    const spec = jobChartSpec(c.cfg, this.store);
    if (!spec) {
      if (!c.plot) placeholder(c.el, this.live ? "Waiting for the first points…" : "Not reported by this job.");
      c.el.closest(".chart-card").classList.toggle("no-data", true);
      return;
    }
    c.el.closest(".chart-card").classList.toggle("no-data", false);
    // The drawn extent, for people and tests: how many x values and the last step.
    c.el.dataset.points = String(spec.data[0].length);
    c.el.dataset.lastStep = String(spec.data[0][spec.data[0].length - 1]);
    if (c.plot && !rebuild && spec.keys === c.keys) {
      c.plot.setData(spec.data, !c.state.zoomed);
      return;
    }
    const hidden = new Set();
    if (c.plot) {
      c.plot.series.forEach((s) => { if (!s.show) hidden.add(s.label); });
      c.plot.destroy();
    }
    spec.series.forEach((s) => { if (hidden.has(s.label)) s.show = false; });
    c.el.replaceChildren();
    const opts = {
      ...sizeOf(c.el),
      scales: { x: { time: false }, y: spec.fromZero ? { range: (u, min, max) => [0, max * 1.08 || 1] } : {} },
      axes: axes(c.cfg.unit, spec.right, "step"),
      series: spec.series,
      bands: spec.bands,
      cursor: { drag: { x: true, y: false, setScale: true } },
      hooks: { setScale: [zoomHook(c.state, c.el)] },
    };
    const range = c.state.range;
    c.plot = new uPlot(opts, spec.data, c.el);
    if (range) c.plot.setScale("x", { min: range[0], max: range[1] });
    c.keys = spec.keys;
  };

  // Every chart's downsampled series, merged into one store (a key two charts share is taken once).
  JobCharts.prototype.load = async function () {
    const bodies = await Promise.all(this.charts.map((c) => this.fetch(null, c)));
    this.store = new Map();
    for (const body of bodies) mergeSeries(this.store, body.series.filter((s) => !this.store.has(s.key)));
    return bodies[bodies.length - 1];
  };

  JobCharts.prototype.start = async function () {
    try {
      const body = await this.load();
      this.charts.forEach((c) => this.draw(c, false));
      this.live = this.live && !TERMINAL.includes(body.status);
    } catch (err) {
      this.charts.forEach((c) => placeholder(c.el, "Could not load metrics."));
      console.warn(err);
    }
    this.section.dataset.polling = String(this.live);
    if (this.live) setTimeout(() => this.tick(), POLL_MS);
  };

  JobCharts.prototype.tick = async function () {
    try {
      const body = await this.fetch(this.lastStep());
      if (body.truncated) {
        await this.load();
      } else {
        mergeSeries(this.store, body.series);
      }
      this.charts.forEach((c) => this.draw(c, false));
      if (TERMINAL.includes(body.status)) {
        this.section.dataset.polling = "false";  // finished: no more requests
        return;
      }
    } catch (err) {
      console.warn(err);
    }
    setTimeout(() => this.tick(), POLL_MS);
  };

  // ---- compare page --------------------------------------------------------------------------

  function CompareCharts(section) {
    this.section = section;
    this.jobs = JSON.parse(section.dataset.jobs);
    this.axis = section.dataset.axis || "step";
    this.data = new Map();
    this.charts = Array.from(section.querySelectorAll("[data-compare-chart]")).map((el) => ({
      el, cfg: JSON.parse(el.dataset.compareChart), plot: null,
    }));
    new ResizeObserver(() => this.charts.forEach((c) => c.plot && c.plot.setSize(sizeOf(c.el)))).observe(section);
    document.addEventListener("sfumato:theme", () => this.drawAll());
    document.addEventListener("change", (event) => {
      if (event.target.name === "axis" && event.target.closest("#compare-axis")) {
        this.axis = event.target.value;
        this.drawAll();
      }
    });
  }

  CompareCharts.prototype.start = async function () {
    const keys = this.charts.map((c) => c.cfg.key).join(",");
    const width = Math.max(...this.charts.map((c) => c.el.clientWidth), 300);
    try {
      await Promise.all(this.jobs.map(async (job) => {
        const url = "/jobs/" + job.id + "/metrics.json?walls=true&keys=" + encodeURIComponent(keys) + "&max_points=" + Math.round(width);
        const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
        if (!response.ok) throw new Error("metrics request failed: " + response.status);
        const body = await response.json();
        this.data.set(job.id, new Map(body.series.map((s) => [s.key, s])));
      }));
    } catch (err) {
      this.charts.forEach((c) => placeholder(c.el, "Could not load metrics."));
      console.warn(err);
      return;
    }
    this.drawAll();
  };

  CompareCharts.prototype.drawAll = function () {
    const seen = new Map();
    const style = this.jobs.map((job) => {
      const n = seen.get(job.executor) || 0;
      seen.set(job.executor, n + 1);
      return { color: executorColor(job.executor), dash: DASHES[n % DASHES.length] };
    });
    for (const c of this.charts) {
      const tables = [];
      const series = [{ label: this.axis === "time" ? "wall time" : "step", value: this.axis === "time" ? (u, v) => formatSeconds(v) : undefined }];
      this.jobs.forEach((job, i) => {
        const s = this.data.get(job.id) && this.data.get(job.id).get(c.cfg.key);
        if (!s || !s.steps.length) return;
        const xs = this.axis === "time" ? s.wall_times.map((w) => w - s.wall_times[0]) : s.steps;
        tables.push([xs, toDisplay(c.cfg.unit, s.values)]);
        series.push({ label: "#" + job.id + " " + job.name + " (" + job.executor + ")", stroke: style[i].color, dash: style[i].dash,
          width: 2, spanGaps: true, points: { show: false }, value: (u, v) => formatter(c.cfg.unit)(v) });
      });
      if (c.plot) c.plot.destroy();
      c.plot = null;
      if (!tables.length) {
        placeholder(c.el, "No job reported " + c.cfg.key + ".");
        continue;
      }
      c.el.replaceChildren();
      const data = uPlot.join(tables);
      c.plot = new uPlot({
        ...sizeOf(c.el),
        scales: { x: { time: false } },
        axes: axes(c.cfg.unit, false, this.axis === "time" ? "wall time" : "step"),
        series,
        cursor: { drag: { x: true, y: false, setScale: true } },
      }, data, c.el);
    }
  };

  document.addEventListener("DOMContentLoaded", function () {
    const jobSection = document.querySelector("[data-metrics-src]");
    if (jobSection) new JobCharts(jobSection).start();
    const compareSection = document.querySelector("[data-jobs]");
    if (compareSection) new CompareCharts(compareSection).start();
  });
})();
