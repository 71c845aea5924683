//! `HookInput::parse` on arbitrary bytes: never panics (it is total by design), agrees
//! with `HookInput::from_reader`, and re-parsing its own `raw` object is stable.
//!
//! `caller` / `record` / `state_cwd` are NOT driven: even with an empty `Env` they stat,
//! list and read paths named by the payload (`transcript_path`, `agent_id` →
//! `subagents/`, the record's first line), i.e. the real file system.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use transcope_caller::HookInput;

/// JSON equality, with floats compared to within an ulp or so (serde_json's default
/// float parser is not always correctly rounded; that is not what is under test).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            let (x, y) = (
                x.as_f64().unwrap_or(f64::NAN),
                y.as_f64().unwrap_or(f64::NAN),
            );
            x == y || (x - y).abs() <= x.abs().max(y.abs()) * 1e-15
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((kx, vx), (ky, vy))| kx == ky && same(vx, vy))
        }
        _ => a == b,
    }
}

fuzz_target!(|data: &[u8]| {
    let p = HookInput::parse(data);
    let _ = p.is_subagent();
    assert_eq!(HookInput::from_reader(data), p, "from_reader == parse");
    match &p.raw {
        Value::Object(_) => {
            let text = serde_json::to_vec(&p.raw).expect("a Value always serialises");
            let again = HookInput::parse(&text);
            assert!(
                same(&again.raw, &p.raw),
                "raw re-parses to itself: {:?} vs {:?}",
                again.raw,
                p.raw
            );
        }
        Value::Null => assert_eq!(p, HookInput::default()),
        other => panic!("raw is an object or null, not {other:?}"),
    }
});
