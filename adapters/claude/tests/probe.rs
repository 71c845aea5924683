//! The probe is never wrong: whenever it answers for a line, the full decode either
//! skips the line (invalid) or gives exactly one entry with that kind, folder and
//! branch — on the public corpus, a generated corpus, and mutated lines.

mod common;

use transcope_adapter_claude::{decode_claude, probe::probe};
use transcope_core::entry::{Entry, LinePos};
use transcope_testkit::Rng;

fn check(line: &[u8]) -> bool {
    let searched = Default::default();
    let Some(p) = probe(line, &searched) else {
        return false;
    };
    let mut out = Vec::new();
    let pos = LinePos { offset: 1, line: 2 };
    match decode_claude(
        line,
        pos,
        &mut transcope_core::adapter::from_fn(|e: &Entry<'_>| out.push(e.to_static())),
    ) {
        Err(_) => {}
        // No entry at all is a no-op for every sink, like a skipped line.
        Ok(()) if out.is_empty() => {}
        Ok(()) => {
            assert_eq!(out.len(), 1, "{}", String::from_utf8_lossy(line));
            let e = &out[0];
            assert_eq!(e.kind, p.kind, "{}", String::from_utf8_lossy(line));
            assert_eq!(e.cwd.as_deref(), p.cwd, "{}", String::from_utf8_lossy(line));
            assert_eq!(
                e.branch.as_deref(),
                p.branch,
                "{}",
                String::from_utf8_lossy(line)
            );
            // A line the probe calls text-free gives no marker text.
            assert!(
                p.text || e.texts.is_empty(),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
    }
    true
}

#[test]
fn probe_agrees_with_the_full_decode_on_real_and_generated_lines() {
    let dir = tempfile::tempdir().unwrap();
    let paths = common::public_and_generated(dir.path(), 3, 3_000_000);
    let (mut n, mut answered) = (0, 0);
    for p in paths {
        for line in std::fs::read(&p).unwrap().split(|b| *b == b'\n') {
            n += 1;
            answered += usize::from(check(line));
        }
    }
    assert!(
        answered * 2 > n,
        "the probe answers for most lines ({answered} of {n})"
    );
}

#[test]
fn probe_agrees_on_mutated_lines() {
    let base = r#"{"parentUuid":"p","isSidechain":false,"cwd":"/w","sessionId":"s","gitBranch":"main","type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"a \"q\" \\ {[}] x"}]},"uuid":"u","timestamp":"2026-10-08T10:00:00Z","toolUseResult":{"stdout":"BIG","n":[1,-2.5e3,true,null,{}]}}"#;
    let big = "line\\n\\\"quoted\\\" {\\\"k\\\": [1]} \\\\\" "
        .repeat(40)
        .replace("\\\\\" ", "\\\\ ");
    let line = base.replace("BIG", &big);
    let mut variants: Vec<String> = vec![line.clone()];
    for cut in (1..line.len()).step_by(41) {
        variants.push(String::from_utf8_lossy(&line.as_bytes()[..cut]).into_owned());
    }
    for at in (0..line.len()).step_by(29) {
        for c in ['"', '\\', '{', '}', '[', ']', ',', 'x'] {
            let mut v = line.clone().into_bytes();
            v[at] = c as u8;
            variants.push(String::from_utf8_lossy(&v).into_owned());
        }
    }
    let swaps = [
        ("\"cwd\":\"/w\"", "\"cwd\":\"/w\",\"cwd\":\"/v\""),
        ("\"cwd\":\"/w\"", "\"cwd\":5"),
        ("\"cwd\":\"/w\"", "\"cwd\":\"\""),
        ("\"cwd\":\"/w\"", "\"cwd\":null"),
        ("\"cwd\":\"/w\"", "\"cwd\":\"/\\u0077\""),
        ("\"gitBranch\":\"main\"", "\"gitBranch\":\"\""),
        ("\"gitBranch\":\"main\"", "\"gitBranch\":false"),
        ("\"gitBranch\":\"main\"", "\"gitBranch\":null"),
        ("\"type\":\"user\"", "\"type\":\"assistant\""),
        ("\"type\":\"user\"", "\"type\":\"turn_context\""),
        ("\"type\":\"user\"", "\"type\":\"weird\""),
        ("\"type\":\"user\"", "\"type\":7"),
        ("\"type\":\"user\"", ""),
        ("\"uuid\":\"u\"", "\"uuid\":\"u\",\"type\":\"system\""),
        ("{\"parentUuid\"", " \t{\"parentUuid\""),
    ];
    for (a, b) in swaps {
        variants.push(line.replacen(a, b, 1));
    }
    let mut answered = 0;
    for v in &variants {
        answered += usize::from(check(v.as_bytes()));
    }
    assert!(answered > 10);
}

#[test]
fn escaped_bits_equal_the_scalar_rule_across_blocks() {
    use transcope_adapter_common::probe::escaped_bits;
    let mut seed = 99u64;
    let mut next = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        seed >> 33
    };
    for _ in 0..2000 {
        let n = 64 * (1 + (next() % 4) as usize);
        let text: Vec<u8> = (0..n)
            .map(|_| match next() % 4 {
                0 | 1 => b'\\',
                2 => b'"',
                _ => b'a',
            })
            .collect();
        // Scalar: a character is escaped when an odd run of backslashes precedes it.
        let mut want = vec![false; n];
        let mut run = 0;
        for (i, &c) in text.iter().enumerate() {
            want[i] = run % 2 == 1;
            // A backslash that is not itself escaped extends the run; anything else
            // (an escaped backslash included) ends it.
            run = if c == b'\\' && !want[i] { run + 1 } else { 0 };
        }
        let mut carry = 0u64;
        for (k, block) in text.chunks(64).enumerate() {
            let bs = block
                .iter()
                .enumerate()
                .fold(0u64, |m, (j, &c)| m | (u64::from(c == b'\\') << j));
            let got = escaped_bits(bs, &mut carry);
            for j in 0..64 {
                assert_eq!(
                    got >> j & 1 == 1,
                    want[64 * k + j],
                    "{:?} at {}",
                    String::from_utf8_lossy(&text),
                    64 * k + j
                );
            }
        }
    }
}

/// Text dense in what the block scan looks at: quotes, backslashes, brackets.
fn text(g: &mut Rng) -> String {
    const PARTS: [&str; 12] = [
        "\"", "\\", "{", "}", "[", "]", "\\\"", "a", "é", "\n", " ", "ab:cd,",
    ];
    let n = match g.below(4) {
        0 => g.below(4),
        1 => g.below(70),
        _ => g.below(300),
    };
    (0..n).map(|_| *g.pick(&PARTS)).collect()
}

/// A random JSON value, nested at most `depth` deep.
fn value(g: &mut Rng, depth: u32) -> serde_json::Value {
    use serde_json::Value;
    match g.below(if depth == 0 { 4 } else { 7 }) {
        0 => Value::Null,
        1 => Value::from(g.next_u64() as i64),
        2 | 3 => Value::String(text(g)),
        4 | 5 => Value::Array((0..g.below(5)).map(|_| value(g, depth - 1)).collect()),
        _ => {
            let mut m = serde_json::Map::new();
            for _ in 0..g.below(5) {
                m.insert(text(g), value(g, depth - 1));
            }
            Value::Object(m)
        }
    }
}

/// On valid lines of random structure (strings dense in quotes, backslashes and
/// brackets, crossing 64-byte blocks anywhere), both instruction sets find every
/// wanted top-level field and the `payload`'s, exactly as a JSON parser reads them.
#[test]
fn both_instruction_sets_read_random_valid_lines_exactly() {
    use serde_json::{json, Value};
    use transcope_adapter_common::probe::{fields_with, Isa};
    let mut g = Rng::new(7);
    let isas = [Isa::Baseline, Isa::Avx2];
    for round in 0..4000 {
        let mut m = serde_json::Map::new();
        for k in 0..g.below(6) {
            m.insert(format!("k{k}{}", text(&mut g)), value(&mut g, 3));
        }
        let plain = |g: &mut Rng| format!("/w/{}", g.below(1000));
        m.insert(
            "type".into(),
            json!(["user", "assistant", "response_item"][round % 3]),
        );
        if g.below(2) == 0 {
            m.insert("cwd".into(), Value::String(plain(&mut g)));
        }
        if g.below(2) == 0 {
            m.insert("gitBranch".into(), Value::String(plain(&mut g)));
        }
        if g.below(2) == 0 {
            let mut p = serde_json::Map::new();
            p.insert(format!("x{}", text(&mut g)), value(&mut g, 2));
            p.insert("type".into(), json!("message"));
            p.insert("role".into(), json!(["user", "assistant"][round % 2]));
            p.insert(format!("y{}", text(&mut g)), value(&mut g, 2));
            m.insert("payload".into(), Value::Object(p));
        }
        for _ in 0..g.below(3) {
            m.insert(format!("z{}", text(&mut g)), value(&mut g, 3));
        }
        let v = Value::Object(m);
        let line = serde_json::to_string(&v).unwrap();
        for isa in isas {
            let f = fields_with(isa, line.as_bytes()).unwrap_or_else(|| panic!("{isa:?}: {line}"));
            assert_eq!(f.ty(), v["type"].as_str(), "{line}");
            assert_eq!(
                f.folder_and_branch(),
                Some((v["cwd"].as_str(), v["gitBranch"].as_str())),
                "{line}"
            );
            assert_eq!(f.payload_ty(), v["payload"]["type"].as_str(), "{line}");
            assert_eq!(
                f.payload_role(),
                Some(v["payload"]["role"].as_str()),
                "{line}"
            );
        }
    }
}

/// On any bytes at all (cut, mutated, invalid), both instruction sets give the same
/// answer.
#[test]
fn both_instruction_sets_agree_on_arbitrary_bytes() {
    use transcope_adapter_common::probe::{fields_with, Isa};
    let mut g = Rng::new(11);
    for _ in 0..20_000 {
        let mut line = format!(
            "{{\"type\":\"user\",\"a\":{},\"cwd\":\"/w\",\"payload\":{},\"b\":\"{}\"}}",
            serde_json::to_string(&value(&mut g, 3)).unwrap(),
            serde_json::to_string(&value(&mut g, 2)).unwrap(),
            text(&mut g).replace('"', "'"),
        )
        .into_bytes();
        for _ in 0..g.below(3) {
            let at = g.below(line.len() as u64) as usize;
            line[at] = b"\"\\{}[],: x"[g.below(10) as usize];
        }
        line.truncate(line.len() - g.below(line.len() as u64 / 4 + 1) as usize);
        assert_eq!(
            fields_with(Isa::Baseline, &line),
            fields_with(Isa::Avx2, &line),
            "{}",
            String::from_utf8_lossy(&line)
        );
    }
}
