//! The page: one HTML document with everything inlined.
//!
//! `<head>` opens with the Content-Security-Policy ([`CSP`]; scripts allowed by their
//! SHA-256 only, so nothing but the two inlined scripts runs), then the style; `<body>`
//! holds the page's skeleton, the model as a JSON data block ([`embed_json`]), the
//! vendored d3 (`vendor/d3/d3.min.js`, ISC, its licence in `vendor/d3/LICENSE` and in a
//! comment of the page) and the page's script (`assets/report.js`), which draws
//! everything from the model.

use base64::Engine as _;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::Report;

const D3: &str = include_str!("../vendor/d3/d3.min.js");
const D3_LICENSE: &str = include_str!("../vendor/d3/LICENSE");
const SCRIPT: &str = include_str!("../assets/report.js");
const STYLE: &str = include_str!("../assets/report.css");
const BODY: &str = include_str!("../assets/body.html");

/// The policy every report carries, before the script hashes: nothing may be fetched
/// (no `connect-src`, `img-src` beyond `data:`, fonts, frames, forms or base URL).
pub const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; \
    font-src data:; base-uri 'none'; form-action 'none'";

/// `value` as JSON that can stand inside `<script>…</script>` and parse back to the
/// same value: `<`, `>` and `&` (so no `</script>`, `<!--` or `-->`) and U+2028/U+2029
/// are written as `\u` escapes, which only ever occur inside JSON strings.
pub fn embed_json(value: &Value) -> String {
    let text = value.to_string();
    let mut out = String::with_capacity(text.len() + text.len() / 64);
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// `'sha256-…'` of an inline script's text, as CSP names it.
fn hash(script: &str) -> String {
    let digest = Sha256::digest(script.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// The text of a comment: `--` cannot occur in it.
fn comment_text(text: &str) -> String {
    text.replace("--", "- -")
}

/// The report's page.
pub fn render(report: &Report) -> String {
    let d3 = format!("\n{D3}\n");
    let script = format!("\n{SCRIPT}\n");
    let csp = format!("{CSP}; script-src {} {}", hash(&d3), hash(&script));
    let data = embed_json(report.model());
    let mut page = String::with_capacity(D3.len() + SCRIPT.len() + data.len() + 8192);
    page.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    page.push_str(&format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n"
    ));
    page.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    page.push_str("<meta name=\"generator\" content=\"transcope report\">\n");
    page.push_str("<title>transcope report</title>\n<style>\n");
    page.push_str(STYLE);
    page.push_str("</style>\n</head>\n<body>\n");
    page.push_str(BODY);
    page.push_str("<script type=\"application/json\" id=\"report-data\">");
    page.push_str(&data);
    page.push_str(
        "</script>\n<!-- d3 v7.9.2, https://d3js.org, vendored from the npm package d3:\n",
    );
    page.push_str(&comment_text(D3_LICENSE));
    page.push_str("-->\n<script>");
    page.push_str(&d3);
    page.push_str("</script>\n<script>");
    page.push_str(&script);
    page.push_str("</script>\n</body>\n</html>\n");
    page
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vendored_scripts_cannot_end_their_element_early() {
        for s in [D3, SCRIPT] {
            assert!(!s.to_ascii_lowercase().contains("</script"));
            assert!(!s.contains("<!--"));
        }
    }

    #[test]
    fn a_hash_is_what_csp_expects() {
        // `echo -n 'alert(1)' | openssl dgst -sha256 -binary | base64`
        assert_eq!(
            hash("alert(1)"),
            "'sha256-bhHHL3z2vDgxUt0W3dWQOrprscmda2Y5pLsLg4GF+pI='"
        );
    }
}
