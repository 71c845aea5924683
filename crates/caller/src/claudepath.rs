//! Where Claude Code keeps transcripts (identity.md §1.1, §2.4, §3.9–§3.11): [`config_dir`],
//! [`encode_project_dir`], [`resolve_work_dir`], [`project_dir`], the sub-agent layouts
//! ([`subagent_transcript_path`], [`session_dir_of_subagent`]) and [`relocate_record`].
//!
//! The transcript encoding ([`encode_project_dir`] over the symlink-resolved cwd) is **not**
//! the state encoding ([`encode_workspace`](crate::sessionpath::encode_workspace), anchored on
//! the git root); the two must not be mixed.

use std::path::{Path, PathBuf};

use crate::gopath;
use crate::memo::Memo;
use crate::transcript::{any_entry_holding, TranscriptError};
use crate::Env;

/// The variable naming Claude Code's configuration directory (the Claude adapter's
/// declared home variable, `transcope_adapter_claude::agent::HOME`; the binary's tests
/// hold the two to one name and one rule).
pub const CLAUDE_CONFIG_DIR_VAR: &str = "CLAUDE_CONFIG_DIR";

/// The user's home directory as Go's `os.UserHomeDir` finds it in `env`: `HOME`
/// (`USERPROFILE` on Windows); `None` when unset or empty.
pub fn home_dir(env: &Env) -> Option<PathBuf> {
    let name = if cfg!(windows) { "USERPROFILE" } else { "HOME" };
    env.get(name).filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// `transcript.ConfigDir`: `CLAUDE_CONFIG_DIR` with surrounding whitespace trimmed when that
/// leaves something (the one rule of every agent's home variable,
/// [`transcope_core::agent::folder_var`]), else `<home>/.claude`, else `None` (unknown).
///
/// ```
/// use transcope_caller::{claudepath::config_dir, Env};
///
/// let env = Env::from([("HOME".into(), "/home/u".into()), ("CLAUDE_CONFIG_DIR".into(), " \t".into())]);
/// assert_eq!(config_dir(&env).unwrap(), std::path::Path::new("/home/u/.claude"));
/// assert_eq!(config_dir(&Env::new()), None);
/// ```
pub fn config_dir(env: &Env) -> Option<PathBuf> {
    if let Some(dir) =
        transcope_core::agent::folder_var(env.get(CLAUDE_CONFIG_DIR_VAR).map(String::as_str))
    {
        return Some(dir);
    }
    let home = home_dir(env)?;
    Some(gopath::join(&[&gopath::bytes(&home), b".claude"]))
}

/// The per-rune rule shared by both encodings (identity.md §3.3): every character that is not
/// an ASCII letter or digit becomes `-` — one `-` per multi-byte character, one per invalid
/// UTF-8 byte. No truncation, no hashing.
pub(crate) fn encode_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    let mut rest = bytes;
    while !rest.is_empty() {
        let (valid, invalid) = match std::str::from_utf8(rest) {
            Ok(s) => (s, false),
            Err(e) => (
                // The prefix is valid by construction.
                std::str::from_utf8(&rest[..e.valid_up_to()]).unwrap_or_default(),
                true,
            ),
        };
        for c in valid.chars() {
            out.push(if c.is_ascii_alphanumeric() { c } else { '-' });
        }
        rest = &rest[valid.len()..];
        if invalid {
            out.push('-');
            rest = &rest[1..];
        }
    }
    out
}

/// `transcript.EncodeProjectDir`: every character of `dir` as given that is not an ASCII
/// letter or digit becomes `-` (one per multi-byte character, one per invalid byte; no
/// resolution, no git anchoring). The encoding is lossy: `/a/b-c`, `/a/b/c`, `/a/b_c` and
/// `/a/b.c` all collide.
///
/// ```
/// use transcope_caller::claudepath::encode_project_dir;
///
/// assert_eq!(encode_project_dir("/home/u/proj/pkg".as_ref()), "-home-u-proj-pkg");
/// assert_eq!(encode_project_dir("/home/u/proj-pkg".as_ref()), "-home-u-proj-pkg");
/// assert_eq!(encode_project_dir("/tmp/é😀".as_ref()), "-tmp---");
/// ```
pub fn encode_project_dir(dir: &Path) -> String {
    encode_bytes(&gopath::bytes(dir))
}

/// `transcript.ResolveWorkDir`: `dir` with its symlinks resolved (cleaned; relative stays
/// relative), or — when it does not exist in full — its nearest resolvable ancestor joined
/// with the missing tail; `dir` unchanged when nothing resolves; `""` for `""`.
pub fn resolve_work_dir(dir: &Path) -> PathBuf {
    if dir.as_os_str().is_empty() {
        return PathBuf::new();
    }
    if let Ok(resolved) = gopath::eval_symlinks(dir) {
        return resolved;
    }
    let mut cur = gopath::clean(dir);
    let mut tail: Vec<Vec<u8>> = Vec::new();
    loop {
        let parent = gopath::dir(&cur);
        if parent == cur {
            return dir.to_path_buf();
        }
        tail.push(gopath::base(&cur));
        if let Ok(resolved) = gopath::eval_symlinks(&parent) {
            let resolved = gopath::bytes(&resolved).into_owned();
            let mut parts: Vec<&[u8]> = vec![&resolved];
            parts.extend(tail.iter().rev().map(Vec::as_slice));
            return gopath::join(&parts);
        }
        cur = parent;
    }
}

/// `transcript.ProjectDir`: `<config>/projects/<EncodeProjectDir(ResolveWorkDir(dir))>`,
/// cleaned; `None` when `config` is empty (unknown). `dir == ""` gives `<config>/projects`.
pub fn project_dir(config: &Path, dir: &Path) -> Option<PathBuf> {
    if config.as_os_str().is_empty() {
        return None;
    }
    let encoded = encode_project_dir(&resolve_work_dir(dir));
    Some(gopath::join(&[
        &gopath::bytes(config),
        b"projects",
        encoded.as_bytes(),
    ]))
}

/// `transcript.SessionDirOfSubagent`: for a record under `<session>/subagents/…`, the
/// `<session>` directory (the nearest ancestor of the file's directory named exactly
/// `subagents`, then its parent); `None` for any other path. Any ancestor named `subagents`
/// qualifies, even one above the config directory.
///
/// ```
/// use transcope_caller::claudepath::session_dir_of_subagent;
///
/// let s = |p: &str| session_dir_of_subagent(p.as_ref()).map(|d| d.display().to_string());
/// assert_eq!(s("/p/S/subagents/agent-x.jsonl").as_deref(), Some("/p/S"));
/// assert_eq!(s("/p/S/subagents/workflows/wf_1/agent-x.jsonl").as_deref(), Some("/p/S"));
/// assert_eq!(s("/p/S.jsonl"), None);
/// ```
pub fn session_dir_of_subagent(path: &Path) -> Option<PathBuf> {
    let mut dir = gopath::dir(path);
    loop {
        let parent = gopath::dir(&dir);
        if parent == dir {
            return None;
        }
        if gopath::base(&dir) == b"subagents" {
            return Some(parent);
        }
        dir = parent;
    }
}

/// Refuses an agent id that is not a single file-name component (identity.md §3.9).
pub(crate) fn check_agent_id(agent_id: &str) -> Result<(), TranscriptError> {
    if agent_id.is_empty() || agent_id.contains(['/', '\\']) || agent_id == "." || agent_id == ".."
    {
        return Err(TranscriptError::NotAnAgentId {
            id: agent_id.to_owned(),
        });
    }
    Ok(())
}

/// `transcript.SubagentTranscriptPath`: the record of sub-agent `agent_id` of the session
/// whose record is `parent` — `<parent without .jsonl>/subagents/agent-<id>.jsonl` when that
/// exists, else the first (sorted) `…/subagents/workflows/*/agent-<id>.jsonl`, else the flat
/// path (which need not exist).
///
/// # Errors
/// [`TranscriptError::NoTranscriptPath`] for an empty `parent`;
/// [`TranscriptError::NotAnAgentId`] for an id that is empty, holds `/` or `\`, or is `.` or
/// `..` (refused, never repaired).
///
/// ```
/// use transcope_caller::claudepath::subagent_transcript_path;
///
/// let p = subagent_transcript_path("/cfg/projects/-a-project/7173666c.jsonl".as_ref(), "a6e302233716d506d").unwrap();
/// assert_eq!(p, std::path::Path::new("/cfg/projects/-a-project/7173666c/subagents/agent-a6e302233716d506d.jsonl"));
/// assert!(subagent_transcript_path("/cfg/x.jsonl".as_ref(), "../victim").is_err());
/// ```
pub fn subagent_transcript_path(parent: &Path, agent_id: &str) -> Result<PathBuf, TranscriptError> {
    if parent.as_os_str().is_empty() {
        return Err(TranscriptError::NoTranscriptPath);
    }
    check_agent_id(agent_id)?;
    let parent_bytes = gopath::bytes(parent);
    let base = parent_bytes
        .strip_suffix(b".jsonl")
        .unwrap_or(&parent_bytes);
    let file = format!("agent-{agent_id}.jsonl");
    let direct = gopath::join(&[base, b"subagents", file.as_bytes()]);
    if direct.metadata().is_ok() {
        return Ok(direct);
    }
    let workflows = gopath::join(&[base, b"subagents", b"workflows"]);
    if let Ok(entries) = std::fs::read_dir(&workflows) {
        let mut names: Vec<Vec<u8>> = entries
            .filter_map(Result::ok)
            .map(|e| gopath::bytes(Path::new(&e.file_name())).into_owned())
            .collect();
        names.sort();
        for name in names {
            let candidate = gopath::join(&[&gopath::bytes(&workflows), &name, file.as_bytes()]);
            if candidate.symlink_metadata().is_ok() {
                return Ok(candidate);
            }
        }
    }
    Ok(direct)
}

/// Found relocations, by `(config_dir, path)`.
static RELOCATIONS: Memo<(PathBuf, PathBuf), PathBuf> = Memo::new();

/// `transcript.RelocateRecord` (latest version, identity.md §2.4): where a record reported
/// under one project directory was really written, when the session was resumed from
/// another directory.
///
/// `path` is returned unchanged when it or `config_dir` is empty, when it exists, when it has
/// no `projects` ancestor (or fewer than two components below it), when that `projects` is
/// not `config_dir/projects` or beneath it (symlinks resolved), or when no other project
/// directory (byte-wise name order) holds the same tail with a record whose `sessionId`
/// positively matches. A found answer is remembered for the process (keyed by `config_dir`
/// and `path`); a miss is not.
pub fn relocate_record(config_dir: &Path, path: &Path) -> PathBuf {
    if path.as_os_str().is_empty() || config_dir.as_os_str().is_empty() {
        return path.to_path_buf();
    }
    if path.metadata().is_ok() {
        return path.to_path_buf();
    }
    let key = (config_dir.to_path_buf(), path.to_path_buf());
    if let Some(found) = RELOCATIONS.get(&key) {
        return found;
    }
    match search_relocation(config_dir, path) {
        Some(found) => {
            RELOCATIONS.insert(key, found.clone());
            found
        }
        None => path.to_path_buf(),
    }
}

fn search_relocation(config_dir: &Path, path: &Path) -> Option<PathBuf> {
    let clean = gopath::clean(path);
    // Climb to the nearest ancestor named `projects`.
    let mut projects = gopath::dir(&clean);
    loop {
        if gopath::base(&projects) == b"projects" {
            break;
        }
        let parent = gopath::dir(&projects);
        if parent == projects {
            return None;
        }
        projects = parent;
    }
    let clean_bytes = gopath::bytes(&clean).into_owned();
    let projects_bytes = gopath::bytes(&projects).into_owned();
    let below = clean_bytes
        .strip_prefix(projects_bytes.as_slice())?
        .strip_prefix(b"/")?;
    let (own, tail) = match below.iter().position(|&b| b == b'/') {
        Some(i) => (&below[..i], &below[i + 1..]),
        None => return None,
    };
    let first = tail.split(|&b| b == b'/').next().unwrap_or_default();
    let session_id = first.strip_suffix(b".jsonl").unwrap_or(first);
    if tail.is_empty() || session_id.is_empty() {
        return None;
    }
    let session_id = String::from_utf8_lossy(session_id).into_owned();
    // Confirm the climbed `projects` is the config directory's (or beneath it).
    let want = resolve_work_dir(&gopath::join(&[&gopath::bytes(config_dir), b"projects"]));
    if !gopath::within(&resolve_work_dir(&projects), &want) {
        return None;
    }
    let mut entries: Vec<(Vec<u8>, bool)> = std::fs::read_dir(&projects)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| {
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            (
                gopath::bytes(Path::new(&e.file_name())).into_owned(),
                is_dir,
            )
        })
        .collect();
    entries.sort();
    for (name, is_dir) in entries {
        if !is_dir || name == own {
            continue;
        }
        let candidate = gopath::join(&[&projects_bytes, &name, tail]);
        if candidate.metadata().is_err() {
            continue;
        }
        let matched = any_entry_holding(&candidate, &[&session_id], |entry| {
            entry.session_id == session_id
        });
        if matched.unwrap_or(false) {
            return Some(candidate);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_is_per_character() {
        assert_eq!(encode_bytes(b"/a/b_c x.y"), "-a-b-c-x-y");
        assert_eq!(encode_bytes("é".as_bytes()), "-");
        assert_eq!(encode_bytes(&[b'a', 0xff, 0xfe, b'b']), "a--b");
        assert_eq!(
            encode_bytes(&[0xe2, 0x82]),
            "--",
            "a truncated sequence is one - per byte"
        );
        assert_eq!(encode_bytes(b""), "");
    }

    #[test]
    fn agent_ids_are_checked() {
        for bad in ["", ".", "..", "a/b", "a\\b"] {
            assert!(matches!(
                check_agent_id(bad),
                Err(TranscriptError::NotAnAgentId { .. })
            ));
        }
        assert!(check_agent_id("a0123456789abcdef").is_ok());
        assert!(check_agent_id("...").is_ok());
    }
}
