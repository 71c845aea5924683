//! A minimal streaming JSON writer over a reusable byte buffer.
//!
//! Strings are escaped by `serde_json`, so every document written here is valid JSON; the writer
//! only tracks commas. Keys are written in call order, which keeps the output deterministic.

/// Writes one JSON value into `buf`, tracking whether a separator is needed.
pub(crate) struct W<'a> {
    buf: &'a mut Vec<u8>,
    first: bool,
}

/// Appends `s` as an escaped JSON string literal.
pub(crate) fn push_str(buf: &mut Vec<u8>, s: &str) {
    // Writing into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *buf, s);
}

impl<'a> W<'a> {
    /// Opens an object in `buf`.
    pub(crate) fn object(buf: &'a mut Vec<u8>) -> Self {
        buf.push(b'{');
        W { buf, first: true }
    }

    /// Opens an array in `buf`.
    pub(crate) fn array(buf: &'a mut Vec<u8>) -> Self {
        buf.push(b'[');
        W { buf, first: true }
    }

    fn sep(&mut self) {
        if !self.first {
            self.buf.push(b',');
        }
        self.first = false;
    }

    fn key(&mut self, k: &str) {
        self.sep();
        self.buf.push(b'"');
        self.buf.extend_from_slice(k.as_bytes());
        self.buf.extend_from_slice(b"\":");
    }

    /// `"k": "v"`.
    pub(crate) fn str(&mut self, k: &str, v: &str) -> &mut Self {
        self.key(k);
        push_str(self.buf, v);
        self
    }

    /// `"k": "v"` or `"k": null`.
    pub(crate) fn opt_str(&mut self, k: &str, v: Option<&str>) -> &mut Self {
        match v {
            Some(v) => self.str(k, v),
            None => self.null(k),
        }
    }

    /// `"k": n`.
    pub(crate) fn num(&mut self, k: &str, v: u64) -> &mut Self {
        self.key(k);
        self.buf.extend_from_slice(v.to_string().as_bytes());
        self
    }

    /// `"k": x` for a float, written with one decimal.
    pub(crate) fn float(&mut self, k: &str, v: f64) -> &mut Self {
        self.key(k);
        self.buf.extend_from_slice(format!("{v:.1}").as_bytes());
        self
    }

    /// `"k": true|false`.
    pub(crate) fn bool(&mut self, k: &str, v: bool) -> &mut Self {
        self.key(k);
        self.buf
            .extend_from_slice(if v { b"true" as &[u8] } else { b"false" });
        self
    }

    /// `"k": null`.
    pub(crate) fn null(&mut self, k: &str) -> &mut Self {
        self.key(k);
        self.buf.extend_from_slice(b"null");
        self
    }

    /// `"k": <raw>`; `raw` must already be valid JSON.
    pub(crate) fn raw(&mut self, k: &str, raw: &str) -> &mut Self {
        self.key(k);
        self.buf.extend_from_slice(raw.as_bytes());
        self
    }

    /// `"k": {` … returns a writer for the nested object; call [`W::end`] on it.
    pub(crate) fn obj(&mut self, k: &str) -> W<'_> {
        self.key(k);
        W::object(self.buf)
    }

    /// `"k": [` … returns a writer for the nested array; call [`W::end_array`] on it.
    pub(crate) fn arr(&mut self, k: &str) -> W<'_> {
        self.key(k);
        W::array(self.buf)
    }

    /// Array element: a nested object.
    pub(crate) fn item_obj(&mut self) -> W<'_> {
        self.sep();
        W::object(self.buf)
    }

    /// Array element: a string.
    pub(crate) fn item_str(&mut self, v: &str) -> &mut Self {
        self.sep();
        push_str(self.buf, v);
        self
    }

    /// Closes an object.
    pub(crate) fn end(&mut self) {
        self.buf.push(b'}');
    }

    /// Closes an array.
    pub(crate) fn end_array(&mut self) {
        self.buf.push(b']');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_valid_nested_json() {
        let mut buf = Vec::new();
        let mut w = W::object(&mut buf);
        w.str("a", "q\"uo\nte\u{1}é")
            .num("n", 5)
            .bool("b", true)
            .null("z");
        {
            let mut m = w.obj("m");
            let mut c = m.arr("c");
            c.item_obj().str("type", "text").end();
            c.item_str("x");
            c.end_array();
            m.end();
        }
        w.raw("r", "[1,2]");
        w.end();
        let v: serde_json::Value = serde_json::from_slice(&buf).unwrap();
        assert_eq!(v["a"], "q\"uo\nte\u{1}é");
        assert_eq!(v["m"]["c"][0]["type"], "text");
        assert_eq!(v["r"][1], 2);
    }
}
