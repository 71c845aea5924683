//! `canonical_remote`: a git remote URL → a stable `project_id` (scope-log.md §3.3).

/// The `project_id` given to a folder whose origin is missing or not recognised.
pub const UNKNOWN_PROJECT_ID: &str = "unknown";

/// Turns a git remote URL into a `project_id` of the form `<host>/<owner>/<repo>`, or
/// `"unknown"` when the URL is not one of the accepted shapes.
///
/// The rules (scope-log.md §3.3):
///
/// * the URL starts with `https://`, `ssh://`, `ssh://git@` or `git@`;
/// * then a host (ASCII alphanumeric at both ends, alphanumerics, `.` and `-` inside) that
///   contains a `.` and no `..`;
/// * then a separator, which is `:` exactly when the URL starts with `git@` and `/`
///   otherwise;
/// * then `<owner>/<repo>`, both made of `[A-Za-z0-9._-]`, and an optional trailing `/`;
/// * one trailing `.git` is removed from the repo; the owner must not be `.` or `..`, the
///   repo must not be empty, `.` or `..`;
/// * the host is lowercased, and the whole id is lowercased when the host is `github.com`.
///
/// Credentials (`https://user:tok@host/…`), ports (`https://host:443/…`) and `http://`
/// therefore all give `"unknown"`.
///
/// ```
/// use transcope_identity::canonical_remote;
///
/// assert_eq!(canonical_remote("git@GitHub.com:Owner/Repo.git"), "github.com/owner/repo");
/// assert_eq!(canonical_remote("https://gitlab.example.org/Team/App/"), "gitlab.example.org/Team/App");
/// assert_eq!(canonical_remote("https://user:tok@github.com/o/r"), "unknown");
/// ```
pub fn canonical_remote(url: &str) -> String {
    parse(url).unwrap_or_else(|| UNKNOWN_PROJECT_ID.to_owned())
}

/// The `owner/repo` part of a `project_id` made by [`canonical_remote`], or `""` when the id is
/// `"unknown"` (the identity's `remote` attribute).
pub(crate) fn remote_slug(project_id: &str) -> String {
    if project_id == UNKNOWN_PROJECT_ID {
        return String::new();
    }
    project_id
        .split_once('/')
        .map(|(_, rest)| rest.to_owned())
        .unwrap_or_default()
}

fn parse(url: &str) -> Option<String> {
    // The prefixes are mutually exclusive once the host pattern is applied (a host never
    // contains `@`), so trying them longest first is the same as the regex alternation.
    let rest = ["https://", "ssh://git@", "ssh://", "git@"]
        .iter()
        .find_map(|prefix| url.strip_prefix(prefix))?;
    let host_end = rest.find(['/', ':'])?;
    let host = &rest[..host_end];
    let separator = rest.as_bytes()[host_end];
    let path = &rest[host_end + 1..];
    if !is_host(host) {
        return None;
    }
    let path = path.strip_suffix('/').unwrap_or(path);
    let (owner, repo) = path.split_once('/')?;
    if !is_segment(owner) || !is_segment(repo) {
        return None;
    }
    if !host.contains('.') || host.contains("..") {
        return None;
    }
    let wanted = if url.starts_with("git@") { b':' } else { b'/' };
    if separator != wanted {
        return None;
    }
    let repo = repo.strip_suffix(".git").unwrap_or(repo);
    if matches!(owner, "." | "..") || matches!(repo, "" | "." | "..") {
        return None;
    }
    let host = host.to_ascii_lowercase();
    let id = format!("{host}/{owner}/{repo}");
    Some(if host == "github.com" {
        id.to_ascii_lowercase()
    } else {
        id
    })
}

/// `[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?`
fn is_host(host: &str) -> bool {
    let bytes = host.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-'))
        }
        _ => false,
    }
}

/// `[A-Za-z0-9._-]+`
fn is_segment(segment: &str) -> bool {
    !segment.is_empty()
        && segment
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slug_is_everything_after_the_host() {
        assert_eq!(remote_slug("github.com/o/r"), "o/r");
        assert_eq!(remote_slug("unknown"), "");
    }
}
