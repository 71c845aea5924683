//! A third-party agent's usage, counted and priced by transcope's own usage stage and
//! price list: the plain-log factory declares how its `tokens` map to transcope's
//! columns, what keys a request and its pricing provider, and neither
//! `pipelines/usage` nor `crates/pricing` knows the agent.

use std::path::Path;

use transcope_core::agent::RequestKey;
use transcope_core::digest::request_key;
use transcope_engine::{Buffers, Pipeline, Request};
use transcope_example_third_party::{adapters, plainlog};
use transcope_pricing::{PriceList, Prices};
use transcope_store::Pricer;
use transcope_usage::{Spent, UsageStage};

const LOG: &str = r#"{"plainlog":1,"session":"pl-0002","started":"2026-05-02T09:00:00Z"}
{"t":"2026-05-02T09:00:01Z","in":"/work/alpha","who":"human","say":"count it"}
{"t":"2026-05-02T09:00:02Z","who":"agent","say":"one","id":"m1","model":"plainvendor-large","tokens":{"in":10,"cached":4,"out":3,"think":2}}
{"t":"2026-05-02T09:00:03Z","who":"agent","say":"one","id":"m1","model":"plainvendor-large","tokens":{"in":10,"cached":4,"out":3,"think":2}}
{"t":"2026-05-02T09:00:04Z","who":"agent","say":"two","id":"m2","model":"plainvendor/pv-small","tokens":{"in":100,"out":50}}
"#;

/// The plain log read through the example's adapters (transcope's, then the plain
/// log) with transcope's usage stage listed.
fn spent(dir: &Path) -> Vec<Spent> {
    let path = dir.join("pl-0002.plog");
    std::fs::write(&path, LOG).unwrap();
    let pipeline = Pipeline::builder(adapters()).build();
    let mut usage = UsageStage::default();
    let seen = pipeline
        .observe(
            &Request::new(&path, Some("pl-0002")),
            &mut [&mut usage],
            &mut Buffers::default(),
        )
        .unwrap();
    assert_eq!(seen.scan.adapter, "plainlog");
    usage.take()
}

#[test]
fn a_declared_usage_shape_is_counted_by_the_usage_stage() {
    assert_eq!(plainlog::USAGE.key, RequestKey::SessionMessage);
    let dir = tempfile::tempdir().unwrap();
    let s = spent(dir.path());
    assert_eq!(s.len(), 2, "{s:?}");
    // `in` includes `cached`, `think` is billed apart from `out`: by the declaration.
    let t = s[0].tokens;
    assert_eq!(
        (t.input, t.cache_read, t.output, t.reasoning_output),
        (6, 4, 5, 2)
    );
    // The streamed copy is the same request, keyed by the session as declared.
    assert_eq!(s[0].copies, 2);
    assert_eq!(
        s[0].key,
        request_key(&["plainlog", ":", "pl-0002", ":", "m1"])
    );
    assert_eq!(s[0].model.as_deref(), Some("plainvendor-large"));
    assert_eq!((s[1].tokens.input, s[1].tokens.output), (100, 50));
}

#[test]
fn a_declared_pricing_provider_is_used_by_the_price_list() {
    let dir = tempfile::tempdir().unwrap();
    let s = spent(dir.path());
    // The vendor's list: one own-named model filed under its namespace, one bare.
    let table = Prices::from_json(
        r#"{"models": {"plainvendor/plainvendor-large": {"input": 1e-06, "output": 2e-06, "cache_read": 1e-07},
                       "pv-small": {"input": 1e-07, "output": 2e-07}}}"#,
    )
    .unwrap();
    let with = table.clone().with_providers(adapters().pricing_providers());
    let priced = PriceList::new(&with);
    let large = priced.cost(s[0].model.as_deref(), &s[0].tokens).unwrap();
    assert!((large - (6.0 * 1e-06 + 4.0 * 1e-07 + 5.0 * 2e-06)).abs() < 1e-12);
    let small = priced.cost(s[1].model.as_deref(), &s[1].tokens).unwrap();
    assert!((small - (100.0 * 1e-07 + 50.0 * 2e-07)).abs() < 1e-12);
    // transcope's own agents alone do not declare the vendor: neither name is found.
    let without = table.with_providers(transcope::compose::adapters().pricing_providers());
    let unpriced = PriceList::new(&without);
    assert_eq!(unpriced.cost(s[0].model.as_deref(), &s[0].tokens), None);
    assert_eq!(unpriced.cost(s[1].model.as_deref(), &s[1].tokens), None);
}
