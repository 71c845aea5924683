//! The shipped table against litellm's list, cost rules, name normalisation, the
//! `--pricing` override and its errors, and the generator's determinism.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use transcope_pricing::{ModelPrice, Prices, PricingError, Tokens};

const M: u64 = 1_000_000;

/// The pricing providers the built-in adapters declare, in their order (the binary's
/// own test, `crates/cli/tests/agents.rs`, holds the registry to this list).
const PROVIDERS: [&str; 3] = ["anthropic", "openai", "gemini"];

/// The shipped table, its names matched as the binary matches them.
fn shipped() -> Prices {
    Prices::builtin().with_providers(PROVIDERS)
}

fn data(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data")
        .join(file)
}

fn builtin(model: &str) -> ModelPrice {
    shipped()
        .price(model)
        .unwrap_or_else(|| panic!("{model} has a price"))
        .clone()
}

/// Equal to the cent's millionth: sums of per-token prices are not exact in f64.
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

fn write_tmp(name: &str, text: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn builtin_table_parses_and_covers_claude_openai_and_gemini() {
    let prices = shipped();
    assert!(prices.len() > 100, "{} models", prices.len());
    for provider in ["anthropic", "openai", "gemini", "vertex_ai-language-models"] {
        assert!(
            prices
                .models()
                .any(|(_, p)| p.provider.as_deref() == Some(provider)),
            "no {provider} model"
        );
    }
    assert!(
        prices.source().contains("litellm 1.100.0"),
        "{}",
        prices.source()
    );
    assert!(prices
        .source()
        .contains("00035b69f416be24e2e323c13198d9b7d2d1bdf9"));
    assert!(prices.source().contains("MIT"));
}

/// The prices read from BerriAI/litellm's model_prices_and_context_window.json at commit
/// 00035b69 (claude-sonnet-4-20250514's entry), written here by hand.
#[test]
fn claude_sonnet_4_prices_match_the_list() {
    let p = builtin("claude-sonnet-4-20250514");
    assert_eq!(p.input * M as f64, 3.0);
    assert_eq!(p.output * M as f64, 15.0);
    assert_eq!(p.cache_write_5m.map(|v| v * M as f64), Some(3.75));
    assert_eq!(p.cache_write_1h.map(|v| v * M as f64), Some(6.0));
    assert!(close(p.cache_read.unwrap() * M as f64, 0.30));
    assert_eq!(p.tiers.len(), 1);
    let tier = &p.tiers[0];
    assert_eq!(tier.above, 200_000);
    assert_eq!(tier.input.map(|v| v * M as f64), Some(6.0));
    assert_eq!(tier.output.map(|v| v * M as f64), Some(22.5));
    assert_eq!(tier.cache_write_5m.map(|v| v * M as f64), Some(7.5));
    assert!(close(tier.cache_read.unwrap() * M as f64, 0.6));
}

/// Every model of the shipped table against its entry in the filtered litellm copy,
/// read here with serde_json alone (not through the crate).
#[test]
fn every_builtin_price_equals_its_litellm_entry() {
    let raw: Value =
        serde_json::from_str(&std::fs::read_to_string(data("litellm-model-prices.json")).unwrap())
            .unwrap();
    let raw = raw.as_object().unwrap();
    let prices = shipped();
    assert_eq!(prices.len(), raw.len());
    let field = |e: &Value, f: &str| e.get(f).and_then(Value::as_f64);
    for (name, p) in prices.models() {
        let e = &raw[name];
        assert_eq!(Some(p.input), field(e, "input_cost_per_token"), "{name}");
        assert_eq!(Some(p.output), field(e, "output_cost_per_token"), "{name}");
        assert_eq!(
            p.cache_write_5m,
            field(e, "cache_creation_input_token_cost"),
            "{name}"
        );
        assert_eq!(
            p.cache_write_1h,
            field(e, "cache_creation_input_token_cost_above_1hr"),
            "{name}"
        );
        assert_eq!(
            p.cache_read,
            field(e, "cache_read_input_token_cost"),
            "{name}"
        );
        assert_eq!(
            p.reasoning_output,
            field(e, "output_cost_per_reasoning_token"),
            "{name}"
        );
        for t in &p.tiers {
            let k = t.above / 1000;
            assert_eq!(
                t.input,
                field(e, &format!("input_cost_per_token_above_{k}k_tokens"))
            );
            assert_eq!(
                t.output,
                field(e, &format!("output_cost_per_token_above_{k}k_tokens"))
            );
            assert_eq!(
                t.cache_read,
                field(e, &format!("cache_read_input_token_cost_above_{k}k_tokens"))
            );
        }
        assert_eq!(
            p.provider.as_deref(),
            e["litellm_provider"].as_str(),
            "{name}"
        );
    }
}

/// The models the repository's Claude, Codex and Gemini fixtures name.
#[test]
fn fixture_models_are_priced() {
    let prices = shipped();
    for model in [
        "claude-opus-4-7",
        "claude-sonnet-4-20250514",
        "claude-haiku-4-5-20251001",
        "claude-sonnet-4-5-20250929",
        "claude-opus-4-6",
        "claude-opus-4-20250514",
        "claude-opus-4-5-20251101",
        "claude-opus-4-8",
        "claude-fable-5",
        "claude-sonnet-5",
        "gpt-5.1-codex-max",
        "gpt-5.6-sol",
        "gpt-5.6-luna",
        "gpt-5.2-codex",
        "gpt-5-codex",
        "gpt-5.5",
        "gpt-5.4",
        "gpt-5.2",
        "gpt-5.1",
        "gemini-2.5-pro",
        "gemini-2.5-flash",
        "gemini-3-flash-preview",
    ] {
        assert!(prices.price(model).is_some(), "{model}");
    }
    // litellm had dropped it by 1.100.0 (see data/SOURCE.md): no price, not a guess.
    assert!(prices.price("claude-3-sonnet-20240229").is_none());
}

#[test]
fn cost_prices_each_kind_of_token_at_its_own_price() {
    let p = builtin("claude-sonnet-4-20250514");
    let one = |t: Tokens| p.cost(&t);
    // 100k tokens: a million input tokens would be above the 200k tier.
    assert!(close(
        one(Tokens {
            input: 100_000,
            ..Tokens::default()
        }),
        0.3
    ));
    assert!(close(
        one(Tokens {
            output: M,
            ..Tokens::default()
        }),
        15.0
    ));
    assert!(close(
        one(Tokens {
            cache_creation_5m: 100_000,
            ..Tokens::default()
        }),
        0.375
    ));
    assert!(close(
        one(Tokens {
            cache_creation_1h: 100_000,
            ..Tokens::default()
        }),
        0.6
    ));
    assert!(close(
        one(Tokens {
            cache_read: 100_000,
            ..Tokens::default()
        }),
        0.03
    ));
    let mixed = Tokens {
        input: 1_000,
        output: 2_000,
        cache_creation_5m: 10_000,
        cache_creation_1h: 20_000,
        cache_read: 150_000,
        reasoning_output: 0,
    };
    let want = 1_000.0 * 3e-6
        + 2_000.0 * 15e-6
        + 10_000.0 * 3.75e-6
        + 20_000.0 * 6e-6
        + 150_000.0 * 0.3e-6;
    assert!(close(one(mixed), want), "{} vs {want}", one(mixed));
    assert_eq!(one(Tokens::default()), 0.0);
}

#[test]
fn one_hour_writes_fall_back_to_the_five_minute_price_when_unlisted() {
    let p = builtin("gpt-5.6-sol");
    assert!(p.cache_write_1h.is_none());
    let five = p
        .cache_write_5m
        .expect("gpt-5.6-sol lists a cache write price");
    let t = Tokens {
        cache_creation_1h: 100_000,
        ..Tokens::default()
    };
    assert!(close(p.cost(&t), five * 100_000.0));
}

#[test]
fn unlisted_cache_read_price_is_the_input_price_not_zero() {
    let p = builtin("gpt-4o-2024-05-13");
    assert!(p.cache_read.is_none());
    let t = Tokens {
        cache_read: M,
        ..Tokens::default()
    };
    assert!(close(p.cost(&t), 5.0));
}

#[test]
fn reasoning_tokens_are_billed_as_output() {
    let codex = builtin("gpt-5-codex");
    let t = Tokens {
        reasoning_output: M,
        ..Tokens::default()
    };
    assert!(close(codex.cost(&t), 10.0));
    // gemini-2.5-flash lists output_cost_per_reasoning_token itself.
    let flash = builtin("gemini-2.5-flash");
    assert_eq!(flash.reasoning_output, Some(2.5e-6));
    assert!(close(flash.cost(&t), 2.5));
}

#[test]
fn tier_prices_apply_to_the_whole_request_above_the_threshold() {
    let p = builtin("claude-sonnet-4-20250514");
    let at = Tokens {
        input: 100_000,
        cache_read: 100_000,
        output: 1_000,
        ..Tokens::default()
    };
    assert_eq!(at.prompt(), 200_000);
    assert!(close(
        p.cost(&at),
        100_000.0 * 3e-6 + 100_000.0 * 0.3e-6 + 1_000.0 * 15e-6
    ));
    let above = Tokens {
        input: 100_001,
        ..at
    };
    let want = 100_001.0 * 6e-6 + 100_000.0 * 0.6e-6 + 1_000.0 * 22.5e-6;
    assert!(close(p.cost(&above), want), "{} vs {want}", p.cost(&above));
    // No 1-hour price in the tier: the list's base 1-hour price stays.
    let long_1h = Tokens {
        input: 300_000,
        cache_creation_1h: 1_000,
        ..Tokens::default()
    };
    assert!(close(p.cost(&long_1h), 300_000.0 * 6e-6 + 1_000.0 * 6e-6));

    let gpt = builtin("gpt-5.4");
    assert_eq!(gpt.tiers[0].above, 272_000);
    let long = Tokens {
        input: 272_001,
        ..Tokens::default()
    };
    assert!(close(gpt.cost(&long), 272_001.0 * 5e-6));
    // A model without tiers never changes price with length.
    let opus = builtin("claude-opus-4-20250514");
    assert!(opus.tiers.is_empty());
    assert!(close(
        opus.cost(&Tokens {
            input: M,
            ..Tokens::default()
        }),
        15.0
    ));
}

#[test]
fn names_are_normalised_as_users_write_them() {
    let prices = shipped();
    let resolved = |m: &str| prices.resolve(m).map(|(k, _)| k.to_owned());
    for (given, table) in [
        ("claude-sonnet-4-20250514", "claude-sonnet-4-20250514"),
        ("  Claude-Opus-4-7 ", "claude-opus-4-7"),
        (
            "anthropic/claude-sonnet-4-20250514",
            "claude-sonnet-4-20250514",
        ),
        ("openai/gpt-5-codex", "gpt-5-codex"),
        (
            "vertex_ai/claude-opus-4-1@20250805",
            "claude-opus-4-1-20250805",
        ),
        ("claude-sonnet-4-5@20250929", "claude-sonnet-4-5-20250929"),
        ("claude-opus-4-7-20991231", "claude-opus-4-7"),
        ("claude-sonnet-4", "claude-sonnet-4-20250514"),
        ("claude-opus-4-7-latest", "claude-opus-4-7"),
        ("gpt-4.1-2099-01-01", "gpt-4.1"),
        ("codex-mini-latest", "codex-mini-latest"),
        ("gemini/gemini-2.5-pro", "gemini/gemini-2.5-pro"),
        ("gemini-2.5-pro", "gemini-2.5-pro"),
        ("models/gemini-2.5-flash", "gemini-2.5-flash"),
        ("vertex_ai/gemini-2.5-pro", "gemini-2.5-pro"),
        (
            "gemini-3.5-live-translate-preview",
            "gemini/gemini-3.5-live-translate-preview",
        ),
    ] {
        assert_eq!(resolved(given).as_deref(), Some(table), "{given}");
    }
    // A listed dated snapshot keeps its own price rather than the alias's.
    assert!(close(builtin("gpt-4o-2024-05-13").input * M as f64, 5.0));
    assert!(close(builtin("gpt-4o").input * M as f64, 2.5));
}

#[test]
fn unknown_models_have_no_price() {
    let prices = shipped();
    for model in [
        "",
        "   ",
        "<synthetic>",
        "claude",
        "claude-",
        "claude-sonnet-4-5-foo",
        "claude-sonnet-99",
        "gpt-6",
        "llama-3.1-70b",
        "azure/gpt-4o",
        "bedrock/claude-sonnet-4-20250514",
        "claude-é-20250514",
        "gemini-1.0-pro",
        "-20250514",
        "@20250514",
    ] {
        assert!(prices.price(model).is_none(), "{model:?} priced");
        assert_eq!(
            prices.cost(
                model,
                &Tokens {
                    input: M,
                    ..Tokens::default()
                }
            ),
            None
        );
    }
}

#[test]
fn pricing_file_replaces_the_builtin_table() {
    let path = write_tmp(
        "override-prices.json",
        r#"{"source": "our negotiated rates",
            "models": {"claude-sonnet-4-20250514": {"input": 1e-06, "output": 2e-06},
                       "in-house-model": {"input": 0, "output": 1e-07, "cache_read": 0,
                                          "tiers": [{"above": 10, "output": 2e-07}]}}}"#,
    );
    let prices = Prices::load(&path).unwrap().with_providers(PROVIDERS);
    assert_eq!(prices.source(), "our negotiated rates");
    assert_eq!(prices.len(), 2);
    let t = Tokens {
        input: M,
        output: M,
        ..Tokens::default()
    };
    assert!(close(
        prices
            .cost("anthropic/claude-sonnet-4-20250514", &t)
            .unwrap(),
        3.0
    ));
    assert!(close(prices.cost("in-house-model", &t).unwrap(), 0.2));
    // Replaced, not merged: a builtin model the file does not list has no price.
    assert_eq!(prices.cost("claude-opus-4-7", &t), None);
    assert_eq!(
        Prices::from_json(&std::fs::read_to_string(&path).unwrap())
            .unwrap()
            .with_providers(PROVIDERS),
        prices
    );
}

#[test]
fn bad_pricing_input_gives_typed_errors() {
    let missing = Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-such-prices.json");
    assert!(matches!(
        Prices::load(&missing),
        Err(PricingError::Read { .. })
    ));

    let path = write_tmp(
        "malformed-prices.json",
        r#"{"models": {"x": {"input": 1e-06,"#,
    );
    match Prices::load(&path) {
        Err(PricingError::Parse { origin, source }) => {
            assert!(origin.ends_with("malformed-prices.json"), "{origin}");
            assert!(source.is_eof());
        }
        other => panic!("{other:?}"),
    }
    for text in [
        "",
        "[]",
        r#"{"models": []}"#,
        r#"{"models": {"x": {"input": 1e-06}}}"#,
        r#"{"models": {"x": {"input": "3", "output": 1}}}"#,
        r#"{"models": {"x": {"inptu": 1e-06, "input": 1e-06, "output": 1e-06}}}"#,
        r#"{"models": {}, "extra": 1}"#,
        r#"{"models": {"x": {"input": 1e999, "output": 1}}}"#,
    ] {
        assert!(
            matches!(Prices::from_json(text), Err(PricingError::Parse { .. })),
            "{text:?}"
        );
    }
    match Prices::from_json(r#"{"models": {"x": {"input": 1, "output": 1, "cache_read": -1}}}"#) {
        Err(PricingError::InvalidPrice { model, field, .. }) => {
            assert_eq!((model.as_str(), field.as_str()), ("x", "cache_read"));
        }
        other => panic!("{other:?}"),
    }
    let tiered = r#"{"models": {"x": {"input": 1, "output": 1,
        "tiers": [{"above": 5, "input": 2}, {"above": 5, "input": -3}]}}}"#;
    match Prices::from_json(tiered) {
        Err(PricingError::InvalidPrice { field, .. }) => assert_eq!(field, "tiers[1].input"),
        other => panic!("{other:?}"),
    }
    let twice = r#"{"models": {"x": {"input": 1, "output": 1,
        "tiers": [{"above": 5, "input": 2}, {"above": 5, "input": 3}]}}}"#;
    assert!(matches!(
        Prices::from_json(twice),
        Err(PricingError::DuplicateTier { above: 5, .. })
    ));
}

#[test]
fn generator_reproduces_the_shipped_table() {
    let script = data("generate.py");
    let run = match Command::new("python3").arg(&script).arg("--check").output() {
        Ok(out) => out,
        Err(e) => {
            eprintln!(
                "skipped: python3 is not available to run {}: {e}",
                script.display()
            );
            return;
        }
    };
    assert!(
        run.status.success(),
        "generate.py --check: {}",
        String::from_utf8_lossy(&run.stderr)
    );
}

/// The providers are the registered agents' declaration, not this crate's: without
/// them a namespaced name is not stripped, nor an own-named model looked up under its
/// provider; with a provider no agent of transcope's declares, its names are.
#[test]
fn namespaces_come_from_the_declared_providers() {
    let bare = Prices::builtin();
    assert_eq!(bare.resolve("openai/gpt-5-codex"), None);
    assert_eq!(bare.resolve("gemini-3.5-live-translate-preview"), None);
    assert!(bare.resolve("vertex_ai/claude-opus-4-1@20250805").is_some());
    let toy = Prices::from_json(
        r#"{"models": {"toyvendor/toyvendor-large": {"input": 1e-06, "output": 2e-06},
                       "small": {"input": 1e-07, "output": 2e-07}}}"#,
    )
    .unwrap()
    .with_providers(["toyvendor"]);
    let resolved = |m: &str| toy.resolve(m).map(|(k, _)| k.to_owned());
    assert_eq!(
        resolved("toyvendor-large").as_deref(),
        Some("toyvendor/toyvendor-large")
    );
    assert_eq!(resolved("toyvendor/small").as_deref(), Some("small"));
    // Only a provider's own-named models are looked up under it.
    assert_eq!(resolved("large"), None);
}

/// A version written with a dot (Copilot CLI's and OpenCode's `claude-sonnet-4.5`) is
/// the list's hyphened name; a name the list has with its dot keeps it; a dotted name
/// the list has in neither spelling stays unpriced.
#[test]
fn a_dotted_version_is_the_lists_hyphened_name() {
    let p = shipped();
    let (name, _) = p
        .resolve("claude-sonnet-4.5")
        .expect("claude-sonnet-4.5 is priced");
    assert_eq!(name, "claude-sonnet-4-5");
    let (name, _) = p.resolve("anthropic/claude-sonnet-4.5").unwrap();
    assert_eq!(name, "claude-sonnet-4-5");
    assert_eq!(p.resolve("gpt-4.1").unwrap().0, "gpt-4.1");
    assert!(p.resolve("claude-sonnet-9.5").is_none());
    assert!(p.resolve("v1.2.3-unknown").is_none());
}
