"use strict";
// The gallery index's filters: everything is in the page; a filter only hides rows,
// model columns and task groups, and fades the cells whose verdict is not the one chosen.
(() => {
  const $ = (id) => document.getElementById(id);
  const grid = $("grid");
  const rows = [...grid.querySelectorAll("tr[data-level]")];
  const boxes = [...document.querySelectorAll("#filters input[data-model]")];
  const cells = rows.map((row) => [...row.querySelectorAll("td[data-v]")]);

  function apply() {
    const task = $("task").value, level = $("level").value, verdict = $("verdict").value;
    const hidden = new Set(boxes.filter((box) => !box.checked).map((box) => box.dataset.model));
    $("hidden-models").textContent = [...hidden].map((m) => `.${m} { display: none; }`).join("\n");
    document.body.classList.toggle("strips", $("strips").checked);
    const open = new Set();
    let shown = 0;
    rows.forEach((row, r) => {
      let visible = (!task || row.dataset.task === task) && (!level || row.dataset.level === level);
      let matching = false;
      for (const cell of cells[r]) {
        const match = !verdict || cell.dataset.v === verdict;
        cell.classList.toggle("dim", !match);
        matching ||= match && ![...hidden].some((m) => cell.classList.contains(m));
      }
      if (verdict) visible &&= matching;
      row.hidden = !visible;
      if (visible) { shown += 1; open.add(row.dataset.task); }
    });
    for (const body of grid.tBodies) body.hidden = !open.has(body.dataset.task);
    $("shown").textContent = `${shown} of ${rows.length} instances shown`;
  }

  $("filters").addEventListener("change", apply);
  // As written, the page shows everything; a reload may bring back the boxes' last state.
  const fresh = !$("task").value && !$("level").value && !$("verdict").value
    && !$("strips").checked && boxes.every((box) => box.checked);
  if (fresh) $("shown").textContent = `${rows.length} of ${rows.length} instances shown`;
  else apply();
})();
