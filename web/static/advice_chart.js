// The advice page's chart: each executor's predicted peak memory against K, with the budget as a dashed line.
(function () {
  "use strict";

  function cssVar(name, fallback) {
    const value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return value || fallback;
  }

  function draw(el) {
    if (el.dataset.drawn || typeof uPlot === "undefined") return;
    el.dataset.drawn = "true";
    const spec = JSON.parse(el.dataset.adviceChart);
    if (!spec.series.length) return;
    const { scaleOf, toDisplay, formatter, tickLabels, axisLabel } = window.SfumatoChartUnits;
    const values = spec.series.map((s) => s.bytes).concat(spec.budget ? [[spec.budget]] : []);
    const scale = scaleOf("bytes", values);
    const ks = spec.series[0].bytes.map((_, i) => i + 1);
    const stroke = cssVar("--pico-muted-color", "#888");
    const grid = { stroke: cssVar("--pico-muted-border-color", "#ddd"), width: 1 };
    const series = [{ label: "K" }];
    const data = [ks];
    for (const s of spec.series) {
      series.push({ label: s.executor, stroke: cssVar("--exec-" + s.executor, cssVar("--exec-other", "#0891b2")), width: 2,
        value: (u, v) => formatter(scale)(v) });
      data.push(toDisplay(scale, s.bytes));
    }
    if (spec.budget) {
      series.push({ label: "budget", stroke: cssVar("--pico-del-color", "#dc2626"), dash: [6, 4], width: 1.5, points: { show: false },
        value: (u, v) => formatter(scale)(v) });
      data.push(toDisplay(scale, ks.map(() => spec.budget)));
    }
    el.dataset.yTicks = "";
    new uPlot({
      width: Math.max(280, Math.floor(el.clientWidth)), height: 260,
      scales: { x: { time: false } },
      axes: [
        { stroke, grid, ticks: grid, incrs: [1, 2, 5, 10, 20, 50], label: "trained steps K", labelSize: 18, labelFont: "12px system-ui", font: "11px system-ui" },
        { stroke, grid, ticks: grid, size: 72, font: "11px system-ui", label: axisLabel("Peak memory", scale), labelSize: 18,
          labelFont: "12px system-ui", values: tickLabels(el, "yTicks") },
      ],
      series,
    }, data, el);
  }

  function drawAll() {
    document.querySelectorAll("[data-advice-chart]").forEach(draw);
  }

  document.addEventListener("DOMContentLoaded", drawAll);
  document.addEventListener("htmx:afterSwap", drawAll);
})();
