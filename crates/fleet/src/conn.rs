//! Connecting: a libpq URL or key=value string, the password from it, `PGPASSWORD`
//! or `~/.pgpass`, TLS through rustls when the connection asks for it.

use std::cell::RefCell;
use std::path::PathBuf;
use std::time::Duration;

use postgres::config::{Host, SslMode};
use postgres::{Client, Config};

/// The environment variable that names the fleet when no `--to`/`--fleet` is given.
pub const URL_ENV: &str = "TRANSCOPE_FLEET_URL";

/// Why the fleet could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FleetError {
    /// The URL is not a PostgreSQL connection string.
    #[error("the fleet URL {url} is not a PostgreSQL connection string: {reason}")]
    Url {
        /// The URL, its password hidden.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// The server could not be reached, or refused us.
    #[error("the fleet {url} could not be reached: {}", chain(cause))]
    Connect {
        /// The URL, its password hidden.
        url: String,
        /// The cause (said whole in the message, not as a source).
        cause: postgres::Error,
    },
    /// The fleet's schema is newer than this build knows.
    #[error("the fleet {url} has schema version {found}, newer than this transcope's {known}: upgrade transcope on this machine")]
    Newer {
        /// The URL, its password hidden.
        url: String,
        /// The version found.
        found: i32,
        /// The newest version this build knows.
        known: i32,
    },
    /// The fleet holds tables of another program where ours go.
    #[error("the fleet {url} is not a transcope fleet: {what}")]
    Foreign {
        /// The URL, its password hidden.
        url: String,
        /// What was found.
        what: String,
    },
    /// A statement failed.
    #[error("the fleet {url}: {}", chain(cause))]
    Query {
        /// The URL, its password hidden.
        url: String,
        /// The cause (said whole in the message, not as a source).
        cause: postgres::Error,
    },
    /// Writing a bulk copy failed.
    #[error("the fleet {url}: {source}")]
    Copy {
        /// The URL, its password hidden.
        url: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The local index could not be read.
    #[error(transparent)]
    Local(#[from] transcope_index::IndexError),
}

/// An error with its causes, as one line (the client's own message is terse: "error
/// connecting to server"; the cause says why).
fn chain(e: &postgres::Error) -> String {
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let more = c.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = c.source();
    }
    text
}

impl FleetError {
    /// Whether trying again may succeed (a deadlock or serialization failure between
    /// concurrent pushes).
    pub fn is_transient(&self) -> bool {
        let code = match self {
            FleetError::Query { cause, .. } | FleetError::Connect { cause, .. } => cause.code(),
            _ => None,
        };
        code.is_some_and(|c| {
            *c == postgres::error::SqlState::T_R_DEADLOCK_DETECTED
                || *c == postgres::error::SqlState::T_R_SERIALIZATION_FAILURE
                || *c == postgres::error::SqlState::UNIQUE_VIOLATION
        })
    }
}

/// `url` with its password, if any, replaced by `***` (URL or key=value form).
pub fn redact(url: &str) -> String {
    if let Some(rest) = url
        .strip_prefix("postgresql://")
        .map(|r| ("postgresql://", r))
        .or_else(|| url.strip_prefix("postgres://").map(|r| ("postgres://", r)))
    {
        let (scheme, rest) = rest;
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (auth_host, tail) = rest.split_at(end);
        if let Some(at) = auth_host.rfind('@') {
            let (auth, host) = auth_host.split_at(at);
            if let Some(colon) = auth.find(':') {
                let tail = redact_query(tail);
                return format!("{scheme}{}:***{host}{tail}", &auth[..colon]);
            }
        }
        return format!("{scheme}{auth_host}{}", redact_query(tail));
    }
    // key=value: hide password=… (quoted or not).
    let mut out = String::new();
    let mut rest = url;
    while let Some(i) = rest.find("password") {
        let after = &rest[i + "password".len()..];
        let trimmed = after.trim_start();
        if let Some(v) = trimmed.strip_prefix('=') {
            out.push_str(&rest[..i]);
            out.push_str("password=***");
            let v = v.trim_start();
            let end = if let Some(q) = v.strip_prefix('\'') {
                let mut n = 1;
                let mut chars = q.char_indices();
                while let Some((j, c)) = chars.next() {
                    if c == '\\' {
                        chars.next();
                    } else if c == '\'' {
                        n = j + 2;
                        break;
                    }
                    n = j + 2;
                }
                n
            } else {
                v.find(char::is_whitespace).unwrap_or(v.len())
            };
            rest = &v[end.min(v.len())..];
        } else {
            out.push_str(&rest[..i + "password".len()]);
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

fn redact_query(tail: &str) -> String {
    match tail.find('?') {
        Some(q) => {
            let (path, query) = tail.split_at(q + 1);
            let parts: Vec<String> = query
                .split('&')
                .map(|p| match p.split_once('=') {
                    Some((k, _)) if k == "password" => format!("{k}=***"),
                    _ => p.to_owned(),
                })
                .collect();
            format!("{path}{}", parts.join("&"))
        }
        None => tail.to_owned(),
    }
}

/// A connection to the fleet.
pub struct Fleet {
    pub(crate) client: RefCell<Client>,
    pub(crate) url: String,
}

impl Fleet {
    /// Connect to `url` (a libpq URL or key=value string), waiting at most `timeout`
    /// for the connection when given, and bring the schema up to date.
    pub fn connect(url: &str, timeout: Option<Duration>) -> Result<Fleet, FleetError> {
        let shown = redact(url);
        // libpq's verify-ca and verify-full, which the client's parser does not know:
        // TLS required, and the server's certificate checked against the roots.
        let (url, verify) = match ["verify-full", "verify-ca"]
            .iter()
            .find(|m| url.contains(&format!("sslmode={m}")))
        {
            Some(m) => (
                url.replace(&format!("sslmode={m}"), "sslmode=require"),
                true,
            ),
            None => (url.to_owned(), false),
        };
        let mut config: Config = url.parse().map_err(|e: postgres::Error| FleetError::Url {
            url: shown.clone(),
            reason: e.to_string(),
        })?;
        if config.get_user().is_none() {
            if let Ok(user) = std::env::var("PGUSER").or_else(|_| std::env::var("USER")) {
                config.user(&user);
            }
        }
        if config.get_hosts().is_empty() {
            config.host(&std::env::var("PGHOST").unwrap_or_else(|_| "localhost".into()));
        }
        if config.get_dbname().is_none() {
            if let Ok(db) = std::env::var("PGDATABASE") {
                config.dbname(&db);
            }
        }
        if config.get_password().is_none() {
            if let Some(p) = password_for(&config) {
                config.password(p);
            }
        }
        if let Some(t) = timeout {
            config.connect_timeout(t);
        }
        config.application_name("transcope");
        let local = config
            .get_hosts()
            .iter()
            .all(|h| matches!(h, Host::Unix(_)));
        let connected = if config.get_ssl_mode() == SslMode::Disable || local {
            // A Unix socket has no TLS (libpq's rule too).
            config.connect(postgres::NoTls)
        } else {
            config.connect(tls(verify))
        };
        let mut client = connected.map_err(|cause| FleetError::Connect {
            url: shown.clone(),
            cause,
        })?;
        if let Some(t) = timeout {
            // Every statement of a bounded run ends by then, too.
            let ms = t.as_millis().max(1);
            client
                .batch_execute(&format!(
                    "SET statement_timeout = {ms}; SET lock_timeout = {ms}"
                ))
                .map_err(|cause| FleetError::Query {
                    url: shown.clone(),
                    cause,
                })?;
        }
        // A query sums many rows: in memory, and not compiled (JIT costs more than
        // it saves on these).
        client
            .batch_execute("SET work_mem = '64MB'; SET jit = off")
            .map_err(|cause| FleetError::Query {
                url: shown.clone(),
                cause,
            })?;
        let fleet = Fleet {
            client: RefCell::new(client),
            url: shown,
        };
        crate::schema::migrate(&fleet)?;
        Ok(fleet)
    }

    /// The URL connected to, its password hidden.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub(crate) fn query_error(&self, cause: postgres::Error) -> FleetError {
        FleetError::Query {
            url: self.url.clone(),
            cause,
        }
    }
}

/// The rustls connector. As libpq: `sslmode=prefer` and `require` encrypt without
/// checking who the server is (`verify` false); `verify-ca` and `verify-full` check
/// its certificate against Mozilla's roots, compiled in (no system store needed).
fn tls(verify: bool) -> tokio_postgres_rustls::MakeRustlsConnect {
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions");
    let config = if verify {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        builder.with_root_certificates(roots).with_no_client_auth()
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(std::sync::Arc::new(Unchecked(provider)))
            .with_no_client_auth()
    };
    tokio_postgres_rustls::MakeRustlsConnect::new(config)
}

/// libpq's `prefer`/`require`: any certificate is taken (the connection is encrypted,
/// the server not authenticated); the handshake's signatures are still checked.
#[derive(Debug)]
struct Unchecked(std::sync::Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &rustls::pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The password libpq would use when the URL gives none: `PGPASSWORD`, else the first
/// matching line of `PGPASSFILE` or `~/.pgpass` (`host:port:database:user:password`,
/// `*` matching anything, `\:` and `\\` escaped).
fn password_for(config: &Config) -> Option<String> {
    if let Ok(p) = std::env::var("PGPASSWORD") {
        return Some(p);
    }
    let file = std::env::var_os("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pgpass")))?;
    let text = std::fs::read_to_string(file).ok()?;
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        Some(Host::Unix(p)) => p.to_string_lossy().into_owned(),
        None => "localhost".into(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let db = config
        .get_dbname()
        .or(config.get_user())
        .unwrap_or("")
        .to_owned();
    let user = config.get_user().unwrap_or("").to_owned();
    pgpass_lookup(&text, [&host, &port, &db, &user])
}

/// The password of the first line of a `.pgpass` text matching `want` (host, port,
/// database, user).
pub(crate) fn pgpass_lookup(text: &str, want: [&str; 4]) -> Option<String> {
    for line in text.lines() {
        if line.trim_start().starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut fields: Vec<String> = vec![String::new()];
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => {
                    if let Some(n) = chars.next() {
                        fields.last_mut().expect("one field").push(n);
                    }
                }
                ':' if fields.len() < 5 => fields.push(String::new()),
                c => fields.last_mut().expect("one field").push(c),
            }
        }
        if fields.len() != 5 {
            continue;
        }
        let ok = fields[..4]
            .iter()
            .zip(want)
            .all(|(f, w)| f == "*" || f == w || (f == "localhost" && w.starts_with('/')));
        if ok {
            return fields.pop();
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_never_shown() {
        assert_eq!(
            redact("postgresql://alice:s3cret@db.example:5432/fleet?sslmode=require"),
            "postgresql://alice:***@db.example:5432/fleet?sslmode=require"
        );
        assert_eq!(
            redact("postgres://alice@db/fleet?password=s3cret&sslmode=require"),
            "postgres://alice@db/fleet?password=***&sslmode=require"
        );
        assert_eq!(
            redact("host=db user=alice password=s3cret dbname=fleet"),
            "host=db user=alice password=*** dbname=fleet"
        );
        assert_eq!(
            redact("host=db password = 'a b\\' c' dbname=fleet"),
            "host=db password=*** dbname=fleet"
        );
        assert_eq!(
            redact("host=/tmp/sock user=postgres"),
            "host=/tmp/sock user=postgres"
        );
    }

    #[test]
    fn pgpass_lines_match_with_wildcards_and_escapes() {
        let text = "# comment\ndb:5432:fleet:bob:nope\n*:*:fleet:alice:pa\\:ss\n";
        assert_eq!(
            pgpass_lookup(text, ["db", "5432", "fleet", "alice"]).as_deref(),
            Some("pa:ss")
        );
        assert_eq!(pgpass_lookup(text, ["db", "5432", "other", "alice"]), None);
    }
}
