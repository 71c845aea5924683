//! Path handling that matches Python's `Path.expanduser()` and `Path.resolve()` (non-strict).

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

/// Python `Path(p).expanduser()` for `~` and `~/…`, using `home` for `~`.
///
/// `~user/…` is left as it is (the reference would look the user up in the password
/// database).
pub(crate) fn expand_user(path: &str, home: &Path) -> PathBuf {
    if path == "~" {
        return home.to_path_buf();
    }
    match path.strip_prefix("~/") {
        Some(rest) => home.join(rest.trim_start_matches('/')),
        None => PathBuf::from(path),
    }
}

/// Python `Path(p).resolve()` with `strict=False` (`os.path.realpath`): made absolute against
/// the process working directory, every symlink that exists followed, `..` applied after
/// resolving what precedes it, and the part that does not exist kept as written.
/// A symlink loop leaves the rest unresolved (3.11 raises `RuntimeError` there).
pub(crate) fn resolve(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        match std::env::current_dir() {
            Ok(cwd) => cwd.join(path),
            Err(_) => path.to_path_buf(),
        }
    };
    if let Ok(real) = std::fs::canonicalize(&absolute) {
        return real;
    }
    let mut seen = HashMap::new();
    let (resolved, _) = join_real(PathBuf::from("/"), &absolute, &mut seen);
    resolved
}

/// Like `realpath` but forgiving (git's `strbuf_realpath_forgiving`): the path itself when it
/// cannot be resolved.
pub(crate) fn real_or_same(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| resolve(path))
}

/// `posixpath._joinrealpath`: resolve `rest` on top of the already resolved `base`.
fn join_real(
    mut base: PathBuf,
    rest: &Path,
    seen: &mut HashMap<PathBuf, Option<PathBuf>>,
) -> (PathBuf, bool) {
    if rest.is_absolute() {
        base = PathBuf::from("/");
    }
    let names: Vec<&OsStr> = rest
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name),
            Component::ParentDir => Some(OsStr::new("..")),
            _ => None,
        })
        .collect();
    for (index, name) in names.iter().enumerate() {
        if *name == ".." {
            base.pop();
            continue;
        }
        let candidate = base.join(name);
        let is_link = std::fs::symlink_metadata(&candidate)
            .map(|m| m.file_type().is_symlink())
            .unwrap_or(false);
        if !is_link {
            base = candidate;
            continue;
        }
        let remaining = || {
            let mut p = candidate.clone();
            p.extend(&names[index + 1..]);
            p
        };
        match seen.get(&candidate) {
            Some(Some(resolved)) => {
                base = resolved.clone();
                continue;
            }
            Some(None) => return (remaining(), false),
            None => {}
        }
        seen.insert(candidate.clone(), None);
        let target = match std::fs::read_link(&candidate) {
            Ok(target) => target,
            Err(_) => {
                base = candidate;
                continue;
            }
        };
        let (resolved, ok) = join_real(base.clone(), &target, seen);
        if !ok {
            let mut p = resolved;
            p.extend(&names[index + 1..]);
            return (p, false);
        }
        seen.insert(candidate, Some(resolved.clone()));
        base = resolved;
    }
    (base, true)
}

/// The final component as a string, `""` for `/`.
pub(crate) fn base_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A path as the string the reference would print (`str(path)`).
pub(crate) fn display(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expand_user_only_touches_a_leading_tilde() {
        let home = Path::new("/home/u");
        assert_eq!(expand_user("~", home), PathBuf::from("/home/u"));
        assert_eq!(expand_user("~/a/b", home), PathBuf::from("/home/u/a/b"));
        assert_eq!(expand_user("/x/~/y", home), PathBuf::from("/x/~/y"));
        assert_eq!(expand_user("~bob/x", home), PathBuf::from("~bob/x"));
    }

    #[test]
    fn resolve_follows_symlinks_and_keeps_the_missing_tail() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(real.join("target")).unwrap();
        std::os::unix::fs::symlink(real.join("target"), real.join("link")).unwrap();
        assert_eq!(
            resolve(&real.join("link/gone/../x")),
            real.join("target/x"),
            "`..` after a missing component is lexical"
        );
        assert_eq!(resolve(&real.join("link/")), real.join("target"));
        // a dangling link resolves to its target
        std::os::unix::fs::symlink(real.join("nowhere"), real.join("dangling")).unwrap();
        assert_eq!(resolve(&real.join("dangling/y")), real.join("nowhere/y"));
        // a loop stops resolving
        std::os::unix::fs::symlink(real.join("loop"), real.join("loop")).unwrap();
        assert_eq!(resolve(&real.join("loop/z")), real.join("loop/z"));
        assert_eq!(base_name(Path::new("/")), "");
    }

    /// Expected values printed by Python 3.11 `pathlib.Path(p).resolve()` on the same tree.
    #[test]
    fn resolve_matches_python_pathlib() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let t = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(t.join("a/b")).unwrap();
        std::fs::create_dir_all(t.join("c")).unwrap();
        std::fs::write(t.join("a/file"), "f").unwrap();
        symlink("a/b", t.join("lb")).unwrap();
        symlink("../c", t.join("a/lc")).unwrap();
        symlink("nowhere/x", t.join("dang")).unwrap();
        symlink(t.join("a"), t.join("abs")).unwrap();
        symlink("a/file", t.join("lf")).unwrap();
        for (input, expected) in [
            ("lb/../c", "a/c"),
            ("lb/x/../y", "a/b/y"),
            ("a/lc/../a", "a"),
            ("dang", "nowhere/x"),
            ("dang/q", "nowhere/x/q"),
            ("abs/b/..", "a"),
            ("lf/sub", "a/file/sub"),
            ("missing/../a", "a"),
            ("lb/./", "a/b"),
            ("a/file/../b", "a/b"),
        ] {
            assert_eq!(resolve(&t.join(input)), t.join(expected), "{input}");
        }
    }
}
