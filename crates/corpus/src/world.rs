//! The folders the transcripts were "recorded" in: git repositories (main checkouts, sibling
//! worktrees, Claude agent worktrees) and plain folders, plus the moves between them.

use std::fs;
use std::io;
use std::path::Path;

use crate::git;
use crate::rng::{derive, Rng};
use crate::{RepoEntry, RepoKind};

const NAMES: &[&str] = &[
    "atlas",
    "borealis",
    "cinder",
    "docs.site",
    "ember",
    "fjord",
    "glacier",
    "harbor",
    "iris",
    "juniper",
    "kestrel",
    "lumen",
    "mosaic",
    "nimbus",
    "orbit",
    "pylon",
    "quartz",
    "relay",
    "sable",
    "tundra",
    "umbra",
    "vortex",
    "willow",
    "xenon",
    "yarrow",
    "zephyr",
];
const SUBDIRS: &[&str] = &[
    "src",
    "crates/core",
    "web",
    "docs",
    "scripts",
    "tests/fixtures",
];
const PLAIN: &[&str] = &["scratch", "notes", "downloads", "playground"];

/// A linked worktree.
#[derive(Clone, Debug)]
pub(crate) struct Worktree {
    pub(crate) path: String,
    /// Branch name, or `"HEAD"` when detached (what Claude writes as `gitBranch`).
    pub(crate) branch: String,
}

/// One generated repository.
#[derive(Clone, Debug)]
pub(crate) struct Repo {
    pub(crate) root: String,
    pub(crate) origin: String,
    pub(crate) commit: String,
    pub(crate) main_branch: String,
    /// Branches a session may switch to inside the main checkout.
    pub(crate) branches: Vec<String>,
    /// Absolute subfolders that exist on disk.
    pub(crate) subdirs: Vec<String>,
    pub(crate) worktrees: Vec<Worktree>,
    pub(crate) agent_worktrees: Vec<Worktree>,
}

/// Where a line was recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Place {
    pub(crate) cwd: String,
    /// `""` outside a repository, `"HEAD"` when detached.
    pub(crate) branch: String,
    pub(crate) repo: Option<usize>,
}

/// All repositories and plain folders of a corpus.
#[derive(Debug)]
pub(crate) struct World {
    pub(crate) repos: Vec<Repo>,
    pub(crate) plain: Vec<String>,
    pub(crate) entries: Vec<RepoEntry>,
}

fn slug(branch: &str) -> String {
    branch.replace('/', "-")
}

impl World {
    /// Plans `n` repositories under `root` (an absolute path) and, when `create`, writes them.
    pub(crate) fn build(root: &Path, seed: u64, n: usize, create: bool) -> io::Result<World> {
        let mut rng = Rng::new(derive(seed, 0x3e90, 0));
        let root_s = root.to_string_lossy().trim_end_matches('/').to_string();
        let mut repos = Vec::new();
        let mut entries = Vec::new();
        for i in 0..n.max(1) {
            let name = if i < NAMES.len() {
                NAMES[i].to_string()
            } else {
                format!("{}-{}", NAMES[i % NAMES.len()], i / NAMES.len() + 1)
            };
            let repo_root = format!("{root_s}/{name}");
            let origin = if rng.chance(0.85) {
                format!("https://github.com/gen/{name}.git")
            } else {
                format!("git@github.com:gen/{name}.git")
            };
            let main_branch = if rng.chance(0.8) { "main" } else { "master" }.to_string();
            let mut branches = Vec::new();
            for _ in 0..rng.range(1, 3) {
                let b = match rng.index(4) {
                    0 => format!("feature/{}", crate::text::word(&mut rng)),
                    1 => format!("fix/{}-{}", crate::text::ident(&mut rng), rng.range(1, 999)),
                    2 => "dev".to_string(),
                    _ => format!("release/1.{}", rng.below(20)),
                };
                if !branches.contains(&b) && b != main_branch {
                    branches.push(b);
                }
            }
            let mut subdirs = Vec::new();
            for _ in 0..rng.range(1, 3) {
                let s = format!("{repo_root}/{}", rng.pick(SUBDIRS));
                if !subdirs.contains(&s) {
                    subdirs.push(s);
                }
            }
            // Sibling worktrees take their own branches so no branch is checked out twice.
            let mut worktrees = Vec::new();
            if rng.chance(0.4) {
                for k in 0..rng.range(1, 2) {
                    let detached = rng.chance(0.15);
                    let b = format!("wt/{}-{}", crate::text::word(&mut rng), k);
                    worktrees.push(Worktree {
                        path: format!("{root_s}/{name}--{}", slug(&b)),
                        branch: if detached { "HEAD".into() } else { b },
                    });
                }
            }
            let mut agent_worktrees = Vec::new();
            if rng.chance(0.35) {
                for _ in 0..rng.range(1, 3) {
                    let id = rng.hex(8);
                    agent_worktrees.push(Worktree {
                        path: format!("{repo_root}/.claude/worktrees/agent-{id}"),
                        branch: format!("worktree-agent-{}", rng.hex(8)),
                    });
                }
            }
            // The generator's former name: kept, so a seed gives the same commits as ever.
            let readme = format!("# {name}\n\nGenerated by transcope-testkit.\n");
            let commit_time = 1_735_689_600 + rng.below(150 * 86_400);
            let commit = if create {
                let mut refs = branches.clone();
                refs.extend(
                    worktrees
                        .iter()
                        .chain(&agent_worktrees)
                        .filter(|w| w.branch != "HEAD")
                        .map(|w| w.branch.clone()),
                );
                let id = git::create_repo(&git::RepoSpec {
                    root: Path::new(&repo_root),
                    origin: &origin,
                    head_branch: &main_branch,
                    branches: &refs,
                    readme: &readme,
                    commit_time,
                })?;
                for s in &subdirs {
                    fs::create_dir_all(s)?;
                }
                for w in worktrees.iter().chain(&agent_worktrees) {
                    let wt_name = Path::new(&w.path)
                        .file_name()
                        .map(|s| s.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    let branch = (w.branch != "HEAD").then_some(w.branch.as_str());
                    git::add_worktree(
                        Path::new(&repo_root),
                        Path::new(&w.path),
                        &wt_name,
                        branch,
                        &id,
                        &readme,
                    )?;
                }
                id
            } else {
                rng.hex(40)
            };
            entries.push(RepoEntry {
                path: repo_root.clone(),
                kind: RepoKind::Main,
                origin: Some(origin.clone()),
                branch: Some(main_branch.clone()),
                toplevel: Some(repo_root.clone()),
                common_dir: Some(format!("{repo_root}/.git")),
                main_checkout: Some(repo_root.clone()),
                root_commit: Some(commit.clone()),
            });
            for w in worktrees.iter().chain(&agent_worktrees) {
                entries.push(RepoEntry {
                    path: w.path.clone(),
                    kind: RepoKind::Worktree,
                    origin: Some(origin.clone()),
                    branch: (w.branch != "HEAD").then(|| w.branch.clone()),
                    toplevel: Some(w.path.clone()),
                    common_dir: Some(format!("{repo_root}/.git")),
                    main_checkout: Some(repo_root.clone()),
                    root_commit: Some(commit.clone()),
                });
            }
            repos.push(Repo {
                root: repo_root,
                origin,
                commit,
                main_branch,
                branches,
                subdirs,
                worktrees,
                agent_worktrees,
            });
        }
        let mut plain = Vec::new();
        for i in 0..(n / 4 + 1) {
            let base = PLAIN[i % PLAIN.len()];
            let name = if i < PLAIN.len() {
                base.to_string()
            } else {
                format!("{base}-{}", i / PLAIN.len() + 1)
            };
            let dir = format!("{root_s}/{name}");
            if create {
                fs::create_dir_all(format!("{dir}/tmp"))?;
            }
            entries.push(RepoEntry {
                path: dir.clone(),
                kind: RepoKind::Plain,
                origin: None,
                branch: None,
                toplevel: None,
                common_dir: None,
                main_checkout: None,
                root_commit: None,
            });
            plain.push(dir);
        }
        Ok(World {
            repos,
            plain,
            entries,
        })
    }

    fn repo_root(&self, i: usize) -> Place {
        let r = &self.repos[i];
        Place {
            cwd: r.root.clone(),
            branch: r.main_branch.clone(),
            repo: Some(i),
        }
    }

    fn plain_place(&self, rng: &mut Rng) -> Place {
        let d = rng.pick(&self.plain).clone();
        let cwd = if rng.chance(0.3) {
            format!("{d}/tmp")
        } else {
            d
        };
        Place {
            cwd,
            branch: String::new(),
            repo: None,
        }
    }

    /// A starting place for a new session.
    pub(crate) fn start(&self, rng: &mut Rng) -> Place {
        let i = rng.index(self.repos.len());
        let r = &self.repos[i];
        match rng.weighted(&[55, 10, 10, 10, 3, 12]) {
            0 => self.repo_root(i),
            1 => Place {
                cwd: rng.pick(&r.subdirs).clone(),
                branch: r.main_branch.clone(),
                repo: Some(i),
            },
            2 if !r.branches.is_empty() => Place {
                cwd: r.root.clone(),
                branch: rng.pick(&r.branches).clone(),
                repo: Some(i),
            },
            3 if !r.worktrees.is_empty() => {
                let w = rng.pick(&r.worktrees);
                Place {
                    cwd: w.path.clone(),
                    branch: w.branch.clone(),
                    repo: Some(i),
                }
            }
            4 if !r.agent_worktrees.is_empty() => {
                let w = rng.pick(&r.agent_worktrees);
                Place {
                    cwd: w.path.clone(),
                    branch: w.branch.clone(),
                    repo: Some(i),
                }
            }
            5 => self.plain_place(rng),
            _ => self.repo_root(i),
        }
    }

    /// A different place reached by `cd`, `git checkout` or opening another project.
    pub(crate) fn switch(&self, rng: &mut Rng, from: &Place) -> Place {
        for _ in 0..8 {
            let next = self.switch_once(rng, from);
            if next != *from {
                return next;
            }
        }
        // Always reachable: a plain folder differs from any repo place and vice versa.
        match from.repo {
            Some(_) => self.plain_place(rng),
            None => self.repo_root(rng.index(self.repos.len())),
        }
    }

    fn switch_once(&self, rng: &mut Rng, from: &Place) -> Place {
        let Some(i) = from.repo else {
            return match rng.index(3) {
                0 => self.plain_place(rng),
                _ => self.repo_root(rng.index(self.repos.len())),
            };
        };
        let r = &self.repos[i];
        match rng.weighted(&[25, 15, 20, 15, 20, 5]) {
            // cd into a subfolder (same branch).
            0 => Place {
                cwd: rng.pick(&r.subdirs).clone(),
                branch: from.branch.clone(),
                repo: Some(i),
            },
            // git checkout another branch in the main checkout.
            1 if !r.branches.is_empty() => Place {
                cwd: r.root.clone(),
                branch: if from.branch == r.main_branch {
                    rng.pick(&r.branches).clone()
                } else {
                    r.main_branch.clone()
                },
                repo: Some(i),
            },
            // Into a worktree of the same repository.
            2 if !r.worktrees.is_empty() || !r.agent_worktrees.is_empty() => {
                let all: Vec<&Worktree> = r.worktrees.iter().chain(&r.agent_worktrees).collect();
                let w = all[rng.index(all.len())];
                Place {
                    cwd: w.path.clone(),
                    branch: w.branch.clone(),
                    repo: Some(i),
                }
            }
            // Back to the main checkout root.
            3 => self.repo_root(i),
            // Another repository.
            4 => self.repo_root(rng.index(self.repos.len())),
            _ => self.plain_place(rng),
        }
    }

    /// An agent worktree of the place's repository, if it has one.
    pub(crate) fn agent_worktree(&self, rng: &mut Rng, at: &Place) -> Option<Place> {
        let i = at.repo?;
        let r = &self.repos[i];
        if r.agent_worktrees.is_empty() {
            return None;
        }
        let w = rng.pick(&r.agent_worktrees);
        Some(Place {
            cwd: w.path.clone(),
            branch: w.branch.clone(),
            repo: Some(i),
        })
    }
}

/// Claude's project-folder name for a cwd: `/` and `.` become `-`.
pub fn encode_cwd(cwd: &str) -> String {
    cwd.chars()
        .map(|c| if c == '/' || c == '.' { '-' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_like_claude() {
        assert_eq!(
            encode_cwd("/Users/dain/workspace/danieldemmel.me-next"),
            "-Users-dain-workspace-danieldemmel-me-next"
        );
    }

    #[test]
    fn switches_always_move() {
        let w = World::build(Path::new("/virtual/repos"), 5, 6, false).unwrap();
        let mut rng = Rng::new(1);
        let mut p = w.start(&mut rng);
        for _ in 0..500 {
            let q = w.switch(&mut rng, &p);
            assert_ne!(p, q);
            p = q;
        }
    }
}
