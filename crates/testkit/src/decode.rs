//! Decoding bytes with one adapter, framed by the real framing layer and nothing else:
//! what an adapter's own tests compare against (no engine, no detection, no cursor).
//!
//! ```
//! use transcope_core::adapter::{Framing, Skip};
//! use transcope_testkit::decode::decode_bytes;
//!
//! let mut adapter = transcope_adapter_codex::CodexAdapter::new();
//! let data = b"{\"type\":\"session_meta\",\"payload\":{\"id\":\"s\"}}\r\n[1]\n{\"type\":\"turn_context\",\"payload\":{\"cwd\":\"/w\"}}";
//! let (entries, skips) = decode_bytes(&mut adapter, Framing::Lines, data);
//! assert_eq!(entries.len(), 2);
//! assert_eq!(entries[1].cwd.as_deref(), Some("/w"));
//! assert_eq!((entries[1].line, entries[1].offset), (3, 50));
//! assert_eq!(skips, [(2, Skip::NotObject)]);
//! ```

use transcope_core::adapter::{from_fn, Adapter, Framing, Skip};
use transcope_core::{Entry, LinePos};
use transcope_jsonl::{FinalLine, FnSink, Framer, Line};

/// The entries of some bytes (owned), and the skipped records by 1-based line number.
pub type Decoded = (Vec<Entry<'static>>, Vec<(u64, Skip)>);

/// Decode `data` with `adapter` (opened on its file already, if it looks beside it) as
/// `framing` says: the whole of it as one record ([`Framing::Document`], at line 1), or
/// each line as `transcope-jsonl` frames it ([`Framing::Lines`]: `\n` or `\r\n` ends,
/// blank lines delivered, a last line without a newline decoded too, as the
/// reference's loader reads a whole file).
pub fn decode_bytes(adapter: &mut dyn Adapter, framing: Framing, data: &[u8]) -> Decoded {
    let (mut entries, mut skips) = (Vec::new(), Vec::new());
    let mut one = |bytes: &[u8], pos: LinePos| {
        let mut sink = from_fn(|e: &Entry<'_>| entries.push(e.to_static()));
        if let Err(s) = adapter.decode(bytes, pos, &mut sink) {
            skips.push((pos.line, s));
        }
    };
    if framing == Framing::Document {
        one(data, LinePos { offset: 0, line: 1 });
        return (entries, skips);
    }
    let framer = Framer::builder().final_line(FinalLine::Yield).build();
    let Ok(_) = framer.frame_slice(
        data,
        0,
        1,
        FnSink(|line: Line<'_>| {
            one(
                line.bytes,
                LinePos {
                    offset: line.offset,
                    line: line.number,
                },
            );
            Ok::<_, std::convert::Infallible>(true)
        }),
    );
    (entries, skips)
}

/// The entries `adapter` decodes from one record `line` at `pos`, owned, or why it
/// skipped the record.
///
/// ```
/// use transcope_core::LinePos;
/// use transcope_testkit::decode::decode_owned;
/// let mut adapter = transcope_adapter_claude::ClaudeAdapter;
/// let pos = LinePos { offset: 0, line: 1 };
/// let got = decode_owned(&mut adapter, br#"{"type":"user","cwd":"/w"}"#, pos).unwrap();
/// assert_eq!(got[0].cwd.as_deref(), Some("/w"));
/// ```
pub fn decode_owned(
    adapter: &mut dyn Adapter,
    line: &[u8],
    pos: LinePos,
) -> Result<Vec<Entry<'static>>, Skip> {
    let mut out = Vec::new();
    adapter.decode(
        line,
        pos,
        &mut from_fn(|e: &Entry<'_>| out.push(e.to_static())),
    )?;
    Ok(out)
}

/// The last entry `decode` hands its sink, owned (`None` when it hands none): what a
/// quick path's answer is compared with.
///
/// ```
/// use transcope_core::{Entry, LinePos};
/// use transcope_testkit::decode::last_entry;
/// let line = br#"{"type":"user","cwd":"/w"}"#;
/// let pos = LinePos { offset: 5, line: 2 };
/// let e = last_entry(|sink| {
///     let _ = transcope_adapter_claude::decode_claude(line, pos, sink);
/// });
/// assert_eq!(e.unwrap().cwd.as_deref(), Some("/w"));
/// ```
pub fn last_entry(
    decode: impl FnOnce(&mut dyn transcope_core::adapter::EntrySink),
) -> Option<Entry<'static>> {
    let mut got = None;
    decode(&mut from_fn(|e: &Entry<'_>| got = Some(e.to_static())));
    got
}
