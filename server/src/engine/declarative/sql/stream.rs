//! `STREAM name` and `STREAM read_files(...)` written as `STREAM(...)`, the form SQL parsers read
//! as a table function; and a column named `offset` (a Kafka source's) quoted where Spark reads it
//! as a column, which the SQL parser would take for an `OFFSET` clause. The text is walked as SQL: quoted text and comments are copied as they
//! are, so an apostrophe in a comment (`-- the ticket's file`) opens no string, and the word
//! `stream` inside either is left alone.

/// The query with each `STREAM x` outside quotes and comments as `STREAM(x)`.
pub(super) fn with_parentheses(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut rest = sql;
    while let Some(c) = rest.chars().next() {
        if let Some(n) = quoted_len(rest).or_else(|| comment_len(rest)) {
            out.push_str(&rest[..n]);
            rest = &rest[n..];
            continue;
        }
        let word_start = out
            .chars()
            .last()
            .is_none_or(|p| !(p.is_alphanumeric() || p == '_'));
        // `get`, not an index: the sixth byte may fall inside a character (`élevé`).
        if word_start
            && rest
                .get(..6)
                .is_some_and(|w| w.eq_ignore_ascii_case("stream"))
        {
            let after = &rest[6..];
            let trimmed = after.trim_start();
            let spaced = after.len() > trimmed.len();
            let name_len = trimmed
                .find(|ch: char| !(ch.is_alphanumeric() || ch == '_' || ch == '.'))
                .unwrap_or(trimmed.len());
            if spaced && name_len > 0 && !trimmed.starts_with('(') {
                // `STREAM name` or `STREAM read_files(...)`, through its closing parenthesis.
                let mut end = name_len;
                if trimmed[name_len..].trim_start().starts_with('(') {
                    end = closing_parenthesis(trimmed, name_len).unwrap_or(trimmed.len());
                }
                out.push_str(&format!("STREAM({})", &trimmed[..end]));
                rest = &trimmed[end..];
                continue;
            }
        }
        if word_start && is_offset_column(&out, rest) {
            out.push_str("\"offset\"");
            rest = &rest[6..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// Whether `rest` starts with the word `offset` used as a column: after `,`, `(` or `.`, or
/// after `SELECT`, `DISTINCT` or `BY` (an `OFFSET` clause follows a `LIMIT` or an expression).
fn is_offset_column(before: &str, rest: &str) -> bool {
    let word = rest
        .get(..6)
        .is_some_and(|w| w.eq_ignore_ascii_case("offset"))
        && !rest[6..].starts_with(|ch: char| ch.is_alphanumeric() || ch == '_');
    if !word {
        return false;
    }
    let before = before.trim_end();
    if before.ends_with([',', '(', '.']) {
        return true;
    }
    let last_word = before
        .rsplit(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
        .next()
        .unwrap_or("");
    ["select", "distinct", "by"]
        .iter()
        .any(|w| last_word.eq_ignore_ascii_case(w))
}

/// The length in bytes of the quoted text `s` starts with (`'...'`, `"..."` or `` `...` ``, a
/// doubled quote inside it kept), through its closing quote or the end of the text.
fn quoted_len(s: &str) -> Option<usize> {
    let q = s.chars().next().filter(|c| matches!(c, '\'' | '"' | '`'))?;
    let mut i = 1;
    while let Some(at) = s[i..].find(q) {
        i += at + 1;
        // A doubled quote is one quote character inside the text.
        if !s[i..].starts_with(q) {
            return Some(i);
        }
        i += 1;
    }
    Some(s.len())
}

/// The length in bytes of the comment `s` starts with: `-- ...` through the end of its line, or
/// `/* ... */` through its end (or the end of the text).
fn comment_len(s: &str) -> Option<usize> {
    if s.starts_with("--") {
        return Some(s.find('\n').map_or(s.len(), |n| n + 1));
    }
    if let Some(body) = s.strip_prefix("/*") {
        return Some(body.find("*/").map_or(s.len(), |n| n + 4));
    }
    None
}

/// The byte after the `)` that closes the first `(` at or after `from`, quotes and comments
/// skipped.
fn closing_parenthesis(text: &str, from: usize) -> Option<usize> {
    let mut depth = 0;
    let mut i = from;
    while let Some(c) = text[i..].chars().next() {
        if let Some(n) = quoted_len(&text[i..]).or_else(|| comment_len(&text[i..])) {
            i += n;
            continue;
        }
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
        i += c.len_utf8();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::with_parentheses as rewrite;

    #[test]
    fn stream_names_and_calls_get_parentheses() {
        assert_eq!(
            rewrite("SELECT * FROM STREAM bronze WHERE a = 1"),
            "SELECT * FROM STREAM(bronze) WHERE a = 1"
        );
        assert_eq!(
            rewrite("SELECT * FROM stream read_files('landing/x', format => 'json') t"),
            "SELECT * FROM STREAM(read_files('landing/x', format => 'json')) t"
        );
        assert_eq!(
            rewrite("SELECT * FROM STREAM(b)"),
            "SELECT * FROM STREAM(b)"
        );
        assert_eq!(
            rewrite("SELECT streams FROM upstream"),
            "SELECT streams FROM upstream"
        );
    }

    #[test]
    fn a_column_named_offset_is_quoted_and_an_offset_clause_is_not() {
        assert_eq!(
            rewrite("SELECT partition, offset FROM k ORDER BY offset LIMIT 5 OFFSET 2"),
            "SELECT partition, \"offset\" FROM k ORDER BY \"offset\" LIMIT 5 OFFSET 2"
        );
        assert_eq!(
            rewrite("SELECT offset, k.offset FROM k"),
            "SELECT \"offset\", k.\"offset\" FROM k"
        );
        assert_eq!(
            rewrite("SELECT offsets, 'offset' FROM k"),
            "SELECT offsets, 'offset' FROM k"
        );
    }

    #[test]
    fn quotes_and_comments_are_copied_as_they_are() {
        let sql = "-- the ticket's file\nSELECT 'stream x' AS s, \"it''s\" FROM STREAM raw /* stream y */";
        assert_eq!(
            rewrite(sql),
            "-- the ticket's file\nSELECT 'stream x' AS s, \"it''s\" FROM STREAM(raw) /* stream y */"
        );
        let sql = "SELECT * FROM STREAM read_files('a(b', -- a ( in a comment\n format => 'csv')";
        assert_eq!(
            rewrite(sql),
            "SELECT * FROM STREAM(read_files('a(b', -- a ( in a comment\n format => 'csv'))"
        );
        assert_eq!(
            rewrite("SELECT 'it''s' FROM STREAM t"),
            "SELECT 'it''s' FROM STREAM(t)"
        );
    }

    #[test]
    fn text_that_is_not_ascii_is_read_by_character() {
        let sql = "-- niveau élevé\nSELECT 'café' AS c, naïve FROM STREAM t -- élevé";
        assert_eq!(
            rewrite(sql),
            "-- niveau élevé\nSELECT 'café' AS c, naïve FROM STREAM(t) -- élevé"
        );
        assert_eq!(rewrite("SELECT é FROM stréam"), "SELECT é FROM stréam");
    }
}
