//! A data frame's record: a zstd skippable frame right after it.
//!
//! Layout (little-endian): the skippable frame's magic `0x184D2A5E` and payload size
//! (168), then `TSCPARC1`, the original's first byte of the frame (`start`), its byte
//! count (`len`), the data frame's compressed size, when it was written (microseconds
//! since the epoch), SHA-256 of the original bytes, the generation's chain hash up to
//! and with this frame (`SHA-256(previous chain ‖ frame hash)`, the first from 32
//! zero bytes), SHA-256 of the original's first `min(4096, start + len)` bytes and of
//! its last 4 KiB up to `start + len`.

use sha2::{Digest, Sha256};

/// A skippable frame's magic (one of the sixteen zstd leaves to applications).
const MAGIC: u32 = 0x184D_2A5E;

/// The tag and version at the head of a record's payload.
const TAG: &[u8; 8] = b"TSCPARC1";

/// A record's payload size.
const PAYLOAD: usize = 8 + 8 * 4 + 32 * 4;

/// A record's whole size, header included.
pub const RECORD_LEN: usize = 8 + PAYLOAD;

/// How many bytes the head and tail fingerprints cover.
pub const PRINT: u64 = 4096;

/// One data frame's record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// The original's offset of the frame's first byte.
    pub start: u64,
    /// How many original bytes the frame holds.
    pub len: u64,
    /// The data frame's compressed size.
    pub stored: u64,
    /// When it was written, microseconds since the epoch.
    pub at_us: u64,
    /// SHA-256 of the frame's original bytes.
    pub sha: [u8; 32],
    /// The generation's chain hash, up to and with this frame.
    pub chain: [u8; 32],
    /// SHA-256 of the original's first `min(4096, end)` bytes.
    pub head: [u8; 32],
    /// SHA-256 of the original's bytes from `end - 4096` (or 0) to `end`.
    pub tail: [u8; 32],
}

impl Record {
    /// The original's offset just past the frame.
    pub fn end(&self) -> u64 {
        self.start + self.len
    }

    /// The record as a skippable frame.
    pub fn encode(&self) -> [u8; RECORD_LEN] {
        let mut out = [0u8; RECORD_LEN];
        out[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        out[4..8].copy_from_slice(&(PAYLOAD as u32).to_le_bytes());
        out[8..16].copy_from_slice(TAG);
        for (i, v) in [self.start, self.len, self.stored, self.at_us]
            .iter()
            .enumerate()
        {
            out[16 + 8 * i..24 + 8 * i].copy_from_slice(&v.to_le_bytes());
        }
        for (i, h) in [self.sha, self.chain, self.head, self.tail]
            .iter()
            .enumerate()
        {
            out[48 + 32 * i..80 + 32 * i].copy_from_slice(h);
        }
        out
    }

    /// The record `bytes` hold, when they are one.
    pub fn decode(bytes: &[u8]) -> Option<Record> {
        if bytes.len() != RECORD_LEN
            || bytes[0..4] != MAGIC.to_le_bytes()
            || bytes[4..8] != (PAYLOAD as u32).to_le_bytes()
            || &bytes[8..16] != TAG
        {
            return None;
        }
        let n = |i: usize| u64::from_le_bytes(bytes[16 + 8 * i..24 + 8 * i].try_into().unwrap());
        let h = |i: usize| -> [u8; 32] { bytes[48 + 32 * i..80 + 32 * i].try_into().unwrap() };
        Some(Record {
            start: n(0),
            len: n(1),
            stored: n(2),
            at_us: n(3),
            sha: h(0),
            chain: h(1),
            head: h(2),
            tail: h(3),
        })
    }
}

/// SHA-256 of `bytes`.
pub(crate) fn sha(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// The chain hash after `previous` with a frame of hash `frame`.
pub(crate) fn chain(previous: &[u8; 32], frame: &[u8; 32]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(previous);
    h.update(frame);
    h.finalize().into()
}

/// Hex of a hash, for messages.
pub(crate) fn hex(h: &[u8]) -> String {
    h.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_and_anything_else_is_none() {
        let r = Record {
            start: 7,
            len: 4 << 20,
            stored: 12345,
            at_us: 1_765_000_000_000_000,
            sha: sha(b"a"),
            chain: chain(&[0; 32], &sha(b"a")),
            head: sha(b"h"),
            tail: sha(b"t"),
        };
        let bytes = r.encode();
        assert_eq!(Record::decode(&bytes), Some(r));
        assert_eq!(r.end(), 7 + (4 << 20));
        let mut bad = bytes;
        bad[9] ^= 1;
        assert_eq!(Record::decode(&bad), None);
        assert_eq!(Record::decode(&bytes[1..]), None);
        // A zstd decoder skips it: a stream of a frame and its record decodes to the
        // frame's bytes.
        let mut stream = zstd::bulk::compress(b"hello\n", 3).unwrap();
        stream.extend_from_slice(&bytes);
        assert_eq!(zstd::stream::decode_all(&stream[..]).unwrap(), b"hello\n");
    }
}
