//! The identity record of a folder.

/// The project identity of a folder (scope-log.md §3.3).
///
/// Field order is the reference's attribute order: `project`, `repo`, `worktree`, `cwd`,
/// `remote`, `project_id`; [`ProjectIdentity::attributes`] yields them in that order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ProjectIdentity {
    /// Name of the main checkout folder (the parent of the git common dir), a scratchpad
    /// name, or the folder's basename for a registered id.
    pub project: String,
    /// Same as `project` in every identity the resolver makes.
    pub repo: String,
    /// Basename of the linked worktree (or submodule checkout) the folder is in, else `""`.
    pub worktree: String,
    /// The resolved folder path (for a swarm identity: the working folder as given).
    pub cwd: String,
    /// `owner/repo` part of `project_id`, or `""` when it is unknown.
    pub remote: String,
    /// [`canonical_remote`](crate::canonical_remote) of `origin`, a registered `local:…`
    /// id, or `"unknown"`; after alias rewriting.
    pub project_id: String,
}

impl ProjectIdentity {
    /// The attribute names, in order.
    pub const ATTRIBUTE_NAMES: [&'static str; 6] =
        ["project", "repo", "worktree", "cwd", "remote", "project_id"];

    /// An identity with only `project` and `repo` set: `worktree`, `cwd` and `remote` are
    /// `""` and `project_id` is `"unknown"` (the reference's defaults).
    pub fn new(project: impl Into<String>, repo: impl Into<String>) -> Self {
        ProjectIdentity {
            project: project.into(),
            repo: repo.into(),
            worktree: String::new(),
            cwd: String::new(),
            remote: String::new(),
            project_id: crate::UNKNOWN_PROJECT_ID.to_owned(),
        }
    }

    /// The six `(name, value)` pairs in attribute order: project, repo, worktree, cwd,
    /// remote, project_id.
    pub fn attributes(&self) -> [(&'static str, &str); 6] {
        [
            ("project", &self.project),
            ("repo", &self.repo),
            ("worktree", &self.worktree),
            ("cwd", &self.cwd),
            ("remote", &self.remote),
            ("project_id", &self.project_id),
        ]
    }

    /// `true` when `project_id` is `"unknown"` (the reference's
    /// `project_identity_ambiguities_total` is this as 0/1).
    pub fn is_ambiguous(&self) -> bool {
        self.project_id == crate::UNKNOWN_PROJECT_ID
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_follow_the_reference_order() {
        let mut id = ProjectIdentity::new("p", "r");
        id.cwd = "/c".into();
        let names: Vec<_> = id.attributes().iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ProjectIdentity::ATTRIBUTE_NAMES);
        assert_eq!(id.attributes()[3], ("cwd", "/c"));
        assert_eq!(id.attributes()[5], ("project_id", "unknown"));
        assert!(id.is_ambiguous());
    }
}
