//! Lexical path helpers with Go's `path/filepath` semantics (Unix separators), working on the
//! bytes of a path: `Clean`, `Dir`, `Base`, `Join`, and `EvalSymlinks`.
//!
//! The specification is phrased in those terms, and Rust's [`Path`] differs from them in ways
//! that matter here (`Path::parent` does not apply `..`, `Path::join` with an absolute part
//! replaces the whole path, and `canonicalize` always makes a path absolute).

use std::path::{Path, PathBuf};

/// The bytes of a path (lossy where the platform's paths are not bytes).
pub(crate) fn bytes(path: &Path) -> std::borrow::Cow<'_, [u8]> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        std::borrow::Cow::Borrowed(path.as_os_str().as_bytes())
    }
    #[cfg(not(unix))]
    {
        match path.to_string_lossy() {
            std::borrow::Cow::Borrowed(s) => std::borrow::Cow::Borrowed(s.as_bytes()),
            std::borrow::Cow::Owned(s) => std::borrow::Cow::Owned(s.into_bytes()),
        }
    }
}

/// A path made of `bytes`.
pub(crate) fn from_bytes(bytes: Vec<u8>) -> PathBuf {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStringExt;
        PathBuf::from(std::ffi::OsString::from_vec(bytes))
    }
    #[cfg(not(unix))]
    {
        PathBuf::from(String::from_utf8_lossy(&bytes).into_owned())
    }
}

/// Go's `filepath.Clean`: one separator between names, no `.`, `..` applied lexically, no
/// trailing separator; `""` becomes `"."`.
pub(crate) fn clean(path: &Path) -> PathBuf {
    from_bytes(clean_bytes(&bytes(path)))
}

pub(crate) fn clean_bytes(path: &[u8]) -> Vec<u8> {
    if path.is_empty() {
        return b".".to_vec();
    }
    let rooted = path[0] == b'/';
    let mut out: Vec<u8> = Vec::with_capacity(path.len());
    if rooted {
        out.push(b'/');
    }
    // Length of `out` that `..` may not back up past.
    let dotdot_floor_init = out.len();
    let mut dotdot = dotdot_floor_init;
    for name in path.split(|&b| b == b'/') {
        match name {
            b"" | b"." => {}
            b".." => {
                if out.len() > dotdot {
                    // Back up to the previous separator.
                    let mut w = out.len() - 1;
                    while w > dotdot && out[w] != b'/' {
                        w -= 1;
                    }
                    out.truncate(w);
                } else if !rooted {
                    if !out.is_empty() {
                        out.push(b'/');
                    }
                    out.extend_from_slice(b"..");
                    dotdot = out.len();
                }
            }
            _ => {
                if (rooted && out.len() != 1) || (!rooted && !out.is_empty()) {
                    out.push(b'/');
                }
                out.extend_from_slice(name);
            }
        }
    }
    if out.is_empty() {
        out.push(b'.');
    }
    out
}

/// Go's `filepath.Dir`: everything before the last separator, cleaned.
pub(crate) fn dir(path: &Path) -> PathBuf {
    let b = bytes(path);
    let cut = b.iter().rposition(|&c| c == b'/').map_or(0, |i| i + 1);
    from_bytes(clean_bytes(&b[..cut]))
}

/// Go's `filepath.Base`: the last element, trailing separators ignored; `"."` for `""` and
/// `"/"` for a path of separators.
pub(crate) fn base(path: &Path) -> Vec<u8> {
    let b = bytes(path);
    if b.is_empty() {
        return b".".to_vec();
    }
    let trimmed = {
        let mut end = b.len();
        while end > 0 && b[end - 1] == b'/' {
            end -= 1;
        }
        &b[..end]
    };
    if trimmed.is_empty() {
        return b"/".to_vec();
    }
    let start = trimmed
        .iter()
        .rposition(|&c| c == b'/')
        .map_or(0, |i| i + 1);
    trimmed[start..].to_vec()
}

/// Go's `filepath.Join`: the non-empty parts joined by separators, cleaned; `""` when every
/// part is empty.
pub(crate) fn join(parts: &[&[u8]]) -> PathBuf {
    let mut out: Vec<u8> = Vec::new();
    let mut any = false;
    for part in parts.iter().filter(|p| !p.is_empty()) {
        if any {
            out.push(b'/');
        }
        out.extend_from_slice(part);
        any = true;
    }
    if !any {
        return PathBuf::new();
    }
    from_bytes(clean_bytes(&out))
}

/// Whether `path` equals `prefix` or lies beneath it, component-wise (both cleaned first).
pub(crate) fn within(path: &Path, prefix: &Path) -> bool {
    let path = clean_bytes(&bytes(path));
    let prefix = clean_bytes(&bytes(prefix));
    if path == prefix {
        return true;
    }
    if prefix == b"/" {
        return path.first() == Some(&b'/');
    }
    path.len() > prefix.len() && path.starts_with(&prefix) && path[prefix.len()] == b'/'
}

/// Go's `filepath.EvalSymlinks` (Unix): every component must exist; symlinks are followed
/// (at most 255); the result is cleaned and stays relative when the input is relative and no
/// followed link is absolute.
pub(crate) fn eval_symlinks(path: &Path) -> std::io::Result<PathBuf> {
    let mut path: Vec<u8> = bytes(path).into_owned();
    let mut vol_len = 0usize;
    if !path.is_empty() && path[0] == b'/' {
        vol_len = 1;
    }
    let mut vol: Vec<u8> = path[..vol_len].to_vec();
    let mut dest: Vec<u8> = vol.clone();
    let mut links = 0u32;
    let mut end = vol_len;
    let mut start;
    while end < path.len() {
        start = end;
        while start < path.len() && path[start] == b'/' {
            start += 1;
        }
        end = start;
        while end < path.len() && path[end] != b'/' {
            end += 1;
        }
        let name = &path[start..end];
        if name.is_empty() {
            break;
        } else if name == b"." {
            continue;
        } else if name == b".." {
            // Back up to the previous component if possible; keep a `..` that cannot be.
            match last_separator(&dest, vol_len) {
                Some(r) if &dest[r + 1..] != b".." => dest.truncate(r),
                _ => {
                    if dest.len() > vol_len {
                        dest.push(b'/');
                    }
                    dest.extend_from_slice(b"..");
                }
            }
            continue;
        }
        if !dest.is_empty() && *dest.last().unwrap() != b'/' {
            dest.push(b'/');
        }
        dest.extend_from_slice(name);
        let dest_path = from_bytes(dest.clone());
        let meta = std::fs::symlink_metadata(&dest_path)?;
        if !meta.file_type().is_symlink() {
            if !meta.is_dir() && end < path.len() {
                return Err(std::io::Error::from_raw_os_error(20)); // ENOTDIR
            }
            continue;
        }
        links += 1;
        if links > 255 {
            return Err(std::io::Error::other("EvalSymlinks: too many links"));
        }
        let link = bytes(&std::fs::read_link(&dest_path)?).into_owned();
        let mut rest = link.clone();
        rest.extend_from_slice(&path[end..]);
        path = rest;
        if link.first() == Some(&b'/') {
            dest = b"/".to_vec();
            end = 1;
            vol = b"/".to_vec();
            vol_len = 1;
        } else {
            match last_separator(&dest, vol_len) {
                Some(r) => dest.truncate(r),
                None => dest = vol.clone(),
            }
            end = 0;
        }
    }
    Ok(from_bytes(clean_bytes(&dest)))
}

/// The index of the last separator in `dest` at or after `vol_len`.
fn last_separator(dest: &[u8], vol_len: usize) -> Option<usize> {
    (vol_len..dest.len()).rev().find(|&i| dest[i] == b'/')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(s: &str) -> String {
        clean(Path::new(s)).to_string_lossy().into_owned()
    }

    #[test]
    fn clean_matches_go() {
        for (input, want) in [
            ("", "."),
            ("/", "/"),
            ("//a//b/", "/a/b"),
            ("a/./b/../c", "a/c"),
            ("../../a", "../../a"),
            ("/../a", "/a"),
            ("a/..", "."),
            ("a/../..", ".."),
            ("./", "."),
            ("/a/b/../../..", "/"),
            ("abc/def/../../../ghi", "../ghi"),
        ] {
            assert_eq!(c(input), want, "{input:?}");
        }
    }

    #[test]
    fn dir_and_base_match_go() {
        let d = |s: &str| dir(Path::new(s)).to_string_lossy().into_owned();
        let b = |s: &str| String::from_utf8(base(Path::new(s))).unwrap();
        assert_eq!(d("/a/b/c.jsonl"), "/a/b");
        assert_eq!(d("c.jsonl"), ".");
        assert_eq!(d("/"), "/");
        assert_eq!(d("/a"), "/");
        assert_eq!(d("/a/b/"), "/a/b");
        assert_eq!(b("/a/b/"), "b");
        assert_eq!(b(""), ".");
        assert_eq!(b("//"), "/");
        assert_eq!(b("x"), "x");
    }

    #[test]
    fn join_and_within() {
        assert_eq!(join(&[b"/a", b"", b"../b"]), PathBuf::from("/b"));
        assert_eq!(join(&[b"", b""]), PathBuf::new());
        assert!(within(Path::new("/a/b/c"), Path::new("/a/b")));
        assert!(within(Path::new("/a/b"), Path::new("/a/b/")));
        assert!(!within(Path::new("/a/bc"), Path::new("/a/b")));
        assert!(within(Path::new("/x"), Path::new("/")));
    }

    #[test]
    fn eval_symlinks_follows_links_and_keeps_relative_paths_relative() {
        use std::os::unix::fs::symlink;
        let tmp = tempfile::tempdir().unwrap();
        let t = std::fs::canonicalize(tmp.path()).unwrap();
        std::fs::create_dir_all(t.join("real/sub")).unwrap();
        symlink("real", t.join("rel")).unwrap();
        symlink(t.join("real"), t.join("abs")).unwrap();
        symlink("../real/sub", t.join("real/up")).unwrap();
        assert_eq!(
            eval_symlinks(&t.join("rel/sub")).unwrap(),
            t.join("real/sub")
        );
        assert_eq!(
            eval_symlinks(&t.join("abs/sub/..")).unwrap(),
            t.join("real")
        );
        assert_eq!(
            eval_symlinks(&t.join("real/up")).unwrap(),
            t.join("real/sub")
        );
        assert!(eval_symlinks(&t.join("missing")).is_err());
        std::fs::write(t.join("file"), "").unwrap();
        assert!(eval_symlinks(&t.join("file/x")).is_err());
        assert_eq!(eval_symlinks(Path::new("/")).unwrap(), PathBuf::from("/"));
        symlink("loop", t.join("loop")).unwrap();
        assert!(eval_symlinks(&t.join("loop")).is_err());
    }
}
