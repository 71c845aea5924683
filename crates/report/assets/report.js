// transcope report: draws the embedded model (see crates/report/src/lib.rs) with d3.
// Lanes are HTML rows (a label and one small SVG each, `content-visibility: auto`, so
// the browser lays out and paints only the rows on screen); d3 does the scales, the
// axis, the zoom and the glyph shapes.
(function () {
  "use strict";
  var t0 = performance.now();
  var model = JSON.parse(document.getElementById("report-data").textContent);

  // Okabe & Ito's colour-blind-safe palette (black left out: it is the markers').
  var PALETTE = ["#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7"];
  var OTHER = "#A3A3A3";
  var NONE = "#DDDDDD";
  var SOLID = PALETTE.length;
  var LANE_H = 20;
  var TRACK_H = 18;

  var fmt = d3.timeFormat("%Y-%m-%d %H:%M:%S");
  var fmtShort = d3.timeFormat("%Y-%m-%d %H:%M");
  var num = d3.format(",");
  var usd = d3.format("$,.2f");

  function luminance(hex) {
    var c = d3.rgb(hex);
    var f = function (v) { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b);
  }
  // Black or white text, whichever contrasts more with the fill (WCAG's ratio).
  function ink(hex) {
    var l = luminance(hex);
    return (l + 0.05) / 0.05 >= 1.05 / (l + 0.05) ? "#000" : "#fff";
  }
  function baseColour(key) {
    if (key.kind === "none") return NONE;
    if (key.colour < 0) return OTHER;
    return PALETTE[key.colour % SOLID];
  }
  function fill(key) {
    if (key.kind !== "none" && key.colour >= SOLID) return "url(#hatch-" + (key.colour - SOLID) + ")";
    return baseColour(key);
  }

  // Hatched twins of the palette for keys 8 to 14 (a second cue besides colour).
  var defs = d3.select("#patterns defs");
  PALETTE.forEach(function (c, i) {
    var p = defs.append("pattern").attr("id", "hatch-" + i).attr("patternUnits", "userSpaceOnUse")
      .attr("width", 6).attr("height", 6).attr("patternTransform", "rotate(45)");
    p.append("rect").attr("width", 6).attr("height", 6).attr("fill", c);
    p.append("rect").attr("width", 2).attr("height", 6).attr("fill", ink(c) === "#000" ? "rgba(0,0,0,0.45)" : "rgba(255,255,255,0.6)");
  });

  var keys = model.keys;
  var scopes = model.scopes.map(function (s) {
    return { key: keys[s[0]], project_id: s[1], project: s[2], worktree: s[3], branch: s[4], task: s[5], cwd: s[6] };
  });
  var lanes = model.lanes;
  var types = model.types;
  var markersByLane = lanes.map(function () { return []; });
  model.markers.forEach(function (m) {
    markersByLane[m[0]].push({
      lane: m[0], at: m[1], type: types[m[2]], content: m[3], attribution: m[4], project_id: m[5],
      worktree: m[6], branch: m[7], task: m[8], state: m[9], recorded: m[10]
    });
  });

  // Marker glyphs by type: d3's symbols, the known types first.
  var SYMBOLS = [d3.symbolCircle, d3.symbolDiamond, d3.symbolTriangle, d3.symbolSquare,
    d3.symbolStar, d3.symbolCross, d3.symbolWye];
  var KNOWN = ["lesson", "decision", "signal", "note", "todo", "fact", "question"];
  var typeSymbol = {};
  types.slice().sort(function (a, b) {
    var ia = KNOWN.indexOf(a), ib = KNOWN.indexOf(b);
    return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib) || d3.ascending(a, b);
  }).forEach(function (t, i) {
    typeSymbol[t] = SYMBOLS[i % SYMBOLS.length];
  });
  function glyph(type, size) { return d3.symbol().type(typeSymbol[type] || d3.symbolCircle).size(size || 64)(); }

  function base(path) {
    if (!path) return "";
    var parts = path.split("/").filter(Boolean);
    return parts.length ? parts[parts.length - 1] : path;
  }
  function keyName(k) { return k.label || "(no scope)"; }
  function segLabel(s) {
    var parts = [];
    if (s.worktree) parts.push("wt " + base(s.worktree));
    if (s.branch) parts.push(s.branch);
    if (s.task) parts.push("task " + s.task);
    if (parts.length) return parts.join(" · ");
    return s.key.kind === "folder" ? base(s.key.label) : keyName(s.key);
  }

  // ---- summary
  var roots = lanes.filter(function (l) { return !l.parent; }).length;
  var nSegs = d3.sum(lanes, function (l) { return l.segs.length; });
  var summary = [
    num(lanes.length) + " sessions (" + num(lanes.length - roots) + " sub-agents)",
    num(nSegs) + " transitions",
    num(model.markers.length) + " markers"
  ];
  if (model.extent) summary.push(fmtShort(new Date(model.extent[0])) + " – " + fmtShort(new Date(model.extent[1])) + " (local time)");
  if (model.window.projects.length) summary.push("projects: " + model.window.projects.join(", "));
  if (model.hidden) summary.push(num(model.hidden) + " rows or markers without a time or session not drawn");
  summary.push("generated " + model.generated_at);
  d3.select("#summary").text(summary.join(" · "));

  // ---- legend
  var legend = d3.select("#legend");
  legend.append("span").attr("class", "group-title").text("Colour: project in force");
  var named = keys.filter(function (k) { return k.kind === "none" || k.colour >= 0; });
  var others = keys.length - named.length;
  named.forEach(function (k) {
    var item = legend.append("span").attr("class", "item");
    item.append("svg").attr("width", 22).attr("height", 12).attr("aria-hidden", "true")
      .append("rect").attr("class", "seg").attr("x", 0.5).attr("y", 0.5).attr("width", 21).attr("height", 11).attr("fill", fill(k));
    item.append("span").text(keyName(k));
    if (k.kind === "folder") item.append("span").attr("class", "kind").text("(folder; no project id)");
  });
  if (others > 0) {
    var o = legend.append("span").attr("class", "item");
    o.append("svg").attr("width", 22).attr("height", 12).attr("aria-hidden", "true")
      .append("rect").attr("class", "seg").attr("x", 0.5).attr("y", 0.5).attr("width", 21).attr("height", 11).attr("fill", OTHER);
    o.append("span").text(others + " other projects (named on hover)");
  }
  var b = legend.append("span").attr("class", "item");
  b.append("svg").attr("width", 22).attr("height", 12).attr("aria-hidden", "true").call(function (s) {
    s.append("rect").attr("class", "life").attr("x", 0.5).attr("y", 0.5).attr("width", 21).attr("height", 11);
    s.append("line").attr("x1", 11).attr("x2", 11).attr("y1", 0).attr("y2", 12).attr("stroke", "#1a1a1a").attr("stroke-width", 1.5);
  });
  b.append("span").text("a dark edge is a transition (a scope-log row); grey: the session before its first");
  if (types.length) {
    legend.append("span").attr("class", "group-title").text("Markers");
    types.forEach(function (t) {
      var n = model.markers.filter(function (m) { return types[m[2]] === t; }).length;
      var item = legend.append("span").attr("class", "item");
      item.append("svg").attr("width", 14).attr("height", 14).attr("aria-hidden", "true")
        .append("path").attr("class", "marker").attr("transform", "translate(7,7)").attr("d", glyph(t, 60));
      item.append("span").text(t + " (" + num(n) + ")");
    });
  }

  // ---- lanes
  var chart = d3.select("#chart");
  var labelW = 260;
  function trackWidth() {
    var w = document.getElementById("chart").clientWidth - labelW - 2;
    return Math.max(320, w);
  }
  var W = trackWidth();
  var extent = model.extent || [Date.now() - 864e5, Date.now()];
  if (extent[0] === extent[1]) extent = [extent[0] - 6e4, extent[1] + 6e4];
  var x = d3.scaleTime().domain([new Date(extent[0]), new Date(extent[1])]).range([0, W]);
  var xz = x;
  var transform = d3.zoomIdentity;
  // "Each session fills the width": every lane gets its own time scale (its life
  // across the track), so short sessions far apart in time can be read side by side.
  var fitEach = false;
  function laneBase(d) {
    var l = lifeOf(d);
    if (!fitEach || !l) return x;
    var a = l[0], z = l[1] > l[0] ? l[1] : l[0] + 1000;
    return d3.scaleTime().domain([new Date(a), new Date(z)]).range([6, W - 6]);
  }
  function laneOf(node) { return node.parentNode.parentNode.__data__; }

  var axis = d3.select("#axis").attr("width", W).attr("height", 28);
  var axisG = axis.append("g").attr("transform", "translate(0,27)");
  var axisNote = axis.append("text").attr("x", 6).attr("y", 18).style("display", "none")
    .text("each lane spans its own session, first to last recorded time");

  var laneSel = d3.select("#lanes").selectAll("div.lane").data(lanes).join("div")
    .attr("class", function (d) { return "lane depth-" + d.depth; })
    .attr("data-session", function (d) { return d.key; });
  laneSel.append("div").attr("class", "lane-label")
    .attr("title", function (d) { return d.key + (d.agent ? " (" + d.agent + ")" : "") + (d.transcript ? "\n" + d.transcript : ""); })
    .call(function (s) {
      // The agent first: a long key is cut at the label's edge, the agent never.
      s.append("span").text(function (d) { return d.depth ? "↳ " : ""; });
      s.append("span").attr("class", "agent").text(function (d) { return d.agent || ""; });
      s.append("span").text(function (d) { return (d.agent ? " " : "") + d.key; });
    });
  var tracks = laneSel.append("svg").attr("class", "track").attr("width", W).attr("height", TRACK_H)
    .attr("role", "group")
    .attr("aria-label", function (d, i) {
      var names = [];
      d.segs.forEach(function (s) { var n = segLabel(scopes[s[2]]); if (names.indexOf(n) < 0) names.push(n); });
      return (d.depth ? "sub-agent " : "session ") + d.key + ": " + d.segs.length + " transitions" +
        (names.length ? " (" + names.slice(0, 6).join("; ") + (names.length > 6 ? "; …" : "") + ")" : "") +
        ", " + markersByLane[i].length + " markers";
    });
  tracks.append("rect").attr("class", "life").attr("y", 2).attr("height", TRACK_H - 4);
  var segG = tracks.append("g").attr("class", "segs");
  var segSel = segG.selectAll("rect.seg").data(function (d) { return d.segs; }).join("rect")
    .attr("class", "seg").attr("y", 2).attr("height", TRACK_H - 4)
    .attr("fill", function (s) { return fill(scopes[s[2]].key); });
  var labelG = tracks.append("g").attr("class", "labels");
  var markG = tracks.append("g").attr("class", "marks");
  var markSel = markG.selectAll("path.marker").data(function (d, i) { return markersByLane[i]; }).join("path")
    .attr("class", "marker")
    .attr("d", function (m) { return glyph(m.type); })
    .attr("tabindex", 0)
    .attr("role", "img")
    .attr("aria-label", function (m) {
      var text = m.content.length > 160 ? m.content.slice(0, 160) + "…" : m.content;
      return m.type + " at " + fmt(new Date(m.at)) + ", " + (m.attribution || "unattributed") + ": " + text;
    });

  function lifeOf(d) { return d.start == null ? null : [d.start, d.end == null ? d.start : d.end]; }

  function draw() {
    xz = transform.rescaleX(x);
    lanes.forEach(function (d) { d._x = fitEach ? transform.rescaleX(laneBase(d)) : xz; });
    axisG.style("display", fitEach ? "none" : null).call(d3.axisTop(xz).ticks(Math.max(2, Math.floor(W / 110))));
    axisNote.style("display", fitEach ? null : "none");
    tracks.attr("width", W);
    tracks.select("rect.life")
      .attr("x", function (d) { var l = lifeOf(d); return l ? d._x(l[0]) : -10; })
      .attr("width", function (d) { var l = lifeOf(d); return l ? Math.max(2, d._x(l[1]) - d._x(l[0])) : 0; });
    segSel
      .attr("x", function (s) { return laneOf(this)._x(s[0]); })
      .attr("width", function (s) { var xs = laneOf(this)._x; return Math.max(1, xs(s[1]) - xs(s[0])); });
    markSel.attr("transform", function (m) { return "translate(" + lanes[m.lane]._x(m.at) + "," + TRACK_H / 2 + ")"; });
    // Labels only where they fit: worktree · branch · task.
    labelG.each(function (d) {
      var xz = d._x;
      var wide = d.segs.filter(function (s) {
        var a = Math.max(0, xz(s[0])), z = Math.min(W, xz(s[1]));
        return z - a > 56;
      });
      d3.select(this).selectAll("text.seg-label").data(wide).join("text")
        .attr("class", "seg-label")
        .attr("x", function (s) { return Math.max(0, xz(s[0])) + 4; })
        .attr("y", TRACK_H / 2 + 4)
        .attr("fill", function (s) { var k = scopes[s[2]].key; return ink(baseColour(k)); })
        .attr("stroke", function (s) { var k = scopes[s[2]].key; return ink(baseColour(k)) === "#000" ? "rgba(255,255,255,0.8)" : "rgba(0,0,0,0.6)"; })
        .text(function (s) {
          var room = Math.min(W, xz(s[1])) - Math.max(0, xz(s[0])) - 8;
          var t = segLabel(scopes[s[2]]);
          var fit = Math.floor(room / 6);
          return t.length > fit ? t.slice(0, Math.max(1, fit - 1)) + "…" : t;
        });
    });
    var dom = xz.domain();
    d3.select("#win-shown").text((fitEach ? "each session fills the width; zoom " + transform.k.toFixed(1) + "× · " : "") +
      "showing " + fmtShort(dom[0]) + " – " + fmtShort(dom[1]));
    var local = d3.timeFormat("%Y-%m-%dT%H:%M:%S");
    document.getElementById("win-from").value = local(dom[0]);
    document.getElementById("win-to").value = local(dom[1]);
  }

  // ---- zoom: drag to move, Ctrl + wheel (or wheel over the axis) to zoom, keys, buttons
  var span = extent[1] - extent[0];
  var zoom = d3.zoom()
    .scaleExtent([1, Math.max(1, span / 60000)])
    .translateExtent([[0, 0], [W, 0]])
    .extent([[0, 0], [W, 0]])
    .filter(function (event) {
      if (event.type === "wheel") return event.ctrlKey || !!event.target.closest("#axis-row");
      if (event.target.closest && event.target.closest(".lane-label, button, input")) return false;
      return !event.button;
    })
    .on("zoom", function (event) {
      transform = event.transform;
      schedule();
    });
  var pending = false;
  function schedule() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(function () { pending = false; draw(); });
  }
  chart.call(zoom).on("dblclick.zoom", null);
  function zoomBy(k) { chart.call(zoom.scaleBy, k, [W / 2, 0]); }
  function panBy(frac) { chart.call(zoom.translateBy, -W * frac / d3.zoomTransform(chart.node()).k, 0); }
  function reset() { chart.call(zoom.transform, d3.zoomIdentity); }
  function showWindow(a, z) {
    if (!(a < z)) return;
    var x0 = x(a), x1 = x(z);
    var k = Math.max(1, W / Math.max(1e-9, x1 - x0));
    chart.call(zoom.transform, d3.zoomIdentity.scale(k).translate(-x0, 0));
  }
  d3.select("#zoom-in").on("click", function () { zoomBy(2); });
  d3.select("#zoom-out").on("click", function () { zoomBy(0.5); });
  d3.select("#pan-left").on("click", function () { panBy(-0.25); });
  d3.select("#pan-right").on("click", function () { panBy(0.25); });
  d3.select("#zoom-reset").on("click", reset);
  d3.select("#fit-each").on("click", function () {
    fitEach = !fitEach;
    d3.select(this).attr("aria-pressed", String(fitEach));
    reset();
    draw();
  });
  d3.select("#win-apply").on("click", function () {
    var a = new Date(document.getElementById("win-from").value);
    var z = new Date(document.getElementById("win-to").value);
    showWindow(a, z);
  });
  document.addEventListener("keydown", function (e) {
    if (e.target.closest && e.target.closest("input")) {
      if (e.key === "Enter") document.getElementById("win-apply").click();
      return;
    }
    if (e.key === "Escape") { hideTip(); return; }
    if (!e.target.closest || !e.target.closest("#chart, .controls")) return;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var done = true;
    if (e.key === "+" || e.key === "=") zoomBy(2);
    else if (e.key === "-" || e.key === "_") zoomBy(0.5);
    else if (e.key === "ArrowLeft") panBy(-0.25);
    else if (e.key === "ArrowRight") panBy(0.25);
    else if (e.key === "0" || e.key === "Home") reset();
    else if (e.key === "f") document.getElementById("fit-each").click();
    else done = false;
    if (done) e.preventDefault();
  });

  // ---- tooltips: markers on hover and focus, segments on hover
  var tip = d3.select("#tooltip");
  function hideTip() { tip.attr("hidden", true); }
  function place(rect) {
    var node = tip.node();
    var tw = node.offsetWidth, th = node.offsetHeight;
    var left = Math.min(window.innerWidth - tw - 8, Math.max(8, rect.left + rect.width / 2 - tw / 2));
    var top = rect.top - th - 8;
    if (top < 8) top = rect.bottom + 8;
    tip.style("left", left + "px").style("top", top + "px");
  }
  function fields(dl, pairs) {
    pairs.forEach(function (p) {
      if (p[1] == null || p[1] === "") return;
      dl.append("dt").text(p[0]);
      dl.append("dd").text(p[1]);
    });
  }
  function showMarker(m, rect) {
    tip.html("");
    tip.append("div").attr("class", "t-head").text(m.type + " · " + fmt(new Date(m.at)));
    tip.append("div").text(m.content);
    var dl = tip.append("dl");
    fields(dl, [["attribution", m.attribution || "none"], ["project", m.project_id], ["worktree", m.worktree],
      ["branch", m.branch], ["task", m.task], ["state", m.state], ["recorded", m.recorded],
      ["session", lanes[m.lane].key]]);
    tip.attr("hidden", null);
    place(rect);
  }
  function showSegment(s, lane, rect) {
    var sc = scopes[s[2]];
    tip.html("");
    tip.append("div").attr("class", "t-head").text(keyName(sc.key) + (sc.key.kind === "folder" ? " (folder; no project id)" : ""));
    tip.append("div").attr("class", "t-meta").text(fmt(new Date(s[0])) + " – " + fmt(new Date(s[1])));
    var dl = tip.append("dl");
    fields(dl, [["project", sc.project], ["worktree", sc.worktree], ["branch", sc.branch], ["task", sc.task],
      ["folder", sc.cwd], ["session", lane.key]]);
    tip.attr("hidden", null);
    place(rect);
  }
  var lanesNode = document.getElementById("lanes");
  lanesNode.addEventListener("focusin", function (e) {
    if (e.target.classList && e.target.classList.contains("marker")) showMarker(d3.select(e.target).datum(), e.target.getBoundingClientRect());
  });
  lanesNode.addEventListener("focusout", hideTip);
  lanesNode.addEventListener("mouseover", function (e) {
    var t = e.target;
    if (!t.classList) return;
    if (t.classList.contains("marker")) showMarker(d3.select(t).datum(), t.getBoundingClientRect());
    else if (t.classList.contains("seg")) {
      var r = t.getBoundingClientRect();
      var box = { left: e.clientX - 1, width: 2, top: r.top, bottom: r.bottom };
      showSegment(d3.select(t).datum(), d3.select(t.parentNode).datum(), box);
    }
  });
  lanesNode.addEventListener("mouseout", function (e) {
    if (document.activeElement && document.activeElement.classList && document.activeElement.classList.contains("marker") && document.activeElement === e.target) return;
    hideTip();
  });

  // ---- usage
  function usageTable(parent, caption, rows, textCols) {
    var table = parent.append("table").attr("class", "usage");
    table.append("caption").text(caption);
    var head = textCols.map(function (c) { return c[0]; }).concat(["tokens", "input", "output", "cache write", "cache read", "requests", "cost"]);
    table.append("thead").append("tr").selectAll("th").data(head).join("th")
      .attr("scope", "col").attr("class", function (d, i) { return i < textCols.length ? "text" : null; }).text(function (d) { return d; });
    var max = d3.max(rows, function (r) { return r.total_tokens; }) || 1;
    var bar = d3.scaleLinear().domain([0, max]).range([0, 120]);
    var keyOf = {};
    keys.forEach(function (k) { if (k.kind === "project") keyOf[k.label] = k; });
    var tr = table.append("tbody").selectAll("tr").data(rows).join("tr");
    textCols.forEach(function (c) {
      tr.append("td").attr("class", "text").attr("title", function (r) { return r[c[1]] || ""; })
        .text(function (r) { return r[c[1]] || "(none)"; });
    });
    var tok = tr.append("td");
    tok.append("span").attr("class", "bar").attr("aria-hidden", "true")
      .style("width", function (r) { return Math.max(1, bar(r.total_tokens)) + "px"; })
      .style("background", function (r) { var k = keyOf[r.project_id]; return k ? baseColour(k) : OTHER; });
    tok.append("span").text(function (r) { return num(r.total_tokens); });
    ["input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "messages"].forEach(function (f) {
      tr.append("td").text(function (r) { return num(r[f]); });
    });
    tr.append("td").text(function (r) {
      if (r.cost_usd == null) return "–";
      return usd(r.cost_usd) + (r.unpriced_messages ? " (+" + r.unpriced_messages + " unpriced)" : "");
    });
  }
  var usage = d3.select("#usage");
  if (!model.usage.projects.length) {
    usage.append("p").attr("class", "empty").text("No token usage recorded in this window.");
  } else {
    usageTable(usage, "By project", model.usage.projects, [["project", "project_id"]]);
    usageTable(usage, "By task", model.usage.tasks, [["project", "project_id"], ["task", "task"]]);
    usageTable(usage, "By agent", model.usage.agents, [["agent", "agent"]]);
  }

  draw();
  window.addEventListener("resize", function () {
    var w = trackWidth();
    if (Math.abs(w - W) < 2) return;
    var dom = xz.domain();
    W = w;
    x.range([0, W]);
    axis.attr("width", W);
    zoom.translateExtent([[0, 0], [W, 0]]).extent([[0, 0], [W, 0]]);
    transform = d3.zoomIdentity;
    chart.property("__zoom", d3.zoomIdentity);
    showWindow(dom[0], dom[1]);
    draw();
  });

  // Drawn: the time from navigation to here, once the frame after it is painted.
  requestAnimationFrame(function () {
    setTimeout(function () {
      var ms = performance.now();
      window.__transcopeReport = { drawnMs: ms, scriptMs: ms - t0, fills: PALETTE.concat([OTHER, NONE]) };
      document.documentElement.setAttribute("data-ready", "true");
    }, 0);
  });
})();
