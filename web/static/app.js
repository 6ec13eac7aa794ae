// Sfumato pages: theme switch, log follow, lightbox, confirmations. No inline scripts anywhere (CSP-friendly).
(function () {
  "use strict";

  const THEME_KEY = "sfumato-theme";
  const saved = localStorage.getItem(THEME_KEY);
  if (saved) document.documentElement.dataset.theme = saved;

  function currentTheme() {
    const set = document.documentElement.dataset.theme;
    if (set) return set;
    return window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
  }

  document.addEventListener("click", function (event) {
    const toggle = event.target.closest("[data-theme-toggle]");
    if (toggle) {
      const next = currentTheme() === "dark" ? "light" : "dark";
      document.documentElement.dataset.theme = next;
      localStorage.setItem(THEME_KEY, next);
      document.dispatchEvent(new CustomEvent("sfumato:theme"));
      return;
    }
    const thumb = event.target.closest("a[data-lightbox]");
    if (thumb && !event.ctrlKey && !event.metaKey) {
      const dialog = document.getElementById("lightbox");
      if (!dialog) return;
      event.preventDefault();
      dialog.querySelector("img").src = thumb.href;
      dialog.querySelector("img").alt = thumb.dataset.caption || "";
      dialog.querySelector("figcaption").textContent = thumb.dataset.caption || "";
      dialog.showModal();
      return;
    }
    if (event.target.matches("dialog.lightbox") || event.target.closest("[data-close]")) {
      event.target.closest("dialog").close();
    }
  });

  // Logs: keep the panel scrolled to the bottom while "follow" is ticked.
  function follow(box) {
    const toggle = document.getElementById("log-follow");
    if (box && (!toggle || toggle.checked)) box.scrollTop = box.scrollHeight;
  }
  document.addEventListener("DOMContentLoaded", function () { follow(document.getElementById("log-box")); });
  document.addEventListener("htmx:afterSettle", function (event) {
    const box = event.target.closest && event.target.closest("#log-box");
    if (box) follow(box);
  });
  document.addEventListener("change", function (event) {
    if (event.target.id === "log-follow" && event.target.checked) follow(document.getElementById("log-box"));
  });

  // Submit form: only the options of the chosen model family, algorithm and executor show (one with an error
  // stays, so that the error can be read); the server leaves the others out of the spec.
  function syncOptionFields() {
    document.querySelectorAll("[data-only-for]").forEach(function (wrap) {
      const parts = wrap.dataset.onlyFor.split("=");
      const chooser = document.querySelector('select[name="' + parts[0] + '"]');
      if (!chooser) return;
      wrap.hidden = parts[1].split(",").indexOf(chooser.value) < 0 && !wrap.querySelector(".field-error");
    });
  }
  document.addEventListener("DOMContentLoaded", syncOptionFields);
  document.addEventListener("change", function (event) {
    if (event.target.matches('select[name="executor.name"], select[name="algorithm.name"], select[name="model.family"]')) {
      syncOptionFields();
    }
  });

  // Destructive forms (cancel a job, remove a member, revoke a token) ask first.
  document.addEventListener("submit", function (event) {
    const form = event.target.closest("form[data-confirm]");
    if (form && !window.confirm(form.dataset.confirm)) event.preventDefault();
  });

  // A refused htmx write that answers with the fragment it targets (a Stop that came too late: 409, or 403)
  // shows that fragment and its message; htmx would otherwise drop an error status's answer.
  document.addEventListener("htmx:beforeSwap", function (event) {
    const html = (event.detail.xhr.getResponseHeader("content-type") || "").startsWith("text/html");
    const asked = event.detail.requestConfig.elt.closest("[data-swap-refusals]");
    if (event.detail.isError && asked && html) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });

  // New experiment: fair timing follows the axes (on with an executor axis, as the server decides in the live
  // cell count) until the user sets it.
  document.addEventListener("htmx:afterSwap", function (event) {
    const preview = document.getElementById("matrix-preview");
    const fair = document.getElementById("f-fair");
    if (preview && fair && !fair.dataset.touched && event.target.contains(preview)) {
      fair.checked = preview.dataset.executorAxis === "true";
    }
  });
  document.addEventListener("change", function (event) {
    if (event.target.id === "f-fair") event.target.dataset.touched = "true";
  });

  // Gallery slider: show the chosen step while dragging.
  document.addEventListener("input", function (event) {
    if (event.target.matches("input[data-step-output]")) {
      const out = document.getElementById(event.target.dataset.stepOutput);
      const steps = JSON.parse(event.target.dataset.steps || "[]");
      if (out) out.textContent = "step " + (steps[event.target.value] ?? event.target.value);
    }
  });
})();
