//! Path handling that matches Python's `Path.expanduser()` and `Path.resolve()` (non-strict).

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Components, Path, PathBuf};

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

/// The longest path the kernel looks up, its NUL included (`PATH_MAX`): `lstat` of a
/// longer one fails with `ENAMETOOLONG`, so resolution never asks.
pub(crate) const PATH_MAX: usize = libc::PATH_MAX as usize;

/// Python `Path(p).resolve()` with `strict=False` (`os.path.realpath`): made absolute against
/// the process working directory, every symlink that exists followed, `..` applied after
/// resolving what precedes it, and the part that does not exist kept as written.
/// A symlink loop leaves the rest unresolved (3.11 raises `RuntimeError` there).
///
/// **Cost: linear in the path.** Each component is looked at once, on a resolved path
/// kept as a stack (a push or a pop per component, never a copy of what precedes it),
/// and the file system is asked (`lstat`) only while the answer could be a symbolic
/// link: not below a component found missing or not a folder (nothing below it exists),
/// and not for a path of `PATH_MAX` bytes or more (the kernel would refuse it). What
/// those components would have resolved to is exactly what such an `lstat` failing
/// gives today: the component kept as written. So `'/' + 'e/' * 131072` costs one
/// `lstat`, and a megabyte of path a few milliseconds.
pub(crate) fn resolve(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        match std::env::current_dir() {
            Ok(cwd) => cwd.join(path),
            Err(_) => path.to_path_buf(),
        }
    };
    // realpath(3) answers a path that exists whole; one of PATH_MAX bytes or more it
    // cannot answer, only cost time.
    if absolute.as_os_str().len() < PATH_MAX {
        if let Ok(real) = std::fs::canonicalize(&absolute) {
            return real;
        }
    }
    let mut seen = HashMap::new();
    match join_real(Resolved::root(), &absolute, &mut seen) {
        Ok(resolved) => resolved.into_path(),
        Err(unresolved) => PathBuf::from(OsString::from_vec(unresolved)),
    }
}

/// Like `realpath` but forgiving (git's `strbuf_realpath_forgiving`): the path itself when it
/// cannot be resolved.
pub(crate) fn real_or_same(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| resolve(path))
}

/// A resolved absolute path, as a stack of components over one buffer (a pop cuts at
/// the last `/`: each byte is pushed and popped at most once).
#[derive(Clone, Debug)]
struct Resolved {
    /// `/a/b/c`: each component with the `/` before it; empty for the root.
    bytes: Vec<u8>,
    /// How many components.
    depth: usize,
    /// The depth (1 for the first component) of a component known to have nothing
    /// below it that `lstat` could find: missing, not a folder, or `PATH_MAX` long.
    dead: Option<usize>,
}

impl Resolved {
    fn root() -> Resolved {
        Resolved {
            bytes: Vec::new(),
            depth: 0,
            dead: None,
        }
    }

    fn push(&mut self, name: &[u8]) {
        self.bytes.push(b'/');
        self.bytes.extend_from_slice(name);
        self.depth += 1;
    }

    /// `..`: the parent (the root's parent is the root).
    fn pop(&mut self) {
        if let Some(slash) = memchr::memrchr(b'/', &self.bytes) {
            self.bytes.truncate(slash);
            self.depth -= 1;
        }
        if self.dead.is_some_and(|d| d > self.depth) {
            self.dead = None;
        }
    }

    fn path(&self) -> &Path {
        if self.bytes.is_empty() {
            Path::new("/")
        } else {
            Path::new(OsStr::from_bytes(&self.bytes))
        }
    }

    fn into_path(self) -> PathBuf {
        if self.bytes.is_empty() {
            PathBuf::from("/")
        } else {
            PathBuf::from(OsString::from_vec(self.bytes))
        }
    }
}

/// What `lstat` says of a component, as far as resolution cares.
enum Found {
    Link,
    /// A folder: what is below it may be links.
    Folder,
    /// Not there, not a folder, not a path the kernel takes: nothing below it exists.
    Nothing,
    /// Anything else (`EACCES`, for one): not a link, and still asked below.
    Other,
}

fn lstat(path: &Path) -> Found {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Found::Link,
        Ok(m) if m.is_dir() => Found::Folder,
        Ok(_) => Found::Nothing,
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound
                    | io::ErrorKind::NotADirectory
                    | io::ErrorKind::InvalidInput
            ) || e.raw_os_error() == Some(libc::ENAMETOOLONG) =>
        {
            Found::Nothing
        }
        Err(_) => Found::Other,
    }
}

/// The path `base` + the names left in `rest` as written, for a loop (Python returns
/// the rest unresolved).
fn unresolved(mut base: Vec<u8>, rest: Components<'_>) -> Vec<u8> {
    if base.is_empty() {
        base.push(b'/');
    }
    for name in rest.filter_map(walked) {
        if base.last() != Some(&b'/') {
            base.push(b'/');
        }
        base.extend_from_slice(name.as_bytes());
    }
    base
}

/// The name `_joinrealpath` walks for a component: each one, `..` included, `.` and
/// empty ones not.
fn walked(c: Component<'_>) -> Option<&OsStr> {
    match c {
        Component::Normal(name) => Some(name),
        Component::ParentDir => Some(OsStr::new("..")),
        _ => None,
    }
}

/// `posixpath._joinrealpath`: resolve `rest` on top of the already resolved `base`;
/// `Err` holds the path left unresolved at a symlink loop.
fn join_real(
    mut base: Resolved,
    rest: &Path,
    seen: &mut HashMap<Vec<u8>, Option<Resolved>>,
) -> Result<Resolved, Vec<u8>> {
    if rest.is_absolute() {
        base = Resolved::root();
    }
    // Walked as it is read: nothing is kept per component.
    let mut names = rest.components();
    while let Some(name) = names.next() {
        let Some(name) = walked(name) else { continue };
        if name == ".." {
            base.pop();
            continue;
        }
        let name = name.as_bytes();
        // Below a component with nothing under it, or too long to look up: as an lstat
        // failing would answer, the component as written.
        let ask = base.dead.is_none() && base.bytes.len() + 1 + name.len() < PATH_MAX;
        base.push(name);
        let found = if ask {
            lstat(base.path())
        } else {
            Found::Nothing
        };
        match found {
            Found::Folder | Found::Other => continue,
            Found::Nothing => {
                base.dead.get_or_insert(base.depth);
                continue;
            }
            Found::Link => {}
        }
        let candidate = base.bytes.clone();
        match seen.get(&candidate) {
            Some(Some(resolved)) => {
                base = resolved.clone();
                continue;
            }
            Some(None) => return Err(unresolved(candidate, names)),
            None => {}
        }
        seen.insert(candidate.clone(), None);
        let target = match std::fs::read_link(base.path()) {
            Ok(target) => target,
            Err(_) => continue,
        };
        base.pop();
        match join_real(base, &target, seen) {
            Ok(resolved) => {
                seen.insert(candidate, Some(resolved.clone()));
                base = resolved;
            }
            Err(path) => return Err(unresolved(path, names)),
        }
    }
    Ok(base)
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

    /// The resolution as it was before it was made linear (every prefix joined and
    /// `lstat`ed afresh), kept here as the oracle: on any path over a tree of folders,
    /// files and links (relative, absolute, dangling, chained, looping), the two agree.
    fn resolve_before(path: &Path) -> PathBuf {
        fn join_real(
            mut base: PathBuf,
            rest: &Path,
            seen: &mut HashMap<PathBuf, Option<PathBuf>>,
        ) -> (PathBuf, bool) {
            if rest.is_absolute() {
                base = PathBuf::from("/");
            }
            let names: Vec<&OsStr> = rest.components().filter_map(walked).collect();
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
        if let Ok(real) = std::fs::canonicalize(path) {
            return real;
        }
        join_real(PathBuf::from("/"), path, &mut HashMap::new()).0
    }

    #[test]
    fn resolve_agrees_with_the_quadratic_resolution_it_replaced() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let t = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(t.join("a/b/c")).unwrap();
        std::fs::write(t.join("a/file"), "f").unwrap();
        symlink("a/b", t.join("lb")).unwrap();
        symlink("../lb/c", t.join("a/lc")).unwrap();
        symlink("nowhere/x", t.join("dang")).unwrap();
        symlink(t.join("a"), t.join("abs")).unwrap();
        symlink("a/file", t.join("lf")).unwrap();
        symlink("loop", t.join("loop")).unwrap();
        symlink("pong", t.join("ping")).unwrap();
        symlink("ping/x", t.join("pong")).unwrap();
        symlink("lb/../../dang/..", t.join("twisty")).unwrap();
        symlink("/", t.join("root")).unwrap();
        let names = [
            "a", "b", "c", "file", "lb", "lc", "dang", "abs", "lf", "loop", "ping", "twisty",
            "root", "missing", "x", "..", "..", ".", "", "n\u{e9}",
        ];
        let mut seed = 0x9e37_79b9_u64;
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((seed >> 33) % n as u64) as usize
        };
        for round in 0..3000 {
            let mut p = t.clone().into_os_string();
            for _ in 0..next(10) {
                p.push("/");
                p.push(names[next(names.len())]);
            }
            if next(5) == 0 {
                p.push("/");
            }
            let p = PathBuf::from(p);
            assert_eq!(
                resolve(&p),
                resolve_before(&p),
                "round {round}: {}",
                p.display()
            );
        }
        // Deep enough to pass PATH_MAX, then back up to links that exist.
        for (down, up, then) in [
            (3000, 3000, "lb/c"),
            (2100, 2100, "twisty/q"),
            (10, 11, "a"),
        ] {
            let mut p = t.join("missing").into_os_string();
            for _ in 0..down {
                p.push("/e");
            }
            for _ in 0..up {
                p.push("/..");
            }
            p.push("/");
            p.push(then);
            let p = PathBuf::from(p);
            assert_eq!(
                resolve(&p),
                resolve_before(&p),
                "{down} down, {up} up, {then}"
            );
        }
    }

    /// The input: a folder 131,072 components deep took 3.5 s (release); and a
    /// megabyte of path about 30 s. Linear, it takes milliseconds even unoptimised.
    #[test]
    fn a_deep_folder_costs_time_linear_in_its_depth() {
        let dir = tempfile::tempdir().unwrap();
        let t = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(t.join("e/e")).unwrap();
        for (base, depth) in [(PathBuf::from("/"), 131_072), (t.clone(), 524_288)] {
            let mut p = base.into_os_string();
            for _ in 0..depth {
                p.push("/e");
            }
            let p = PathBuf::from(p);
            let started = std::time::Instant::now();
            let got = resolve(&p);
            let took = started.elapsed();
            assert_eq!(got, p, "nothing below the missing part resolves");
            assert!(
                took < std::time::Duration::from_secs(3),
                "{depth} components took {took:?}"
            );
        }
    }
}
