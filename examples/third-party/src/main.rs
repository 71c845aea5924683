//! `transcope-example-third-party [--home DIR] [--json] [PATH…]`: every transcript under
//! the paths (default: the bundled fixtures) through a pipeline of transcope's
//! adapters, the plain-log adapter and the activity stage, with the cursor store under
//! `DIR` (default `target/example-home`). Prints, per transcript, what was read and
//! the activity per folder; a second run over the same bytes prints "up to date".

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::json;
use transcope_example_third_party::{run, FileRun};

const USAGE: &str = "usage: transcope-example-third-party [--home DIR] [--json] [PATH...]";

struct Args {
    home: PathBuf,
    json: bool,
    paths: Vec<PathBuf>,
}

fn parse(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut args = Args {
        home: PathBuf::from("target/example-home"),
        json: false,
        paths: Vec::new(),
    };
    while let Some(a) = it.next() {
        match a.as_str() {
            "--home" => args.home = it.next().ok_or("--home needs a folder")?.into(),
            "--json" => args.json = true,
            "-h" | "--help" => return Err(String::new()),
            s if s.starts_with('-') => return Err(format!("unknown option {s}")),
            _ => args.paths.push(a.into()),
        }
    }
    if args.paths.is_empty() {
        args.paths
            .push(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures"));
    }
    Ok(args)
}

/// The human-readable lines of one transcript's run.
fn text(f: &FileRun) -> String {
    let mut out = format!("{}\n", f.path.display());
    let key = match &f.key {
        Ok(k) => k,
        Err(why) => return out + &format!("  skipped: {why}\n"),
    };
    let layout = f.layout.unwrap_or("?");
    if f.up_to_date {
        return out + &format!("  {layout} session {key}: up to date\n");
    }
    let from = if f.resumed {
        "resumed"
    } else {
        "from the start"
    };
    out += &format!(
        "  {layout} session {key}: read {} entries, {} bytes ({from})\n",
        f.entries, f.bytes
    );
    for (folder, c) in f.activity.iter().flat_map(|a| &a.folders) {
        out += &format!(
            "    {folder}: messages {}, tool calls {}, words {}\n",
            c.messages, c.tool_calls, c.words
        );
    }
    out
}

fn json_line(f: &FileRun) -> String {
    let mut v = json!({
        "path": f.path.display().to_string(),
        "layout": f.layout,
        "key": f.key.as_ref().ok(),
        "error": f.key.as_ref().err(),
        "up_to_date": f.up_to_date,
        "resumed": f.resumed,
        "bytes": f.bytes,
        "entries": f.entries,
        "activity": f.activity.as_ref().map(|a| &a.folders),
    });
    if let Some(a) = &f.activity {
        v["adapter"] = json!(a.adapter);
    }
    format!("{v}\n")
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("transcope-example-third-party: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let runs = match run(&args.home, &args.paths) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("transcope-example-third-party: {e}");
            return ExitCode::from(1);
        }
    };
    let out: String = runs
        .iter()
        .map(|f| if args.json { json_line(f) } else { text(f) })
        .collect();
    match std::io::stdout().lock().write_all(out.as_bytes()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("transcope-example-third-party: {e}");
            ExitCode::from(1)
        }
    }
}
