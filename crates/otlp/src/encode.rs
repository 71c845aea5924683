//! The index's rows as OTLP messages: requests as `gen_ai.client.token.usage` data
//! points (and their cost as `transcope.usage.cost`), scope transitions and markers
//! as log records, each with the scope in force when it happened.
//!
//! Names follow the OpenTelemetry semantic conventions
//! ([`SEMCONV_VERSION`](crate::SEMCONV_VERSION)) where they define one — the GenAI
//! conventions for the metric, the token type, the model, the provider and the
//! conversation (the session), the VCS conventions for the repository and the
//! branch — and `transcope.*` for the rest.

use std::collections::HashMap;

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs, SeverityNumber};
use opentelemetry_proto::tonic::metrics::v1::{
    metric, number_data_point, AggregationTemporality, Histogram, HistogramDataPoint, Metric,
    NumberDataPoint, ResourceMetrics, ScopeMetrics, Sum,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use transcope_index::{MarkerRow, RequestRow, TransitionRow};

/// The token-usage histogram's name (GenAI conventions).
pub const TOKEN_USAGE: &str = "gen_ai.client.token.usage";
/// The cost metric's name.
pub const COST: &str = "transcope.usage.cost";

/// The bucket boundaries the GenAI conventions give `gen_ai.client.token.usage`.
const TOKEN_BOUNDS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];

/// What the rows themselves do not say: where they come from and how to name and
/// price them.
pub struct Context<'a> {
    /// This machine's name (`host.name`, `transcope.machine`).
    pub machine: String,
    /// transcope's version (the instrumentation scope's).
    pub version: &'static str,
    /// Each session's agent.
    pub agents: HashMap<String, String>,
    /// Each agent's pricing provider (as its adapter declares it).
    pub providers: HashMap<String, &'static str>,
    /// Each project's remote.
    pub remotes: HashMap<String, String>,
    /// A request's cost in USD by its model and its six counts, when priced.
    pub price: &'a dyn Fn(&str, [i64; 6]) -> Option<f64>,
}

/// The GenAI conventions' `gen_ai.provider.name` for a price list's provider: the
/// conventions' well-known value where there is one, else the provider's own name.
fn provider_name(pricing: &str) -> &str {
    match pricing {
        "gemini" => "gcp.gemini",
        other => other,
    }
}

fn kv(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue { value: Some(value) }),
    }
}

fn text(key: &str, value: &str) -> KeyValue {
    kv(key, any_value::Value::StringValue(value.to_owned()))
}

/// `key` with `value` when it is not empty.
fn some_text(out: &mut Vec<KeyValue>, key: &str, value: &str) {
    if !value.is_empty() {
        out.push(text(key, value));
    }
}

fn nanos(us: Option<i64>) -> u64 {
    us.map_or(0, |us| u64::try_from(us).unwrap_or(0).saturating_mul(1000))
}

impl Context<'_> {
    fn resource(&self) -> Resource {
        Resource {
            attributes: vec![
                text("service.name", "transcope"),
                text("service.version", self.version),
                text("host.name", &self.machine),
                text("transcope.machine", &self.machine),
            ],
            ..Default::default()
        }
    }

    fn scope(&self) -> InstrumentationScope {
        InstrumentationScope {
            name: "transcope".into(),
            version: self.version.into(),
            ..Default::default()
        }
    }

    /// The attributes a session gives every row of it.
    fn session(&self, out: &mut Vec<KeyValue>, session: &str) {
        out.push(text("gen_ai.conversation.id", session));
        if let Some(agent) = self.agents.get(session) {
            out.push(text("transcope.agent", agent));
        }
    }

    fn project(&self, out: &mut Vec<KeyValue>, project_id: &str) {
        some_text(out, "transcope.project_id", project_id);
        if let Some(remote) = self.remotes.get(project_id) {
            some_text(out, "vcs.repository.url.full", remote);
        }
    }

    /// The metrics request for `rows`: per request, one histogram point per kind of
    /// token it counted (never zero), and its cost when the price list has its model.
    pub fn metrics<'r>(
        &self,
        rows: impl IntoIterator<Item = &'r RequestRow>,
    ) -> ExportMetricsServiceRequest {
        let mut tokens = Vec::new();
        let mut costs = Vec::new();
        for row in rows {
            let [session, root, project_id, worktree, branch, task, lane] = &row.scope;
            let mut attrs = Vec::with_capacity(12);
            self.session(&mut attrs, session);
            some_text(&mut attrs, "transcope.root_session", root);
            self.project(&mut attrs, project_id);
            some_text(&mut attrs, "transcope.worktree", worktree);
            some_text(&mut attrs, "vcs.ref.head.name", branch);
            some_text(&mut attrs, "transcope.task", task);
            some_text(&mut attrs, "transcope.lane", lane);
            let model = row.model.as_deref().unwrap_or("");
            some_text(&mut attrs, "gen_ai.request.model", model);
            if let Some(p) = self.agents.get(session).and_then(|a| self.providers.get(a)) {
                attrs.push(text("gen_ai.provider.name", provider_name(p)));
            }
            attrs.push(text("gen_ai.operation.name", "chat"));
            let time = nanos(row.at_us);
            let [input, output, cache_creation, _, cache_read, reasoning] = row.counts;
            // The conventions count cached tokens as input and reasoning as output;
            // `transcope.token.kind` splits them again, so every count is sent once.
            let kinds = [
                ("input", "input", input),
                ("input", "cache_creation", cache_creation),
                ("input", "cache_read", cache_read),
                ("output", "output", output - reasoning.min(output)),
                ("output", "reasoning", reasoning.min(output)),
            ];
            for (ty, kind, n) in kinds {
                if n <= 0 {
                    continue;
                }
                let mut a = attrs.clone();
                a.push(text("gen_ai.token.type", ty));
                a.push(text("transcope.token.kind", kind));
                let v = n as f64;
                let bucket = TOKEN_BOUNDS.iter().take_while(|b| v > **b).count();
                let mut bucket_counts = vec![0; TOKEN_BOUNDS.len() + 1];
                bucket_counts[bucket] = 1;
                tokens.push(HistogramDataPoint {
                    attributes: a,
                    start_time_unix_nano: time,
                    time_unix_nano: time,
                    count: 1,
                    sum: Some(v),
                    bucket_counts,
                    explicit_bounds: TOKEN_BOUNDS.to_vec(),
                    min: Some(v),
                    max: Some(v),
                    ..Default::default()
                });
            }
            if let Some(usd) = (self.price)(model, row.counts) {
                costs.push(NumberDataPoint {
                    attributes: attrs,
                    start_time_unix_nano: time,
                    time_unix_nano: time,
                    value: Some(number_data_point::Value::AsDouble(usd)),
                    ..Default::default()
                });
            }
        }
        let delta = AggregationTemporality::Delta as i32;
        let mut metrics = vec![Metric {
            name: TOKEN_USAGE.into(),
            description: "Tokens a model request used, at the scope in force when it was made"
                .into(),
            unit: "{token}".into(),
            data: Some(metric::Data::Histogram(Histogram {
                data_points: tokens,
                aggregation_temporality: delta,
            })),
            ..Default::default()
        }];
        if !costs.is_empty() {
            metrics.push(Metric {
                name: COST.into(),
                description: "What a model request cost, by the price list".into(),
                unit: "USD".into(),
                data: Some(metric::Data::Sum(Sum {
                    data_points: costs,
                    aggregation_temporality: delta,
                    is_monotonic: true,
                })),
                ..Default::default()
            });
        }
        ExportMetricsServiceRequest {
            resource_metrics: vec![ResourceMetrics {
                resource: Some(self.resource()),
                scope_metrics: vec![ScopeMetrics {
                    scope: Some(self.scope()),
                    metrics,
                    ..Default::default()
                }],
                ..Default::default()
            }],
        }
    }

    /// The logs request for `transitions` and `markers`, each at its recorded time.
    pub fn logs(
        &self,
        transitions: &[TransitionRow],
        markers: &[MarkerRow],
        observed_ns: u64,
    ) -> ExportLogsServiceRequest {
        let mut records = Vec::with_capacity(transitions.len() + markers.len());
        for t in transitions {
            let [project_id, project, repo, worktree, cwd, remote, branch, swarm, task, revision, lane] =
                &t.fields;
            let mut a = Vec::with_capacity(16);
            self.session(&mut a, &t.session);
            a.push(text("transcope.transition_id", &t.transition_id));
            a.push(kv("transcope.seq", any_value::Value::IntValue(t.seq)));
            some_text(&mut a, "transcope.project_id", project_id);
            some_text(&mut a, "transcope.project", project);
            some_text(&mut a, "transcope.repo", repo);
            some_text(&mut a, "transcope.worktree", worktree);
            some_text(&mut a, "transcope.cwd", cwd);
            some_text(&mut a, "vcs.repository.url.full", remote);
            some_text(&mut a, "vcs.ref.head.name", branch);
            some_text(&mut a, "transcope.swarm", swarm);
            some_text(&mut a, "transcope.task", task);
            some_text(&mut a, "transcope.task_revision", revision);
            some_text(&mut a, "transcope.lane", lane);
            records.push(LogRecord {
                time_unix_nano: nanos(t.at_us),
                observed_time_unix_nano: observed_ns,
                severity_number: SeverityNumber::Info as i32,
                severity_text: "INFO".into(),
                event_name: "transcope.scope.transition".into(),
                body: Some(AnyValue {
                    value: Some(any_value::Value::StringValue(t.line.clone())),
                }),
                attributes: a,
                ..Default::default()
            });
        }
        for m in markers {
            let [key, session, ty, content, _attrs, _at, attribution, project_id, worktree, branch, task, _body, origin, state, _detail] =
                &m.text;
            let s = |v: &Option<String>| v.as_deref().unwrap_or("").to_owned();
            let mut a = Vec::with_capacity(12);
            if let Some(session) = session {
                self.session(&mut a, session);
            }
            a.push(text("transcope.idempotency_key", &s(key)));
            some_text(&mut a, "transcope.marker.type", &s(ty));
            some_text(&mut a, "transcope.attribution", &s(attribution));
            self.project(&mut a, &s(project_id));
            some_text(&mut a, "transcope.worktree", &s(worktree));
            some_text(&mut a, "vcs.ref.head.name", &s(branch));
            some_text(&mut a, "transcope.task", &s(task));
            some_text(&mut a, "transcope.origin", &s(origin));
            some_text(&mut a, "transcope.state", &s(state));
            records.push(LogRecord {
                time_unix_nano: nanos(m.times[0].or(m.times[1])),
                observed_time_unix_nano: observed_ns,
                severity_number: SeverityNumber::Info as i32,
                severity_text: "INFO".into(),
                event_name: "transcope.marker".into(),
                body: Some(AnyValue {
                    value: Some(any_value::Value::StringValue(s(content))),
                }),
                attributes: a,
                ..Default::default()
            });
        }
        ExportLogsServiceRequest {
            resource_logs: vec![ResourceLogs {
                resource: Some(self.resource()),
                scope_logs: vec![ScopeLogs {
                    scope: Some(self.scope()),
                    log_records: records,
                    ..Default::default()
                }],
                ..Default::default()
            }],
        }
    }
}
