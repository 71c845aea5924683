//! OTLP/HTTP with protobuf: one POST per batch to `<endpoint>/v1/metrics` or
//! `/v1/logs`, retried as the OTLP specification says — 429, 502, 503 and 504 are
//! retryable, after the server's `Retry-After` when it gives one, else after an
//! exponential back-off; any other failure is final — and an answer read whole
//! before the batch counts as acknowledged.

use std::time::Duration;

use prost::Message;

/// Where to send and with what headers.
#[derive(Clone, Debug)]
pub struct Endpoint {
    /// The base URL (`http://collector:4318`); the signal's path is appended.
    pub base: String,
    /// Extra headers (authentication, a tenant).
    pub headers: Vec<(String, String)>,
    /// How many times a retryable answer is retried before the run gives up.
    pub retries: u32,
    /// The first back-off (doubled each retry, at most 30 s).
    pub backoff: Duration,
    /// One POST's time limit.
    pub timeout: Duration,
}

impl Endpoint {
    /// `base` with the defaults: 6 retries from 1 s, 30 s a POST.
    pub fn new(base: &str) -> Endpoint {
        Endpoint {
            base: base.trim_end_matches('/').to_owned(),
            headers: Vec::new(),
            retries: 6,
            backoff: Duration::from_secs(1),
            timeout: Duration::from_secs(30),
        }
    }

    /// The URL of a signal (`metrics`, `logs`).
    pub fn url(&self, signal: &str) -> String {
        format!("{}/v1/{signal}", self.base)
    }
}

/// Why a batch was not acknowledged.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The receiver refused it for good (a status OTLP says not to retry).
    #[error("{url} answered {status}: {body}")]
    Refused {
        /// The URL.
        url: String,
        /// The status.
        status: u16,
        /// The start of the answer's body.
        body: String,
    },
    /// Too large for the receiver (413): the caller may split it.
    #[error("{url} answered 413: the batch is too large")]
    TooLarge {
        /// The URL.
        url: String,
    },
    /// Still retryable after every retry.
    #[error("{url} still answered {last} after {tries} tries")]
    GaveUp {
        /// The URL.
        url: String,
        /// The last status, or the transport error.
        last: String,
        /// How many POSTs were made.
        tries: u32,
    },
}

/// What a receiver acknowledged of one batch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ack {
    /// Points or records the receiver said it rejected (OTLP's partial success): they
    /// are not sent again, only counted.
    pub rejected: i64,
    /// Retries it took.
    pub retries: u32,
}

/// A client for one endpoint.
pub struct Sender {
    endpoint: Endpoint,
    agent: ureq::Agent,
}

/// The most of an answer read.
const MAX_ANSWER: u64 = 4 * 1024 * 1024;

impl Sender {
    /// A client for `endpoint`.
    pub fn new(endpoint: Endpoint) -> Sender {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(endpoint.timeout))
            .http_status_as_error(false)
            .build()
            .into();
        Sender { endpoint, agent }
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// POST `message` to `signal`'s URL until it is acknowledged or refused for good;
    /// `rejected` reads the partial-success count from an answer's body.
    pub fn send<M: Message>(
        &self,
        signal: &str,
        message: &M,
        rejected: impl Fn(&[u8]) -> i64,
    ) -> Result<Ack, SendError> {
        let url = self.endpoint.url(signal);
        let body = message.encode_to_vec();
        let mut wait = self.endpoint.backoff;
        let mut tries = 0;
        loop {
            tries += 1;
            let mut req = self
                .agent
                .post(&url)
                .header("Content-Type", "application/x-protobuf");
            for (k, v) in &self.endpoint.headers {
                req = req.header(k.as_str(), v.as_str());
            }
            let (last, after) = match req.send(&body[..]) {
                Ok(mut resp) => {
                    let status = resp.status().as_u16();
                    let retry_after = resp
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .map(Duration::from_secs);
                    let answer = resp
                        .body_mut()
                        .with_config()
                        .limit(MAX_ANSWER)
                        .read_to_vec();
                    match (status, answer) {
                        (200..=299, Ok(a)) => {
                            return Ok(Ack {
                                rejected: rejected(&a),
                                retries: tries - 1,
                            })
                        }
                        (200..=299, Err(e)) => (format!("an answer cut short ({e})"), None),
                        (413, _) => return Err(SendError::TooLarge { url }),
                        (429 | 502 | 503 | 504, _) => (status.to_string(), retry_after),
                        (_, a) => {
                            let text = a
                                .map(|a| {
                                    String::from_utf8_lossy(&a[..a.len().min(300)]).into_owned()
                                })
                                .unwrap_or_default();
                            return Err(SendError::Refused {
                                url,
                                status,
                                body: text,
                            });
                        }
                    }
                }
                // Not answered (refused connection, timeout): retryable, as a 503.
                Err(e) => (e.to_string(), None),
            };
            if tries > self.endpoint.retries {
                return Err(SendError::GaveUp { url, last, tries });
            }
            std::thread::sleep(after.unwrap_or(wait));
            wait = (wait * 2).min(Duration::from_secs(30));
        }
    }
}
