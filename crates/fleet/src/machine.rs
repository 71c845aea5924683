//! Which machine is pushing: a stable id kept under the home (made once, random),
//! and a name a person reads (`--machine`, `TRANSCOPE_MACHINE`, else the host name).

use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The environment variable that names this machine in the fleet.
pub const MACHINE_ENV: &str = "TRANSCOPE_MACHINE";

/// This machine, as the fleet knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Machine {
    /// The stable id (a 32-digit hex number made once per home).
    pub id: String,
    /// The name shown (and what `usage --by machine` groups by).
    pub name: String,
}

impl Machine {
    /// The machine of `home`: its id file `<home>/transcope/machine-id` (made when
    /// missing), named `name`, else `TRANSCOPE_MACHINE`, else the host name.
    pub fn of_home(home: &Path, name: Option<&str>) -> std::io::Result<Machine> {
        Ok(Machine {
            id: machine_id(home)?,
            name: Machine::name_here(name),
        })
    }

    /// The name this machine goes by: `name`, else `TRANSCOPE_MACHINE`, else the host
    /// name.
    pub fn name_here(name: Option<&str>) -> String {
        name.map(str::to_owned)
            .or_else(|| std::env::var(MACHINE_ENV).ok().filter(|n| !n.is_empty()))
            .unwrap_or_else(host_name)
    }
}

/// The file that keeps a home's machine id.
pub fn id_file(home: &Path) -> PathBuf {
    home.join("transcope").join("machine-id")
}

fn machine_id(home: &Path) -> std::io::Result<String> {
    let path = id_file(home);
    if let Ok(text) = std::fs::read_to_string(&path) {
        let id = text.trim();
        if id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(id.to_owned());
        }
    }
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))?;
    let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    // Made whole under another name, then put in place without replacing one a
    // concurrent first push made meanwhile (that one wins; read it back).
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    {
        let mut f = std::fs::File::create(&tmp)?;
        writeln!(f, "{id}")?;
        f.sync_all()?;
    }
    let linked = std::fs::hard_link(&tmp, &path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(id),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            Ok(std::fs::read_to_string(&path)?.trim().to_owned())
        }
        Err(e) => Err(e),
    }
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_home_keeps_one_id_and_the_name_is_chosen() {
        let home = tempfile::tempdir().unwrap();
        let a = Machine::of_home(home.path(), Some("laptop")).unwrap();
        let b = Machine::of_home(home.path(), Some("other")).unwrap();
        assert_eq!(a.id, b.id);
        assert_eq!(a.id.len(), 32);
        assert_eq!((a.name.as_str(), b.name.as_str()), ("laptop", "other"));
        let elsewhere = tempfile::tempdir().unwrap();
        assert_ne!(Machine::of_home(elsewhere.path(), None).unwrap().id, a.id);
    }
}
