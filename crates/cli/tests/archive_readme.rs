//! The README's archive walkthrough, run as written: the sample archive copied to a
//! folder standing for the agents' own, kept, deleted, rebuilt and restored. What each
//! command prints is what the README shows, but for timings and the temporary folder.

mod common;

use common::{testdata, text};

#[test]
fn the_readmes_archive_walkthrough_prints_what_it_shows() {
    let root = testdata().join("..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let part = &readme[readme
        .find("## Never lose a transcript")
        .expect("the section")..];
    let block = &part[part.find("```\n$ ").expect("its commands") + 4..];
    let block = &block[..block.find("```").unwrap()];
    let tmp = tempfile::tempdir().unwrap();
    let t = format!("{}/", tmp.path().display());
    let copy = std::process::Command::new("cp")
        .args(["-r"])
        .arg(testdata().join("sample-archive"))
        .arg(tmp.path().join("agent"))
        .status()
        .unwrap();
    assert!(copy.success());
    let bin = std::path::PathBuf::from(env!("CARGO_BIN_EXE_transcope"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // Each `$ command` with the lines shown after it.
    let mut steps: Vec<(String, Vec<String>)> = Vec::new();
    for line in block.lines() {
        match line.strip_prefix("$ ") {
            Some(cmd) => steps.push((cmd.replace("/tmp/", &t), Vec::new())),
            None => steps
                .last_mut()
                .expect("a command first")
                .1
                .push(line.replace("/tmp/", &t)),
        }
    }
    assert!(steps.len() >= 7, "{steps:?}");
    // Timings and speeds differ from run to run; everything else is as shown.
    let words = |l: &str| -> Vec<String> {
        let ws: Vec<&str> = l.split_whitespace().collect();
        ws.iter()
            .enumerate()
            .filter(|(i, w)| {
                let next = ws.get(i + 1).copied().unwrap_or("");
                !(next.starts_with("s,")
                    || next == "s"
                    || next.starts_with("MB/s")
                    || w.contains("MB/s"))
            })
            .map(|(_, w)| w.to_string())
            .collect()
    };
    for (cmd, shown) in &steps {
        let mut c = std::process::Command::new("bash");
        c.args(["-euo", "pipefail", "-c", cmd])
            .current_dir(&root)
            .env("PATH", &path)
            .env("HOME", tmp.path());
        common::clean_env(&mut c);
        let out = c.output().unwrap();
        assert!(out.status.success(), "{cmd}: {}", text(&out.stderr));
        let printed: Vec<String> = format!("{}{}", text(&out.stderr), text(&out.stdout))
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_owned)
            .collect();
        let printed: Vec<Vec<String>> = printed.iter().map(|l| words(l)).collect();
        let shown: Vec<Vec<String>> = shown.iter().map(|l| words(l)).collect();
        assert_eq!(printed, shown, "{cmd}");
    }
}
