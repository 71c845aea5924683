// How long a report takes to draw in headless Chromium (issue 17's scale target:
// 2,000 sessions in under 2 s), run by benches/report.sh.
//
//   node bench.mjs --html FILE [--runs N]
//
// Each run is a fresh browser context (no cache) loading the file; the time is the
// page's own `performance.now()` when it has drawn and the frame after it has been
// painted (navigation start to drawn: parsing the page, d3, the model, every lane).
// Also timed: one keyboard zoom step and the "each session fills the width" toggle,
// from the key press to the next painted frame. Prints one JSON object.
import { statSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium } from "playwright-core";

const argv = process.argv.slice(2);
const opt = {};
for (let i = 0; i < argv.length; i += 2) opt[argv[i].replace(/^--/, "")] = argv[i + 1];
const runs = Number(opt.runs || 9);
const url = pathToFileURL(resolve(opt.html)).href;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
const drawn = [];
const zoom = [];
const fit = [];
let counts = null;
try {
  for (let i = 0; i < runs; i++) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
    const page = await context.newPage();
    await page.goto(url, { waitUntil: "load" });
    await page.waitForSelector("html[data-ready=true]", { timeout: 120000 });
    drawn.push(await page.evaluate(() => window.__transcopeReport.drawnMs));
    counts = await page.evaluate(() => ({
      lanes: document.querySelectorAll("#lanes .lane").length,
      segments: document.querySelectorAll("#lanes rect.seg").length,
      markers: document.querySelectorAll("#lanes path.marker").length,
      nodes: document.getElementsByTagName("*").length,
    }));
    await page.focus("#chart");
    const step = async (key) => page.evaluate((k) => new Promise((done) => {
      const t = performance.now();
      document.getElementById("chart").dispatchEvent(new KeyboardEvent("keydown", { key: k, bubbles: true }));
      // The zoom draws in the next animation frame; the one after it is painted.
      requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now() - t)));
    }), key);
    zoom.push(await step("+"));
    fit.push(await step("f"));
    await context.close();
  }
} finally {
  await browser.close();
}

const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const median = s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  return { median: Math.round(median), min: Math.round(s[0]), max: Math.round(s[s.length - 1]) };
};
console.log(JSON.stringify({
  file: opt.html,
  bytes: statSync(opt.html).size,
  runs,
  ...counts,
  drawn_ms: stats(drawn),
  zoom_step_ms: stats(zoom),
  fit_toggle_ms: stats(fit),
}));
