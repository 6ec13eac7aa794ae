// Sfumato charts (uPlot): the job page's live charts and the compare page's overlays.
// Data comes from the API's GET /api/v1/jobs/{id}/metrics (the page's session cookie authenticates it), series
// on one shared step axis downsampled on the server to the chart width. New points never reset the user's
// zoom or hidden series.
(function () {
  "use strict";

  const HEIGHT = 240;
  const POLL_MS = 3000;
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

  const { scaleOf, toDisplay, formatter, tickLabels, valueRange, axisLabel, formatSeconds } = window.SfumatoChartUnits;

  // Axis width from its longest tick label, so "15.00 GiB" is never clipped.
  function axisSize(u, values) {
    const longest = values ? Math.max(0, ...values.map((v) => String(v).length)) : 4;
    return Math.max(40, longest * 7 + 16);
  }

  // A compare legend names each job in a line or two: a long name is cut (the table above has it whole).
  function legendName(name) {
    return name.length > LEGEND_NAME_CHARS ? name.slice(0, LEGEND_NAME_CHARS - 1) + "…" : name;
  }
  const LEGEND_NAME_CHARS = 40;

  // Steps are whole numbers: a step axis ticks only at integer spacings (never at step 2.5).
  const STEP_INCRS = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 2500, 5000, 10000, 20000, 25000,
    50000, 100000, 200000, 250000, 500000, 1000000];

  // x axis, then the y axis labelled with its title and unit (and a second y axis on the right).
  function axes(el, yLabel, right, xLabel) {
    const stroke = cssVar("--pico-muted-color", "#888");
    const grid = { stroke: cssVar("--pico-muted-border-color", "#ddd"), width: 1 };
    el.dataset.yLabel = yLabel;
    const steps = xLabel === "step";
    const list = [
      { stroke, grid, ticks: grid, label: xLabel, labelSize: 18, labelFont: "12px system-ui", font: "11px system-ui",
        incrs: steps ? STEP_INCRS : undefined,
        values: steps ? tickLabels(el, "xTicks") : (u, vals) => vals.map(formatSeconds) },
      { stroke, grid, ticks: grid, size: axisSize, font: "11px system-ui", label: yLabel, labelSize: 18,
        labelFont: "12px system-ui", values: tickLabels(el, "yTicks") },
    ];
    if (right) list.push({ scale: "y2", side: 1, stroke, grid: { show: false }, ticks: grid, size: axisSize, font: "11px system-ui",
      values: tickLabels(null) });
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

  // The keys a chart draws, of those the job reported: its own, then every key under one of its prefixes
  // (the band's half-width key is drawn as the band, not as a line).
  function chartKeys(cfg, reported) {
    const band = cfg.band ? cfg.band[1] : null;
    const keys = cfg.keys.filter((k) => reported.includes(k));
    for (const k of reported) {
      if ((cfg.prefixes || []).some((p) => k.startsWith(p)) && !keys.includes(k) && k !== band) keys.push(k);
    }
    return keys;
  }

  // Whether some bucket of the series spans more than its last value (the server downsampled it).
  function hasRange(s) {
    return Boolean(s.minimum && s.maximum) &&
      (s.minimum.some((low, i) => low !== s.values[i]) || s.maximum.some((high, i) => high !== s.values[i]));
  }

  // The uPlot data and options of one chart from the API's answer: its series on one shared step axis, null
  // where a key has no point at a step.
  function jobChartSpec(cfg, keys, bandKey, body) {
    const byKey = new Map(body.series.map((s) => [s.key, s]));
    const xs = body.series.length ? body.series[0].steps : [];
    if (!xs.length) return null;
    const scale = scaleOf(cfg.unit, keys.map((k) => byKey.get(k).values));
    const columns = keys.map((k) => toDisplay(scale, byKey.get(k).values));
    const right = (cfg.right || []).filter((k) => keys.includes(k));
    const fmt = formatter(scale);
    const series = [{ label: "step" }];
    const data = [xs];
    const bands = [];
    if (cfg.stack) {
      // Stacked areas: each series draws the running sum; the legend shows its own value.
      const sums = new Array(xs.length).fill(0);
      keys.forEach((k, i) => {
        data.push(columns[i].map((v, j) => (sums[j] += v == null ? 0 : v)));
        const color = PALETTE[i % PALETTE.length];
        series.push({ label: k, stroke: color, width: 1, fill: alpha(color, 0.35), points: { show: false },
          value: (u, v, si, di) => (di == null ? "—" : fmt(columns[si - 1][di])) });
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
      const first = byKey.get(keys[0]);
      let edges = null;
      if (bandKey) {
        // [centre, half-width] keys: centre ± half-width.
        const mean = columns[keys.indexOf(cfg.band[0])];
        const std = toDisplay(scale, byKey.get(bandKey).values);
        edges = [["+1 std", mean.map((m, j) => (m == null || std[j] == null ? null : m + std[j]))],
          ["−1 std", mean.map((m, j) => (m == null || std[j] == null ? null : m - std[j]))]];
      } else if (hasRange(first)) {
        // The first key's bucket minimum and maximum: no extreme is lost to downsampling.
        edges = [[keys[0] + " bucket max", toDisplay(scale, first.maximum)],
          [keys[0] + " bucket min", toDisplay(scale, first.minimum)]];
      }
      if (edges) {
        const color = PALETTE[0];
        const hi = series.length;
        for (const [label, column] of edges) {
          data.push(column);
          series.push({ label, stroke: alpha(color, 0.25), width: 1, scale: !bandKey && right.includes(keys[0]) ? "y2" : "y",
            spanGaps: true, points: { show: false }, value: (u, v) => fmt(v) });
        }
        bands.push({ series: [hi, hi + 1], fill: alpha(color, bandKey ? 0.14 : 0.12) });
      }
    }
    return { keys: keys.join("|") + "|" + scale.suffix, data, series, bands, right: right.length > 0,
      fromZero: Boolean(cfg.stack), yLabel: axisLabel(cfg.title, scale) };
  }

  // A chart of step series that each have their own steps (GET .../evaluations/curve: {series}; GET
  // .../reward-hacking: {training, held_out}, the held-out series on the right axis), on the union of their steps.
  function stepSeriesSpec(cfg, answer) {
    const listed = answer.training ? [answer.training, ...answer.held_out] : answer.series;
    const shown = listed.filter((s) => s.steps.length);
    if (!shown.length) return null;
    const xs = Array.from(new Set(shown.flatMap((s) => s.steps))).sort((a, b) => a - b);
    const series = shown.map((s) => {
      const at = new Map(s.steps.map((step, i) => [step, s.values[i]]));
      return { key: s.key, steps: xs, values: xs.map((x) => (at.has(x) ? at.get(x) : null)) };
    });
    const keys = series.map((s) => s.key);
    const right = answer.held_out ? answer.held_out.map((s) => s.key) : [];
    return jobChartSpec({ ...cfg, keys, right }, keys, null, { series });
  }

  async function getJSON(url) {
    const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
    if (!response.ok) throw new Error(url + ": " + response.status);
    return response.json();
  }

  // The job page's charts read the API (GET /api/v1/jobs/{id}/metrics with the page's session cookie): one
  // request per chart, downsampled on the server to about the chart's width; while the job runs each chart
  // asks only for the steps after its own last one (after_step) and appends them.
  function JobCharts(section) {
    this.section = section;
    this.src = section.dataset.metricsSrc;
    this.maxKeys = Number(section.dataset.maxKeys);
    this.live = section.dataset.live === "true";
    this.charts = Array.from(section.querySelectorAll("[data-chart]")).map((el) => ({
      el, cfg: JSON.parse(el.dataset.chart), plot: null, keys: "", state: { zoomed: false, range: null },
      body: null, asked: "",
    }));
    new ResizeObserver(() => this.charts.forEach((c) => c.plot && c.plot.setSize(sizeOf(c.el)))).observe(section);
    document.addEventListener("sfumato:theme", () => this.charts.forEach((c) => this.draw(c, c.spec, true)));
  }

  // Each chart's keys among those reported, and its series from the API (null: nothing to draw yet).
  JobCharts.prototype.load = async function () {
    const reported = (await getJSON(this.src + "/keys")).keys;
    // A retry's attempt replaces the points after the step it resumed from: read every series whole again.
    const attempt = (document.getElementById("job-header") || { dataset: {} }).dataset.attempt;
    if (attempt !== this.attempt) this.charts.forEach((c) => { c.body = null; });
    this.attempt = attempt;
    await Promise.all(this.charts.map(async (c) => {
      if (c.cfg.source === "eval-rewards") {
        const evals = await getJSON(this.src.replace(/\/metrics$/, "/samples/eval-rewards"));
        const body = { series: [{ key: "eval reward", steps: evals.steps, values: evals.values }] };
        c.spec = evals.steps.length ? jobChartSpec({ ...c.cfg, keys: ["eval reward"] }, ["eval reward"], null, body) : null;
        return;
      }
      if (c.cfg.source) {
        c.spec = stepSeriesSpec(c.cfg, await getJSON(this.src.replace(/\/metrics$/, "/" + c.cfg.source)));
        return;
      }
      const keys = chartKeys(c.cfg, reported).slice(0, this.maxKeys);
      const band = c.cfg.band && reported.includes(c.cfg.band[1]) && keys.includes(c.cfg.band[0]) ? c.cfg.band[1] : null;
      const asked = band && keys.length < this.maxKeys ? keys.concat([band]) : keys;
      if (!keys.length) {
        c.spec = null;
        return;
      }
      const width = Math.max(300, Math.round(c.el.clientWidth));
      const url = this.src + "?keys=" + encodeURIComponent(asked.join(",")) + "&max_points=" + width;
      if (c.body && c.asked === asked.join(",")) {
        // The same series as before: only the steps after this chart's own last one, appended.
        const last = c.body.series[0].steps[c.body.series[0].steps.length - 1];
        appendSeries(c.body, await getJSON(url + "&after_step=" + (last == null ? -1 : last)));
      } else {
        c.body = await getJSON(url);
        c.asked = asked.join(",");
      }
      c.spec = jobChartSpec(c.cfg, keys, asked.length > keys.length ? band : null, c.body);
    }));
  };

  // Append a later answer (same keys, later steps) to a chart's series; undownsampled, min = max = value.
  function appendSeries(held, more) {
    more.series.forEach((s, i) => {
      const h = held.series[i];
      if (!s.steps.length) return;
      if ((s.minimum || h.minimum) && !h.minimum) { h.minimum = h.values.slice(); h.maximum = h.values.slice(); }
      h.steps.push(...s.steps);
      h.values.push(...s.values);
      h.wall_times.push(...s.wall_times);
      if (h.minimum) { h.minimum.push(...(s.minimum || s.values)); h.maximum.push(...(s.maximum || s.values)); }
    });
  }

  // (Re)build a chart when its set of series changed, else hand uPlot the new data (keeping zoom and hidden
  // series).
  JobCharts.prototype.draw = function (c, spec, rebuild) {
    const card = c.el.closest(".chart-card");
    if (!spec) {
      if (!c.plot) placeholder(c.el, "Waiting for the first points…");
      card.classList.toggle("no-data", !c.plot);
      // Nothing to show once the job has ended, or an executor panel the executor has nothing for (native):
      // the card hides itself rather than show an empty frame.
      card.hidden = !c.plot && (!this.live || c.cfg.id === "executor");
      return;
    }
    card.classList.toggle("no-data", false);
    card.hidden = false;
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
      scales: { x: { time: false }, y: { range: spec.fromZero ? (u, min, max) => [0, max * 1.08 || 1] : valueRange },
        y2: { range: valueRange } },
      axes: axes(c.el, spec.yLabel, spec.right, "step"),
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

  // The job header (progress, gallery) refreshes on this, so that it moves with the charts.
  function polled() {
    document.body.dispatchEvent(new CustomEvent("sfumato:charts-polled"));
  }

  // Whether the job has finished, as the job header (polled by htmx while the job runs) last showed it.
  function headerFinished() {
    const header = document.getElementById("job-header");
    return Boolean(header) && header.dataset.live === "false";
  }

  JobCharts.prototype.start = async function () {
    try {
      await this.load();
      this.charts.forEach((c) => this.draw(c, c.spec, false));
    } catch (err) {
      this.charts.forEach((c) => placeholder(c.el, "Could not load metrics."));
      console.warn(err);
    }
    this.section.dataset.polling = String(this.live);
    if (this.live) {
      polled();
      setTimeout(() => this.tick(), POLL_MS);
    }
  };

  JobCharts.prototype.tick = async function () {
    // Read before asking: once the job has finished, this answer holds every point and is the last one.
    const finished = headerFinished();
    try {
      await this.load();
      this.charts.forEach((c) => this.draw(c, c.spec, false));
    } catch (err) {
      console.warn(err);
    }
    if (finished) {
      this.section.dataset.polling = "false";  // finished: no more requests
      return;
    }
    polled();
    setTimeout(() => this.tick(), POLL_MS);
  };

  // ---- compare page --------------------------------------------------------------------------

  // A series' own points: the steps of the shared axis where the key has a value (jobs overlaid on one chart
  // each have their own steps and wall times).
  function reportedPoints(s) {
    const kept = s.values.map((v, i) => i).filter((i) => s.values[i] != null);
    return { key: s.key, steps: kept.map((i) => s.steps[i]), values: kept.map((i) => s.values[i]),
      wall_times: kept.map((i) => s.wall_times[i]) };
  }

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
        const url = "/api/v1/jobs/" + job.id + "/metrics?keys=" + encodeURIComponent(keys) + "&max_points=" + Math.round(width);
        const body = await getJSON(url);
        this.data.set(job.id, new Map(body.series.map((s) => [s.key, reportedPoints(s)])));
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
      const reported = this.jobs.map((job) => this.data.get(job.id) && this.data.get(job.id).get(c.cfg.key)).filter(Boolean);
      const scale = scaleOf(c.cfg.unit, reported.map((s) => s.values));
      const series = [{ label: this.axis === "time" ? "wall time" : "step", value: this.axis === "time" ? (u, v) => formatSeconds(v) : undefined }];
      this.jobs.forEach((job, i) => {
        const s = this.data.get(job.id) && this.data.get(job.id).get(c.cfg.key);
        if (!s || !s.steps.length) return;
        const xs = this.axis === "time" ? s.wall_times.map((w) => w - s.wall_times[0]) : s.steps;
        tables.push([xs, toDisplay(scale, s.values)]);
        series.push({ label: "#" + job.id + " " + legendName(job.name) + " (" + job.executor + ")", stroke: style[i].color, dash: style[i].dash,
          width: 2, spanGaps: true, points: { show: false }, value: (u, v) => formatter(scale)(v) });
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
        scales: { x: { time: false }, y: { range: valueRange } },
        axes: axes(c.el, axisLabel(c.cfg.title, scale), false, this.axis === "time" ? "wall time" : "step"),
        series,
        cursor: { drag: { x: true, y: false, setScale: true } },
      }, data, c.el);
    }
  };

  // ---- compare page: reward against running seconds --------------------------------------------
  // Drawn from the compare answer itself (GET /api/v1/compare: each row's reward_curve and the answer's
  // reward_target), so the chart's seconds and R are the table's. Redrawn when the R control swaps the table.

  function RewardSecondsChart(el) {
    this.el = el;
    this.jobs = JSON.parse(el.dataset.rewardSeconds);
    this.plot = null;
    new ResizeObserver(() => this.plot && this.plot.setSize(sizeOf(el))).observe(el);
    document.addEventListener("sfumato:theme", () => this.load());
    document.body.addEventListener("htmx:afterSwap", (event) => {
      if (event.target.id === "compare-summary" || event.target.closest("#compare-summary")) this.load();
    });
  }

  RewardSecondsChart.prototype.load = async function () {
    const summary = document.getElementById("compare-summary");
    const target = summary ? summary.dataset.rewardTarget : "";
    let url = "/api/v1/compare?jobs=" + this.jobs.map((j) => j.id).join(",");
    if (target) url += "&reward_target=" + encodeURIComponent(target);
    let answer;
    try {
      answer = await getJSON(url);
    } catch (err) {
      placeholder(this.el, "Could not load the compare answer.");
      console.warn(err);
      return;
    }
    const tables = [];
    const series = [{ label: "seconds", value: (u, v) => formatSeconds(v) }];
    let last = 0;
    answer.jobs.forEach((row, i) => {
      const curve = row.reward_curve;
      if (!curve.seconds.length) return;
      last = Math.max(last, curve.seconds[curve.seconds.length - 1]);
      tables.push([curve.seconds, curve.rewards]);
      series.push({ label: "#" + row.id + " " + legendName(row.name) + " (" + row.algorithm + ", " + row.executor + ", " + curve.source + ")",
        stroke: PALETTE[i % PALETTE.length], width: 2, spanGaps: true, points: { show: false } });
    });
    if (this.plot) this.plot.destroy();
    this.plot = null;
    if (!tables.length) {
      placeholder(this.el, "No job reported a reward yet.");
      return;
    }
    if (answer.reward_target !== null) {
      tables.push([[0, last], [answer.reward_target, answer.reward_target]]);
      series.push({ label: "R", stroke: cssVar("--pico-muted-color", "#888"), dash: [6, 4], width: 1, points: { show: false } });
    }
    this.el.replaceChildren();
    this.plot = new uPlot({
      ...sizeOf(this.el),
      scales: { x: { time: false }, y: { range: valueRange } },
      axes: axes(this.el, "reward", false, "running seconds"),
      series,
      cursor: { drag: { x: true, y: false, setScale: true } },
    }, uPlot.join(tables), this.el);
  };

  // For the experiment page's charts (experiment_charts.js): the same axes, sizes, colours and reads.
  window.SfumatoCharts = { axes, sizeOf, getJSON, executorColor, alpha, placeholder, zoomHook, DASHES };

  document.addEventListener("DOMContentLoaded", function () {
    const jobSection = document.querySelector("[data-metrics-src]");
    if (jobSection) new JobCharts(jobSection).start();
    const compareSection = document.querySelector("[data-jobs]");
    if (compareSection) new CompareCharts(compareSection).start();
    const rewardSeconds = document.querySelector("[data-reward-seconds]");
    if (rewardSeconds) new RewardSecondsChart(rewardSeconds).load();
  });
})();
