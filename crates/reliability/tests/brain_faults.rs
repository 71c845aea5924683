//! A hung, slow or broken brain never stalls a Stop and never loses or doubles a
//! marker (issue 13, item 6): after the first failed POST a Stop sends the rest
//! straight to the outbox, the brain's POSTs share one time budget, a 200 whose body
//! is cut short is not a delivery, and concurrent drains send each outbox file once.
//! Every server here is a real 127.0.0.1 `TcpListener` in the test process, and every
//! Stop is the real binary.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

/// The bound with the default settings (the "under 10 s").
const DEFAULT_BOUND: Duration = Duration::from_secs(10);

/// A server that accepts connections and never answers (holding them open).
struct Hung {
    url: String,
}

impl Hung {
    fn start() -> Hung {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for s in listener.incoming().flatten() {
                held.push(s);
            }
        });
        Hung { url }
    }
}

/// How a [`Server`] answers.
#[derive(Clone, Copy)]
enum Answer {
    /// 200 with a whole two-byte body, after a pause.
    Ok(Duration),
    /// 200 announcing 100 bytes, sending 5, then closing.
    Truncated,
}

/// A server counting the requests it answered whole, by idempotency key.
struct Server {
    url: String,
    seen: Arc<Mutex<BTreeMap<String, u32>>>,
}

impl Server {
    fn start(answer: Answer) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(BTreeMap::new()));
        let s = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let s = s.clone();
                std::thread::spawn(move || serve(stream, answer, &s));
            }
        });
        Server { url, seen }
    }

    fn counts(&self) -> BTreeMap<String, u32> {
        self.seen.lock().unwrap().clone()
    }
}

/// Answer the requests of one connection (keep-alive) until it closes.
fn serve(stream: TcpStream, answer: Answer, seen: &Mutex<BTreeMap<String, u32>>) {
    let mut out = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut key = None;
        let mut len = 0usize;
        let mut first = true;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let l = line.trim_end().to_ascii_lowercase();
            if l.is_empty() {
                if first {
                    continue;
                }
                break;
            }
            first = false;
            if let Some(v) = l.strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
            if let Some(v) = l.strip_prefix("idempotency-key:") {
                key = Some(v.trim().to_owned());
            }
        }
        let mut body = vec![0; len];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        match answer {
            Answer::Ok(pause) => {
                std::thread::sleep(pause);
                *seen
                    .lock()
                    .unwrap()
                    .entry(key.unwrap_or_default())
                    .or_default() += 1;
                if out
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}")
                    .is_err()
                {
                    return;
                }
            }
            Answer::Truncated => {
                let _ = out.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n{\"ok\"");
                return;
            }
        }
    }
}

/// A transcript of `n` markers (distinct contents), in one folder.
fn markers_transcript(sb: &Sandbox, name: &str, from: u64, n: u64) -> PathBuf {
    let t = sb.user.join(name);
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&t)
        .unwrap();
    for i in from..from + n {
        writeln!(f, "{}", claude_line(i * 60, "/w/a", "main")).unwrap();
        writeln!(
            f,
            "{}",
            claude_marker_line(i * 60 + 30, "/w/a", &format!("lesson {i}"))
        )
        .unwrap();
    }
    t
}

fn stop_cmd(sb: &Sandbox, url: &str) -> Command {
    let mut c = sb.cmd(&["hook", "stop", "--json"]);
    c.env("BRAIN_WRITER_ENABLED", "1").env("BRAIN_URL", url);
    c
}

/// Run one Stop, timed; it must exit 0 with a JSON summary.
fn timed(c: Command, payload: &[u8]) -> (Value, Duration) {
    let t0 = Instant::now();
    let out = run(c, payload);
    let took = t0.elapsed();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("no summary: {}", text(&out.stderr)));
    (v, took)
}

/// The marker files waiting in `outbox` (dot files — the drain lock, temporaries —
/// are not markers).
fn waiting(outbox: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(outbox)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The idempotency keys of the files waiting in `outbox`.
fn waiting_keys(outbox: &Path) -> Vec<String> {
    let mut keys: Vec<String> = waiting(outbox)
        .iter()
        .map(|n| {
            let v: Value = serde_json::from_slice(&std::fs::read(outbox.join(n)).unwrap()).unwrap();
            v["idempotency_key"].as_str().unwrap().to_owned()
        })
        .collect();
    keys.sort();
    keys
}

#[test]
fn a_hung_brain_costs_one_timeout_per_stop_and_a_later_drain_sends_each_marker_once() {
    let sb = Sandbox::new();
    let outbox = sb.home.join("brain-outbox");
    let hung = Hung::start();
    // Default settings (cap 5): 12 markers, nothing in the outbox yet, so the first
    // marker's POST times out and the other eleven go straight to the outbox.
    let t = markers_transcript(&sb, "t.jsonl", 0, 12);
    let (v, took) = timed(stop_cmd(&sb, &hung.url), &payload("hung", &t));
    eprintln!("Stop 1 (hung brain, default settings, 12 markers): {took:?}: {v}");
    assert!(took < DEFAULT_BOUND, "{took:?}");
    assert_eq!(v["markers"], 5, "{v}");
    assert_eq!(v["over_cap"], 7, "{v}");
    assert_eq!(v["written"]["http"], 0, "{v}");
    assert_eq!(v["written"]["outbox"], 12, "{v}");
    assert!(v["brain_error"].as_str().is_some(), "said on stderr: {v}");
    assert!(
        v["error"].is_null(),
        "the markers are safe in the outbox: {v}"
    );
    assert_eq!(waiting(&outbox).len(), 12);
    // Next Stop: the drain's first POST times out, and the new markers are not tried.
    markers_transcript(&sb, "t.jsonl", 12, 3);
    let (v, took) = timed(stop_cmd(&sb, &hung.url), &payload("hung", &t));
    eprintln!("Stop 2 (hung brain, 12 waiting, 3 new): {took:?}: {v}");
    assert!(took < DEFAULT_BOUND, "{took:?}");
    assert_eq!(v["written"]["outbox"], 3, "{v}");
    assert_eq!(v["drained"], 0, "{v}");
    // A cap of 20 with 25 new markers: still one timeout.
    markers_transcript(&sb, "t.jsonl", 15, 25);
    let mut c = stop_cmd(&sb, &hung.url);
    c.env("BRAIN_WRITER_MAX_MARKERS", "20");
    let (v, took) = timed(c, &payload("hung", &t));
    eprintln!("Stop 3 (hung brain, cap 20, 25 new): {took:?}: {v}");
    assert!(took < DEFAULT_BOUND, "{took:?}");
    assert_eq!(v["markers"], 20, "{v}");
    assert_eq!(v["written"]["outbox"], 25, "{v}");
    let keys = waiting_keys(&outbox);
    assert_eq!(keys.len(), 40, "one file per marker");
    // The brain is back: one drain sends every marker exactly once.
    let server = Server::start(Answer::Ok(Duration::ZERO));
    let (v, _) = timed(stop_cmd(&sb, &server.url), &payload("hung", &t));
    assert_eq!(v["drained"], 40, "{v}");
    let counts = server.counts();
    assert_eq!(counts.keys().cloned().collect::<Vec<_>>(), keys);
    assert!(counts.values().all(|&n| n == 1), "{counts:?}");
    assert!(waiting(&outbox).is_empty());
}

#[test]
fn concurrent_drains_send_each_outbox_file_once() {
    let sb = Sandbox::new();
    let outbox = sb.home.join("brain-outbox");
    let hung = Hung::start();
    let t = markers_transcript(&sb, "t.jsonl", 0, 16);
    let mut c = stop_cmd(&sb, &hung.url);
    c.env("BRAIN_WRITER_MAX_MARKERS", "20");
    timed(c, &payload("d", &t));
    let keys = waiting_keys(&outbox);
    assert_eq!(keys.len(), 16);
    // A slow brain (40 ms a request), so that four drains overlap.
    let server = Server::start(Answer::Ok(Duration::from_millis(40)));
    let start = Arc::new(Barrier::new(4));
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let c = stop_cmd(&sb, &server.url);
            let start = start.clone();
            let p = payload(
                &format!("other{i}"),
                &sb.user.join(format!("none{i}.jsonl")),
            );
            std::thread::spawn(move || {
                start.wait();
                timed(c, &p).0
            })
        })
        .collect();
    let drained: u64 = handles
        .into_iter()
        .map(|h| h.join().unwrap()["drained"].as_u64().unwrap())
        .sum();
    let counts = server.counts();
    assert_eq!(drained, 16, "{counts:?}");
    assert_eq!(counts.keys().cloned().collect::<Vec<_>>(), keys);
    assert!(
        counts.values().all(|&n| n == 1),
        "sent more than once: {counts:?}"
    );
    assert!(waiting(&outbox).is_empty());
}

#[test]
fn a_200_cut_short_is_not_a_delivery() {
    let sb = Sandbox::new();
    let outbox = sb.home.join("brain-outbox");
    let cut = Server::start(Answer::Truncated);
    let t = markers_transcript(&sb, "t.jsonl", 0, 2);
    let (v, _) = timed(stop_cmd(&sb, &cut.url), &payload("cut", &t));
    assert_eq!(v["written"]["http"], 0, "{v}");
    assert_eq!(v["written"]["outbox"], 2, "{v}");
    let keys = waiting_keys(&outbox);
    assert_eq!(keys.len(), 2);
    // A drain against the same server leaves them waiting.
    let (v, _) = timed(stop_cmd(&sb, &cut.url), &payload("cut", &t));
    assert_eq!(v["drained"], 0, "{v}");
    assert_eq!(waiting_keys(&outbox), keys);
    let ok = Server::start(Answer::Ok(Duration::ZERO));
    let (v, _) = timed(stop_cmd(&sb, &ok.url), &payload("cut", &t));
    assert_eq!(v["drained"], 2, "{v}");
    assert_eq!(ok.counts().keys().cloned().collect::<Vec<_>>(), keys);
}

#[test]
fn a_short_deadline_shrinks_the_brains_budget() {
    let sb = Sandbox::new();
    let hung = Hung::start();
    let t = markers_transcript(&sb, "t.jsonl", 0, 3);
    // A 3 s deadline: the POSTs together take at most 1 s, so the Stop ends on its
    // own, with its cursor saved, rather than being cut by the deadline.
    let mut c = stop_cmd(&sb, &hung.url);
    c.env("TRANSCOPE_HOOK_DEADLINE_SECS", "3");
    let (v, took) = timed(c, &payload("short", &t));
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert_eq!(v["written"]["outbox"], 3, "{v}");
    assert_eq!(v["transitions_recorded"], 1, "{v}");
    let (v, _) = timed(stop_cmd(&sb, &hung.url), &payload("short", &t));
    assert_eq!(v["markers"], 0, "the cursor was saved: {v}");
}
