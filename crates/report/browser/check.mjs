// The report's browser test: loads a report in headless Chromium and checks it
// against the binary's own answers for the same home.
//
//   node check.mjs --bin PATH --home DIR --html FILE --name NAME --out DIR
//
// Asserts:
// * lanes (`#lanes .lane`) = sessions (`transcope sessions --json`), in the same set,
//   sub-agents right after their root;
// * segments (`#lanes rect.seg`) = transitions (`transcope timeline --json` rows of
//   kind `transition`, per session and in total; equal to `sessions`' counts too);
// * marker glyphs (`#lanes path.marker`) = markers (`transcope ledger --json`), per
//   session and in total;
// * no request left the page: every request is intercepted; only the file itself
//   (and data: URLs, which never reach the network) may load; no CSP violation, no
//   console error, no page error;
// * a marker's text shows on keyboard focus, a segment's scope on hover, the
//   keyboard zooms the timeline; every fill takes text at 4.5:1 contrast or more;
// * the screenshot (kept as OUT/NAME.png) is not blank: many colours, spread-out
//   luminance.
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium } from "playwright-core";

function args() {
  const a = {};
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 2) a[argv[i].replace(/^--/, "")] = argv[i + 1];
  for (const k of ["bin", "home", "html", "name", "out"]) if (!a[k]) throw new Error(`--${k} is required`);
  return a;
}

const opt = args();
const failures = [];
function check(ok, what) {
  if (ok) console.log(`  ok   ${what}`);
  else { console.log(`  FAIL ${what}`); failures.push(what); }
}

function transcope(...argv) {
  const r = spawnSync(opt.bin, ["--home", opt.home, ...argv], { encoding: "utf8", maxBuffer: 1 << 30 });
  if (r.status !== 0) throw new Error(`transcope ${argv.join(" ")}: exit ${r.status}: ${r.stderr}`);
  return r.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l));
}

console.log(`== report browser test: ${opt.name} (${opt.html})`);
const sessions = transcope("sessions", "--json", "--no-sync");
const ledger = transcope("ledger", "--json", "--no-sync");
const transitionsOf = {};
let transitions = 0;
for (const s of sessions) {
  const items = transcope("timeline", "--session", s.session, "--json", "--no-sync");
  transitionsOf[s.session] = items.filter((i) => i.kind === "transition").length;
  transitions += transitionsOf[s.session];
}
const markersOf = {};
for (const m of ledger) markersOf[m.session] = (markersOf[m.session] || 0) + 1;
check(sessions.every((s) => s.transitions === transitionsOf[s.session]), "sessions --json and timeline --json agree on every session's transitions");
console.log(`  expect ${sessions.length} sessions, ${transitions} transitions, ${ledger.length} markers`);

const size = statSync(opt.html).size;
check(size < 10 * 1024 * 1024, `the file is under 10 MB (${(size / 1048576).toFixed(2)} MB)`);

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 720 }, deviceScaleFactor: 1 });
  const page = await context.newPage();
  const url = pathToFileURL(resolve(opt.html)).href;
  const requests = [];
  const left = [];
  await context.route("**/*", (route) => {
    const u = route.request().url();
    requests.push(u);
    if (u === url || u.startsWith("data:")) return route.continue();
    left.push(u);
    return route.abort();
  });
  page.on("websocket", (ws) => left.push(ws.url()));
  const errors = [];
  page.on("pageerror", (e) => errors.push(`page error: ${e.message}`));
  page.on("console", (m) => { if (m.type() === "error") errors.push(`console: ${m.text()}`); });
  await page.addInitScript(() => {
    window.__violations = [];
    document.addEventListener("securitypolicyviolation", (e) => window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  const started = Date.now();
  await page.goto(url, { waitUntil: "load" });
  await page.waitForSelector("html[data-ready=true]", { timeout: 60000 });
  const timing = await page.evaluate(() => window.__transcopeReport);
  console.log(`  drawn ${timing.drawnMs.toFixed(0)} ms after navigation (script ${timing.scriptMs.toFixed(0)} ms; wall ${Date.now() - started} ms)`);

  const dom = await page.evaluate(() => {
    const lanes = [...document.querySelectorAll("#lanes .lane")];
    return {
      lanes: lanes.map((l) => ({
        key: l.dataset.session,
        agent: (l.querySelector(".lane-label .agent")?.textContent || "").trim(),
        depth: l.classList.contains("depth-1") ? 1 : 0,
        segs: l.querySelectorAll("rect.seg").length,
        markers: l.querySelectorAll("path.marker").length,
      })),
      segs: document.querySelectorAll("#lanes rect.seg").length,
      usageAgents: [...document.querySelectorAll("#usage table.usage")]
        .filter((t) => t.querySelector("caption")?.textContent === "By agent")
        .flatMap((t) => [...t.querySelectorAll("tbody tr td:first-child")].map((td) => td.textContent)),
      markers: document.querySelectorAll("#lanes path.marker").length,
      focusable: document.querySelectorAll("#lanes path.marker[tabindex='0']").length,
      legend: document.querySelectorAll("#legend .item").length,
      csp: document.querySelector("meta[http-equiv='Content-Security-Policy']")?.content || "",
      violations: window.__violations,
    };
  });
  check(dom.lanes.length === sessions.length, `lane count ${dom.lanes.length} = session count ${sessions.length}`);
  const keys = new Set(sessions.map((s) => s.session));
  check(dom.lanes.every((l) => keys.has(l.key)) && new Set(dom.lanes.map((l) => l.key)).size === dom.lanes.length, "one lane per session, each a session of the index");
  const parentOf = Object.fromEntries(sessions.map((s) => [s.session, s.parent]));
  let nested = true;
  let root = null;
  for (const l of dom.lanes) {
    const p = parentOf[l.key];
    if (l.depth === 0) root = l.key;
    else if (p !== root) nested = false;
    if (p && keys.has(p) && l.depth !== 1) nested = false;
  }
  check(nested, "sub-agents are nested right under their root session");
  check(dom.segs === transitions, `segment count ${dom.segs} = transition count ${transitions}`);
  const agentOf = Object.fromEntries(sessions.map((s) => [s.session, s.agent || ""]));
  check(dom.lanes.every((l) => l.agent === agentOf[l.key]), "every lane names its session's agent");
  const spent = transcope("usage", "--by", "agent", "--json", "--no-sync").map((g) => g.agent || "(none)");
  check(spent.length > 0 && spent.every((a) => dom.usageAgents.includes(a)) && dom.usageAgents.length === spent.length,
    `usage by agent lists every agent usage --by agent does (${spent.join(", ")})`);
  check(dom.lanes.every((l) => l.segs === transitionsOf[l.key]), "every lane has one segment per transition of its session");
  check(dom.markers === ledger.length, `marker glyph count ${dom.markers} = ledger count ${ledger.length}`);
  check(dom.lanes.every((l) => l.markers === (markersOf[l.key] || 0)), "every lane has its session's markers");
  check(dom.focusable === dom.markers, "every marker can take keyboard focus");
  check(dom.legend > 0, `a legend (${dom.legend} items)`);
  check(/default-src 'none'/.test(dom.csp), "the page carries a CSP with default-src 'none'");

  if (dom.markers > 0) {
    await page.focus("#lanes path.marker");
    const tip = await page.evaluate(() => {
      const t = document.getElementById("tooltip");
      return { hidden: t.hidden, text: t.textContent };
    });
    const first = await page.evaluate(() => d3.select("#lanes path.marker").datum().content);
    check(!tip.hidden && tip.text.includes(first.slice(0, 40)), "focusing a marker shows its text");
    await page.keyboard.press("Escape");
  }
  // Hovering a segment names its scope; every fill has a text colour of 4.5:1 or more.
  // (In the "fill the width" view, at a point where the segment itself is on top.)
  await page.focus("#chart");
  await page.keyboard.press("f");
  await page.waitForTimeout(100);
  await page.evaluate(() => document.getElementById("chart").scrollIntoView());
  const spot = await page.evaluate(() => {
    for (const r of document.querySelectorAll("#lanes rect.seg")) {
      const b = r.getBoundingClientRect();
      if (b.top < 0 || b.bottom > innerHeight) continue;
      for (let x = b.left + 1; x < b.right; x += 3) {
        if (document.elementFromPoint(x, b.top + b.height / 2) === r) return { x, y: b.top + b.height / 2 };
      }
    }
    return null;
  });
  if (spot) {
    await page.mouse.move(spot.x, spot.y);
    const tip = await page.evaluate(() => ({ hidden: document.getElementById("tooltip").hidden, text: document.getElementById("tooltip").textContent }));
    check(!tip.hidden && tip.text.includes("session"), "hovering a segment shows its scope");
    await page.mouse.move(0, 0);
  } else {
    check(dom.segs === 0, "a segment to hover");
  }
  await page.focus("#chart");
  await page.keyboard.press("f");
  await page.waitForTimeout(100);
  const contrast = await page.evaluate(() => {
    const lum = (hex) => {
      const c = d3.rgb(hex);
      const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
      return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b);
    };
    return window.__transcopeReport.fills.map((h) => {
      const l = lum(h);
      return Math.max((l + 0.05) / 0.05, 1.05 / (l + 0.05));
    });
  });
  check(contrast.every((c) => c >= 4.5), `every fill takes black or white text at 4.5:1 or more (lowest ${Math.min(...contrast).toFixed(2)})`);
  const before = await page.textContent("#win-shown");
  await page.focus("#chart");
  await page.keyboard.press("+");
  await page.keyboard.press("+");
  await page.waitForTimeout(100);
  const zoomed = await page.textContent("#win-shown");
  check(zoomed !== before, `the keyboard zooms the timeline (${before} → ${zoomed})`);
  await page.keyboard.press("0");
  await page.waitForTimeout(100);
  check((await page.textContent("#win-shown")) === before, "0 shows the whole window again");
  // The window inputs: a typed range, applied with Enter, is what the timeline shows.
  const range = await page.evaluate(() => {
    const pad = (n) => String(n).padStart(2, "0");
    const local = (d) => `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
    const from = document.getElementById("win-from").value, to = document.getElementById("win-to").value;
    const a = new Date(from).getTime(), z = new Date(to).getTime();
    return { from: local(new Date(a + (z - a) / 4)), to: local(new Date(a + (z - a) / 2)) };
  });
  await page.fill("#win-from", range.from);
  await page.fill("#win-to", range.to);
  await page.focus("#win-to");
  await page.keyboard.press("Enter");
  await page.waitForTimeout(150);
  const shown = await page.textContent("#win-shown");
  check(shown.includes(range.from.slice(0, 10).replace("T", " ")) && shown !== before, `typed window applied with Enter (${shown})`);
  await page.focus("#chart");
  await page.keyboard.press("0");
  await page.waitForTimeout(100);
  await page.evaluate(() => { document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); document.getElementById("chart").scrollTo(0, 0); });

  mkdirSync(opt.out, { recursive: true });
  const shot = resolve(opt.out, `${opt.name}.png`);
  const png = await page.screenshot({ path: shot });
  // The same page with every session filling the width (the README's picture).
  await page.focus("#chart");
  await page.keyboard.press("f");
  await page.waitForTimeout(150);
  await page.evaluate(() => document.activeElement && document.activeElement.blur());
  await page.screenshot({ path: resolve(opt.out, `${opt.name}-fit.png`) });
  check((await page.getAttribute("#fit-each", "aria-pressed")) === "true", "f fits every session to the width");
  check(errors.length === 0, `no console or page errors${errors.length ? ": " + errors.join("; ") : ""}`);
  check(dom.violations.length === 0 && (await page.evaluate(() => window.__violations.length)) === 0, "no CSP violation");
  check(left.length === 0, `no request left the page${left.length ? ": " + left.join(", ") : ""} (${requests.length} seen)`);

  // Is the screenshot blank? Decoded in a fresh blank page (a data: image never
  // reaches the network), luminance spread and distinct colours counted.
  const blank = await context.newPage();
  const stats = await blank.evaluate(async (b64) => {
    const img = new Image();
    img.src = "data:image/png;base64," + b64;
    await img.decode();
    const c = document.createElement("canvas");
    c.width = img.width; c.height = img.height;
    const g = c.getContext("2d");
    g.drawImage(img, 0, 0);
    const d = g.getImageData(0, 0, c.width, c.height).data;
    let n = 0, sum = 0, sq = 0;
    const colours = new Set();
    for (let i = 0; i < d.length; i += 4 * 7) {
      const y = 0.2126 * d[i] + 0.7152 * d[i + 1] + 0.0722 * d[i + 2];
      n++; sum += y; sq += y * y;
      colours.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
    }
    const mean = sum / n;
    return { w: c.width, h: c.height, sd: Math.sqrt(sq / n - mean * mean), colours: colours.size };
  }, png.toString("base64"));
  check(stats.sd > 10 && stats.colours > 16, `the screenshot is not blank (${stats.w}×${stats.h}, luminance sd ${stats.sd.toFixed(1)}, ${stats.colours} colours) → ${shot}`);
  writeFileSync(resolve(opt.out, `${opt.name}.json`), JSON.stringify({ timing, size, stats, sessions: sessions.length, transitions, markers: ledger.length }, null, 1));
} finally {
  await browser.close();
}

if (failures.length) {
  console.log(`${failures.length} check(s) failed for ${opt.name}`);
  process.exit(1);
}
console.log(`all checks passed for ${opt.name}`);
