//! Lakeflow's `WATERMARK col DELAY OF INTERVAL n unit [AS alias]` after a streamed source
//! (PIPELINES §8). DataFusion's parser has no such clause, so it is found in the query's tokens
//! (quotes and comments are the tokenizer's, never matched) and cut out of the text before
//! parsing, kept as the flow's [`Watermark`].

use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

/// A flow's watermark: the event-time column and how far behind the latest it trails.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Watermark {
    pub column: String,
    /// Microseconds.
    pub delay: i64,
}

const MICROS: [(&str, i64); 4] = [
    ("second", 1_000_000),
    ("minute", 60_000_000),
    ("hour", 3_600_000_000),
    ("day", 86_400_000_000),
];

/// `n unit` (`1 hour`, `30 minutes`, `2 days`) in microseconds, or why not.
pub fn duration(amount: &str, unit: &str) -> Result<i64, String> {
    let n: i64 = amount
        .trim()
        .parse()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("{amount:?} is not a whole number above 0"))?;
    let unit = unit.trim().to_lowercase();
    let per = MICROS
        .iter()
        .find(|(name, _)| unit == *name || unit.strip_suffix('s') == Some(name))
        .map(|(_, micros)| *micros)
        .ok_or_else(|| format!("unit {unit:?} is not seconds, minutes, hours or days"))?;
    n.checked_mul(per)
        .filter(|d| *d <= 366 * 86_400_000_000)
        .ok_or_else(|| format!("{amount} {unit} is longer than a year"))
}

/// `'1 hour'` as a duration.
pub fn duration_text(text: &str) -> Result<i64, String> {
    let mut words = text.split_whitespace();
    match (words.next(), words.next(), words.next()) {
        (Some(n), Some(unit), None) => duration(n, unit),
        _ => Err(format!("'{text}' is not a duration such as '1 hour'")),
    }
}

/// The query without its `WATERMARK` clause, and the clause. `Err` says what is wrong with it.
pub fn extract(sql: &str) -> Result<(String, Option<Watermark>), String> {
    let tokens = Tokenizer::new(&GenericDialect {}, sql)
        .tokenize_with_location()
        .map_err(|e| e.to_string())?;
    let Some(start) = tokens.iter().position(|t| is_word(t, "watermark")) else {
        return Ok((sql.to_string(), None));
    };
    let significant: Vec<(usize, &TokenWithSpan)> = tokens
        .iter()
        .enumerate()
        .skip(start)
        .filter(|(_, t)| !matches!(t.token, Token::Whitespace(_)))
        .collect();
    let word = |i: usize| significant.get(i).map(|(_, t)| &t.token);
    let usage = "WATERMARK column DELAY OF INTERVAL n unit, such as WATERMARK event_time DELAY OF \
                 INTERVAL 1 HOUR";
    let column = match word(1) {
        Some(Token::Word(w)) => w.value.clone(),
        _ => return Err(usage.into()),
    };
    let keyword = |i: usize, name: &str| matches!(word(i), Some(Token::Word(w)) if w.value.eq_ignore_ascii_case(name));
    if !(keyword(2, "delay") && keyword(3, "of") && keyword(4, "interval")) {
        return Err(usage.into());
    }
    let text = |i: usize| match word(i) {
        Some(Token::Number(n, _)) => Some(n.clone()),
        Some(Token::SingleQuotedString(s)) => Some(s.clone()),
        Some(Token::Word(w)) if w.quote_style.is_none() => Some(w.value.clone()),
        _ => None,
    };
    let amount = text(5).ok_or(usage)?;
    // `INTERVAL '1 hour'` or `INTERVAL 1 HOUR` / `INTERVAL '1' HOUR`.
    let (delay, last) = match duration_text(&amount) {
        Ok(delay) => (delay, 5),
        Err(_) => {
            let unit = text(6).ok_or(usage)?;
            (
                duration(&amount, &unit).map_err(|e| format!("WATERMARK: {e}"))?,
                6,
            )
        }
    };
    let mut end = significant[last].0 + 1;
    // `AS alias` after the clause names the source, as it would after the table.
    let mut alias = String::new();
    if keyword(last + 1, "as")
        && let Some(Token::Word(w)) = word(last + 2)
        && w.keyword == Keyword::NoKeyword
    {
        alias = format!(" AS {}", w);
        end = significant[last + 2].0 + 1;
    }
    if tokens[end..].iter().any(|t| is_word(t, "watermark")) {
        return Err("a flow has one WATERMARK".into());
    }
    // Cut by place, so the rest of the text stays as written (and its errors' places hold).
    let from = offset(sql, &tokens[start]);
    let to = tokens.get(end).map_or(sql.len(), |t| offset(sql, t));
    let out = format!("{}{alias} {}", &sql[..from], &sql[to..]);
    Ok((out, Some(Watermark { column, delay })))
}

/// The byte where `token` starts in `sql` (its span's line and character column, from 1).
fn offset(sql: &str, token: &TokenWithSpan) -> usize {
    let (line, column) = (
        token.span.start.line as usize,
        token.span.start.column as usize,
    );
    let line_start: usize = sql
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    sql[line_start..]
        .char_indices()
        .nth(column.saturating_sub(1))
        .map_or(sql.len(), |(i, _)| line_start + i)
}

fn is_word(token: &TokenWithSpan, name: &str) -> bool {
    matches!(&token.token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = 3_600_000_000;

    #[test]
    fn the_clause_is_cut_out_and_kept() {
        let (sql, w) = extract(
            "SELECT * FROM STREAM bronze WATERMARK event_time DELAY OF INTERVAL 1 HOUR AS b WHERE s = 'watermark'",
        )
        .unwrap();
        assert_eq!(
            sql,
            "SELECT * FROM STREAM bronze  AS b  WHERE s = 'watermark'"
        );
        assert_eq!(
            w,
            Some(Watermark {
                column: "event_time".into(),
                delay: HOUR
            })
        );
        let (_, w) =
            extract("SELECT 1 FROM STREAM t WATERMARK ts DELAY OF INTERVAL '90 minutes'").unwrap();
        assert_eq!(w.unwrap().delay, 90 * 60_000_000);
        let (_, w) =
            extract("SELECT 1 FROM STREAM t WATERMARK ts DELAY OF INTERVAL '2' DAYS").unwrap();
        assert_eq!(w.unwrap().delay, 48 * HOUR);
        let (sql, w) = extract("SELECT 'WATERMARK' -- watermark\nFROM t").unwrap();
        assert_eq!(
            (sql.as_str(), w),
            ("SELECT 'WATERMARK' -- watermark\nFROM t", None)
        );
        for bad in [
            "SELECT 1 FROM t WATERMARK ts",
            "SELECT 1 FROM t WATERMARK ts DELAY OF INTERVAL 1 FORTNIGHT",
            "SELECT 1 FROM t WATERMARK ts DELAY OF INTERVAL 0 HOURS",
            "SELECT 1 FROM t WATERMARK a DELAY OF INTERVAL 1 HOUR JOIN u WATERMARK b DELAY OF INTERVAL 1 HOUR",
        ] {
            assert!(extract(bad).is_err(), "{bad}");
        }
    }
}
