//! The OpenCode sessions of a corpus ([`CorpusSpec::opencode_share`](crate::CorpusSpec)):
//! one database where OpenCode keeps it, `OUT/opencode/.local/share/opencode/opencode.db`
//! (`HOME=OUT/opencode`, or `OPENCODE_DB` naming the file), written in OpenCode's schema
//! by `transcope_adapter_opencode::write`, with the sessions' expectations beside it in
//! `OUT/opencode/sessions.json` ([`Expected`]).
//!
//! Each session starts where a corpus session starts (a repository's root, a
//! sub-folder, a linked worktree, a plain folder: [`World::start`]), asks 4–16 times,
//! and its replies may move once to another place ([`World::switch`]); a user message
//! is where the last reply worked. Every fifth session is a task's child of the one
//! before. Each reply counts five disjoint token counts. The same seed gives the same
//! rows.

use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};
use transcope_adapter_opencode::write::{self, Db, Tokens};

use crate::rng::{derive, Rng};
use crate::world::World;

/// Where the database's home sits in a corpus.
pub(crate) const HOME: &str = "opencode";

/// What a generated OpenCode session holds, for the tests that read it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expected {
    /// The session id (`ses_…`): its scope-log key.
    pub session: String,
    /// Its parent session, for a task's child.
    pub parent: Option<String>,
    /// The folders it works in, in order (its scope log's folders).
    pub cwds: Vec<String>,
    /// Its messages.
    pub messages: u64,
    /// The sum of its replies' five token counts.
    pub tokens: u64,
}

fn err(e: impl std::error::Error + Send + Sync + 'static) -> io::Error {
    io::Error::other(e)
}

/// Write `n` sessions into the corpus at `root`; their expectations.
pub(crate) fn write_sessions(
    root: &Path,
    world: &World,
    seed: u64,
    n: u64,
) -> io::Result<Vec<Expected>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    let home = root.join(HOME);
    let data = home.join(".local/share/opencode");
    std::fs::create_dir_all(&data)?;
    let db = Db::create(&data.join("opencode.db")).map_err(err)?;
    db.conn()
        .execute_batch("PRAGMA synchronous = OFF; BEGIN")
        .map_err(err)?;
    let mut projects: Vec<String> = Vec::new();
    let mut project_of = |db: &Db, repo: Option<usize>| -> io::Result<String> {
        let (id, worktree) = match repo {
            Some(i) => (
                format!("p_{}", world.repos[i].commit),
                world.repos[i].root.clone(),
            ),
            None => ("global".to_owned(), "/".to_owned()),
        };
        if !projects.contains(&id) {
            db.project(&id, &worktree).map_err(err)?;
            projects.push(id.clone());
        }
        Ok(id)
    };
    // 2026-05-01T08:00:00Z, each session an hour after the one before.
    const T0: i64 = 1_777_622_400_000;
    let mut out: Vec<Expected> = Vec::new();
    for s in 0..n {
        let mut rng = Rng::new(derive(seed, 0x0c0de, s));
        let id = format!("ses_{:04}{}", s, rng.alnum(10));
        let parent = (s % 5 == 4).then(|| out[s as usize - 1].session.clone());
        let mut place = world.start(&mut rng);
        let project = project_of(&db, place.repo)?;
        let start = T0 + s as i64 * 3_600_000;
        db.session(&id, &project, parent.as_deref(), &place.cwd, start)
            .map_err(err)?;
        let exchanges = rng.range(4, 17) as i64;
        let moves_at = rng
            .chance(0.4)
            .then(|| rng.range(1, exchanges as u64) as i64);
        let mut e = Expected {
            session: id.clone(),
            parent,
            cwds: vec![place.cwd.clone()],
            messages: 0,
            tokens: 0,
        };
        for x in 0..exchanges {
            let at = start + x * 90_000;
            let user = format!("msg_{id}_{x:02}u");
            db.message(&user, &id, at, &write::user(at)).map_err(err)?;
            db.part(
                &format!("prt_{user}"),
                &user,
                &id,
                at,
                &write::text_part("Next step, please."),
            )
            .map_err(err)?;
            if moves_at == Some(x) {
                // A checkout in the same folder is no move here: OpenCode records
                // folders, and the branch is the repository's when it is read.
                place = world.switch(&mut rng, &place);
                if e.cwds.last() != Some(&place.cwd) {
                    e.cwds.push(place.cwd.clone());
                }
            }
            let t = Tokens {
                input: rng.range(50, 3_000),
                output: rng.range(20, 1_500),
                reasoning: rng.range(0, 400),
                cache_read: rng.range(0, 80_000),
                cache_write: rng.range(0, 6_000),
            };
            let reply = format!("msg_{id}_{x:02}a");
            let data = write::assistant(
                at + 2_000,
                Some(at + 30_000),
                &user,
                ("anthropic", "claude-sonnet-4-5"),
                &place.cwd,
                t,
            );
            db.message(&reply, &id, at + 2_000, &data).map_err(err)?;
            let output = "line of a file the tool read\n".repeat(rng.range(2, 200) as usize);
            db.part(
                &format!("prt_{reply}_t"),
                &reply,
                &id,
                at + 2_000,
                &write::tool_part("call_1", "read", &output),
            )
            .map_err(err)?;
            db.part(
                &format!("prt_{reply}_x"),
                &reply,
                &id,
                at + 2_000,
                &write::text_part("Done with this step."),
            )
            .map_err(err)?;
            e.messages += 2;
            e.tokens += t.total();
        }
        out.push(e);
    }
    db.conn().execute_batch("COMMIT").map_err(err)?;
    let text = serde_json::to_vec_pretty(&out).map_err(err)?;
    std::fs::write(home.join("sessions.json"), text)?;
    Ok(out)
}
