#!/usr/bin/env python3
"""The OpenTelemetry export beside the backfill that produced its rows (issue 39).

1. backfill a generated archive (1 GB by default) into a fresh home, RUNS times:
   wall time;
2. export that index's rows (`transcope export otlp`) to a local OTLP/HTTP receiver
   that reads each request whole and answers 200 (it does not decode: the sender is
   what is measured), RUNS times, each from a copy of the backfilled home (a first,
   whole export): wall time, data points and log records a second, bytes sent;
3. the same export run again (nothing new): wall time.

Usage: python3 benches/otlp.py [SIZE]   (RUNS=5; HOME_DIR for the homes, /dev/shm by
default: tmpfs). Results: benches/results-otlp.md (appended).
"""
import json, os, shutil, subprocess, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from common import run_env, summary, timed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
BIN = os.environ.get("BIN") or os.path.join(TARGET, "release", "transcope")
GEN = os.path.join(TARGET, "release", "transcope-corpus")
SIZE = sys.argv[1] if len(sys.argv) > 1 else "1GB"
RUNS = int(os.environ.get("RUNS", "5"))
BENCH = os.environ.get("BENCH_DIR", os.path.join(ROOT, "target", "bench"))
CORPUS = os.environ.get("CORPUS", os.path.join(BENCH, f"corpus-{SIZE}"))
HOME = os.path.join(os.environ.get("HOME_DIR", "/dev/shm"), "transcope-otlp-bench")

received = {"bytes": 0, "posts": 0}
lock = threading.Lock()


class Discard(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        self.rfile.read(n)
        with lock:
            received["bytes"] += n
            received["posts"] += 1
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()


def main():
    if not os.path.exists(BIN) or not os.path.exists(GEN):
        raise SystemExit("build first: cargo build --release -p transcope -p transcope-corpus")
    if not os.path.isdir(CORPUS):
        print(f"generating {SIZE} into {CORPUS} …", flush=True)
        subprocess.run([GEN, "--out", CORPUS, "--size", SIZE, "--seed", "42"], check=True,
                       capture_output=True)
    shutil.rmtree(HOME, ignore_errors=True)
    os.makedirs(HOME)
    env = run_env(HOME, TRANSCOPE_ARCHIVE="off")
    home = os.path.join(HOME, "agentihooks")
    backfills = []
    for i in range(RUNS):
        shutil.rmtree(home, ignore_errors=True)
        t, _ = timed([BIN, "--home", home, "backfill", "--json", CORPUS], env=env)
        backfills.append(t)
        print(f"  backfill {i}: {t:.2f} s", flush=True)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Discard)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"

    exports, rates, again = [], [], []
    report, sent_bytes = None, 0
    for i in range(RUNS):
        copy = os.path.join(HOME, "copy")
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(home, copy)
        with lock:
            received.update(bytes=0, posts=0)
        t, out = timed([BIN, "--home", copy, "export", "otlp", "--no-sync", "--json",
                        "--endpoint", url], env=env)
        report = json.loads(out.decode().splitlines()[-1])
        sent_bytes = received["bytes"]
        items = report["points"] + report["transitions"] + report["markers"]
        exports.append(t)
        rates.append(items / t)
        print(f"  export {i}: {t:.2f} s, {items} points and records, {items / t:,.0f}/s, "
              f"{sent_bytes / 1e6:.1f} MB in {received['posts']} POSTs", flush=True)
        t, _ = timed([BIN, "--home", copy, "export", "otlp", "--no-sync", "--json",
                      "--endpoint", url], env=env)
        again.append(t)
    server.shutdown()

    b, e, r, a = summary(backfills), summary(exports), summary(rates), summary(again)
    lines = [
        f"## {time.strftime('%Y-%m-%d %H:%M')} — {SIZE} archive, {RUNS} runs, {os.path.basename(BIN)}",
        "",
        "| what | median | min | max |",
        "|---|---|---|---|",
        f"| backfill (markers, usage, index; archive off) | {b[0]:.2f} s | {b[1]:.2f} | {b[2]:.2f} |",
        f"| export otlp, first (whole) | {e[0]:.2f} s | {e[1]:.2f} | {e[2]:.2f} |",
        f"| export otlp, points and records a second | {r[0]:,.0f} | {r[1]:,.0f} | {r[2]:,.0f} |",
        f"| export otlp again (nothing new) | {a[0] * 1000:.0f} ms | {a[1] * 1000:.0f} | {a[2] * 1000:.0f} |",
        "",
        f"Sent: {report['requests']} requests as {report['points']} token points (+ cost points), "
        f"{report['transitions']} transitions, {report['markers']} markers, {report['batches']} POSTs, "
        f"{sent_bytes / 1e6:.1f} MB of protobuf; export/backfill = {e[0] / b[0]:.2f}.",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(ROOT, "benches", "results-otlp.md"), "a") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    main()
