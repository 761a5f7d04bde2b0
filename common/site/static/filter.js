// Filters the rows of each filterable table (no framework, works from file://). A bar of controls
// <div class="filters" data-target="TABLE-ID"> holds select boxes (data-key="K": a row is kept when its data-K
// attribute equals the chosen value; "" is all) and a text box (a row is kept when its text contains the words).
"use strict";
document.querySelectorAll(".filters").forEach(function (bar) {
  var table = document.getElementById(bar.dataset.target);
  if (!table) return;
  var rows = Array.prototype.slice.call(table.tBodies[0].rows);
  var selects = Array.prototype.slice.call(bar.querySelectorAll("select"));
  var text = bar.querySelector("input");
  var count = bar.querySelector(".count");
  function apply() {
    var words = text ? text.value.toLowerCase().split(/\s+/).filter(Boolean) : [];
    var shown = 0;
    rows.forEach(function (row) {
      var keep = selects.every(function (s) {
        return !s.value || row.getAttribute("data-" + s.dataset.key) === s.value;
      });
      if (keep && words.length) {
        var content = row.textContent.toLowerCase();
        keep = words.every(function (w) { return content.indexOf(w) >= 0; });
      }
      row.hidden = !keep;
      if (keep) shown += 1;
    });
    if (count) count.textContent = shown + " of " + rows.length + " rows";
  }
  selects.forEach(function (s) { s.addEventListener("change", apply); });
  if (text) text.addEventListener("input", apply);
  apply();
});
