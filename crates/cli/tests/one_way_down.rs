//! Dependencies point one way: payload → identity → adapter → stages → log, index and
//! sinks, and the binary on top. Checked against what `cargo metadata` says of the
//! workspace (every package's declared dependencies, all kinds) and against the
//! binary's own modules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// Each workspace package's dependencies on other packages: (name, kind) where kind
/// is `normal`, `dev` or `build`.
fn workspace_dependencies() -> BTreeMap<String, Vec<(String, String)>> {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut deps = BTreeMap::new();
    for p in meta["packages"].as_array().unwrap() {
        let list = p["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                let kind = d["kind"].as_str().unwrap_or("normal").to_owned();
                (d["name"].as_str().unwrap().to_owned(), kind)
            })
            .collect();
        deps.insert(p["name"].as_str().unwrap().to_owned(), list);
    }
    deps
}

#[test]
fn only_the_binary_depends_on_the_stop_composition() {
    let deps = workspace_dependencies();
    assert!(deps.contains_key("transcope-stop"), "{:?}", deps.keys());
    let on_stop: Vec<(&String, &String)> = deps
        .iter()
        .flat_map(|(p, ds)| {
            ds.iter()
                .filter(|(d, _)| d == "transcope-stop")
                .map(move |(_, kind)| (p, kind))
        })
        .collect();
    assert_eq!(
        on_stop,
        [(&"transcope".to_owned(), &"normal".to_owned())],
        "only the binary may depend on the Stop: backfill and the rest share transcope-observe"
    );
    // Backfill and Stop share the observation, neither depends on the other.
    for (a, b) in [
        ("transcope-backfill", "transcope-stop"),
        ("transcope-stop", "transcope-backfill"),
    ] {
        assert!(deps[a].iter().all(|(d, _)| d != b), "{a} depends on {b}");
    }
    for p in ["transcope-backfill", "transcope-stop"] {
        assert!(
            deps[p]
                .iter()
                .any(|(d, k)| d == "transcope-observe" && k == "normal"),
            "{p} reads through transcope-observe"
        );
    }
}

#[test]
fn only_the_storage_backends_use_an_engines_client() {
    let backends = [
        "transcope-sqlite",
        "transcope-index",
        "transcope-cursor-store",
        "transcope-fleet",
    ];
    let engines = [
        "rusqlite",
        "postgres",
        "tokio-postgres",
        "tokio-postgres-rustls",
    ];
    let deps = workspace_dependencies();
    let mut found = BTreeSet::new();
    for (p, ds) in &deps {
        for (d, kind) in ds {
            if engines.contains(&d.as_str()) && kind != "dev" {
                assert!(
                    backends.contains(&p.as_str()),
                    "{p} depends on {d}: only the storage backends may"
                );
                found.insert(p.clone());
            }
        }
    }
    assert_eq!(found, backends.iter().map(|s| s.to_string()).collect());
}

/// The modules of the binary that each module names (`crate::m`, `use crate::{m, …}`),
/// tests excluded; the crate root (`main.rs`, with its `exit` codes and output helpers)
/// is the top and not counted.
fn module_graph(dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut texts = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "rs") {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&p).unwrap();
            // A module's own unit tests may reach anywhere.
            let text = match text.find("#[cfg(test)]\nmod tests") {
                Some(i) => text[..i].to_owned(),
                None => text,
            };
            texts.insert(name, text);
        }
    }
    let names: BTreeSet<String> = texts.keys().filter(|n| *n != "main").cloned().collect();
    let mut graph = BTreeMap::new();
    for (m, text) in &texts {
        let mut uses = BTreeSet::new();
        for (i, _) in text.match_indices("crate::") {
            let rest = &text[i + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let group = &group[..group.find('}').unwrap_or(group.len())];
                for item in group.split(',') {
                    let first = item.trim().split("::").next().unwrap_or("").trim();
                    if names.contains(first) {
                        uses.insert(first.to_owned());
                    }
                }
            } else {
                let first: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if names.contains(&first) {
                    uses.insert(first);
                }
            }
        }
        uses.remove(m);
        graph.insert(m.clone(), uses);
    }
    graph
}

/// A cycle in `graph`, if any (depth-first search, three colours).
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_owned(), 1);
        path.push(n.to_owned());
        for m in graph.get(n).into_iter().flatten() {
            match state.get(m.as_str()).copied().unwrap_or(0) {
                1 => {
                    let at = path.iter().position(|p| p == m).unwrap();
                    let mut c = path[at..].to_vec();
                    c.push(m.clone());
                    return Some(c);
                }
                0 => {
                    if let Some(c) = visit(m, graph, state, path) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        path.pop();
        state.insert(n.to_owned(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in graph.keys() {
        if state.get(n.as_str()).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(n, graph, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn the_binarys_modules_form_no_circle() {
    let graph = module_graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    // The check sees the modules it should: the queries use the sync, not the reverse.
    assert!(graph["query_cmd"].contains("sync"), "{graph:?}");
    assert_eq!(cycle(&graph), None, "{graph:#?}");
    // And it finds a circle where there is one.
    let mut bent = graph.clone();
    bent.get_mut("sync").unwrap().insert("query_cmd".into());
    assert!(cycle(&bent).is_some());
}
