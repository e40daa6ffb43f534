// The leaderboard's one script: the scenario and task views, and sorting by a column, whose tie-group ranks the
// page carries per row (data-cells: column -> [value, rank]). Without it the page shows the pooled table sorted
// by its first column, every number readable.
(function () {
  "use strict";
  var board = document.getElementById("board");
  if (!board) { return; }
  var scope = document.getElementById("scope");
  var view = document.getElementById("view");
  var patterns = document.getElementById("patterns-wrap");
  var wrap = document.getElementById("board-wrap");
  var sorted = { column: null, descending: true };

  function cells(row) { return JSON.parse(row.getAttribute("data-cells") || "{}"); }

  function visibleBody() { return board.querySelector('tbody[data-scope="' + scope.value + '"]'); }

  function showScope() {
    board.querySelectorAll("tbody").forEach(function (body) { body.hidden = body.getAttribute("data-scope") !== scope.value; });
    if (sorted.column) { sortBy(sorted.column, sorted.descending); }
  }

  function showView() {
    var chosen = view.value;
    var showPatterns = chosen === "patterns";
    if (patterns) { patterns.hidden = !showPatterns; }
    wrap.hidden = showPatterns;
    board.querySelectorAll("[class*='task-']").forEach(function (cell) {
      var task = (cell.className.match(/task-([a-z]+)/) || [])[1];
      cell.hidden = chosen !== "all" && task !== chosen;
    });
    var first = board.querySelector("thead th[data-col]:not([hidden])");
    if (first && chosen !== "all" && !showPatterns) { sortBy(first.getAttribute("data-col"), true); }
  }

  function sortBy(column, descending) {
    var body = visibleBody();
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = (cells(a)[column] || [null])[0], y = (cells(b)[column] || [null])[0];
      if (x === null && y === null) { return 0; }
      if (x === null) { return 1; }
      if (y === null) { return -1; }
      return descending ? y - x : x - y;
    });
    rows.forEach(function (row) {
      body.appendChild(row);
      if (row.getAttribute("data-ranked") === "yes") {
        var rank = (cells(row)[column] || [null, null])[1];
        row.querySelector("td.rank").textContent = rank === null || rank === undefined ? "—" : String(rank);
      }
    });
    board.querySelectorAll("thead th").forEach(function (th) { if (th.hasAttribute("aria-sort")) { th.setAttribute("aria-sort", "none"); } });
    var header = board.querySelector('thead th[data-col="' + column + '"]');
    if (header) { header.setAttribute("aria-sort", descending ? "descending" : "ascending"); }
    sorted = { column: column, descending: descending };
  }

  board.querySelectorAll("button[data-sort]").forEach(function (button) {
    button.addEventListener("click", function () {
      var column = button.getAttribute("data-sort");
      var descending = column === "cost" ? (sorted.column === column ? !sorted.descending : false)
        : (sorted.column === column ? !sorted.descending : true);
      sortBy(column, descending);
    });
  });
  scope.addEventListener("change", showScope);
  view.addEventListener("change", showView);
  var firstColumn = board.querySelector("thead th[data-default]") || board.querySelector("thead th[data-col]");
  if (firstColumn) { sortBy(firstColumn.getAttribute("data-col"), true); }
}());
