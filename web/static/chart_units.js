// Sfumato chart units and ticks (charts.js reads them as window.SfumatoChartUnits): a unit scaled to the
// values' range, tick labels with the decimals their spacing needs, a tight axis around a flat series.
(function () {
  "use strict";

  const MIB = 1048576;
  const GIB = 1073741824;

  // The unit a chart's values are drawn in, scaled to their range: bytes as MiB or GiB, seconds as ms or s.
  function scaleOf(unit, columns) {
    let top = 0;
    for (const column of columns) for (const v of column) if (v != null && Math.abs(v) > top) top = Math.abs(v);
    if (unit === "bytes") return top >= GIB ? { div: GIB, suffix: "GiB" } : { div: MIB, suffix: "MiB" };
    if (unit === "s" && top > 0 && top < 1) return { div: 1e-3, suffix: "ms" };
    return { div: 1, suffix: unit || "" };
  }

  function toDisplay(scale, values) {
    return scale.div === 1 ? values : values.map((v) => (v == null ? null : v / scale.div));
  }

  function formatter(scale) {
    const suffix = scale && scale.suffix ? " " + scale.suffix : "";
    return (v) => {
      if (v == null) return "—";
      const a = Math.abs(v);
      if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(2) + suffix;
      return String(Number(v.toPrecision(4))) + suffix;
    };
  }

  // Tick labels with as many decimals as the tick spacing needs: no two ticks read the same.
  function tickLabels(el, axisName) {
    return (u, vals, axisIdx, space, incr) => {
      let decimals = 0;
      while (decimals < 8 && Math.abs(incr * 10 ** decimals - Math.round(incr * 10 ** decimals)) > 1e-6 * 10 ** decimals) decimals++;
      const labels = vals.map((v) => {
        if (v == null) return "";
        const a = Math.abs(v);
        return a !== 0 && (a < 1e-4 || a >= 1e6) ? v.toExponential(Math.min(decimals, 3)) : v.toFixed(decimals);
      });
      if (el) el.dataset[axisName] = JSON.stringify(labels);  // what the axis shows, for people and tests
      return labels;
    };
  }

  // A flat series gets a tight axis around its value; others uPlot's rounded range.
  function valueRange(u, min, max) {
    if (min == null || max == null) return [0, 1];
    if (max - min <= Math.abs(max) * 1e-9) {
      const half = Math.abs(max) * 0.02 || 0.01;
      return [min - half, max + half];
    }
    return uPlot.rangeNum(min, max, 0.1, true);
  }

  function axisLabel(title, scale) {
    return scale.suffix ? title + " (" + scale.suffix + ")" : title;
  }

  function formatSeconds(v) {
    if (v == null) return "—";
    if (v < 120) return v.toFixed(0) + " s";
    if (v < 7200) return (v / 60).toFixed(1) + " min";
    return (v / 3600).toFixed(2) + " h";
  }

  window.SfumatoChartUnits = { scaleOf, toDisplay, formatter, tickLabels, valueRange, axisLabel, formatSeconds };
})();
