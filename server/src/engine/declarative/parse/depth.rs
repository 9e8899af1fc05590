//! How deep a statement's expressions nest, measured on its tokens without recursing: a
//! learner's `1 + 1 + ... + 1` or `a OR b OR ...` of thousands of terms parses in a loop, but
//! every walk of the tree afterwards (printing, planning, dropping it) recurses once per
//! operator. A statement deeper than [`MOST`] is refused at the place it passes it, before any
//! of that code sees it.

use super::tokens::{Spanned, Token, place};
use super::{ParseError, Place};

/// The deepest a statement may nest: parentheses and chained operators counted together. A
/// 400-term `OR` (about 8 KB of SQL) is well within it.
pub const MOST: usize = 2000;

/// Words that start a new expression at their level: what came before them is not chained.
/// (Not `WHEN`, `THEN` or `ELSE`: a `CASE` is a level of its own, from `CASE` to `END`, and an
/// operator chain may run through it.)
const SEPARATORS: [&str; 9] = [
    "select", "from", "where", "on", "group", "order", "having", "join", "union",
];

/// Operators by how tightly they bind, loosest first: a chain of one class nests once per
/// operator, and an operand of a looser operator (`a = b` in `a = b OR c = d`) is a subtree of
/// its own, not part of the chain.
fn class(token: &Token) -> Option<usize> {
    let word = |w: &String, of: &[&str]| of.iter().any(|o| w.eq_ignore_ascii_case(o));
    match token {
        Token::Word(w) if word(w, &["or"]) => Some(0),
        Token::Word(w) if word(w, &["and"]) => Some(1),
        Token::Word(w) if word(w, &["not"]) => Some(2),
        Token::Word(w)
            if word(
                w,
                &[
                    "is", "like", "ilike", "rlike", "regexp", "similar", "in", "between",
                    "collate", "escape",
                ],
            ) =>
        {
            Some(3)
        }
        Token::Symbol('=' | '<' | '>' | '!' | '~') => Some(3),
        Token::Symbol('+' | '-' | '|' | '&' | '^') => Some(4),
        Token::Symbol('*' | '/' | '%') => Some(5),
        // `::` (a cast) and `.`/`[` after an expression bind tightest.
        Token::Symbol(':' | '.') => Some(6),
        _ => None,
    }
}

const CLASSES: usize = 7;

/// Whether a token opens or closes a level: parentheses, brackets, and `CASE ... END`.
fn opens(token: &Token) -> bool {
    matches!(token, Token::Symbol('(' | '['))
        || matches!(token, Token::Word(w) if w.eq_ignore_ascii_case("case"))
}

fn closes(token: &Token) -> bool {
    matches!(token, Token::Symbol(')' | ']'))
        || matches!(token, Token::Word(w) if w.eq_ignore_ascii_case("end"))
}

/// Refuses the statement whose `tokens` (of `text`, in `file`) nest deeper than [`MOST`].
pub(super) fn check(file: &str, text: &str, tokens: &[Spanned]) -> Result<(), ParseError> {
    // Per open parenthesis (and the statement's own level): per class, the operators chained
    // since the level's last separator; the depth is the open levels and every chain on them.
    let mut levels: Vec<[usize; CLASSES]> = vec![[0; CLASSES]];
    let mut depth = 1;
    for (token, at) in tokens {
        let last = levels.len() - 1;
        let chained = |level: &[usize; CLASSES]| level.iter().sum::<usize>();
        match token {
            t if opens(t) => {
                levels.push([0; CLASSES]);
                depth += 1;
            }
            t if closes(t) && last > 0 => {
                depth -= 1 + levels.pop().map_or(0, |l| chained(&l));
            }
            Token::Symbol(',') => {
                depth -= chained(&levels[last]);
                levels[last] = [0; CLASSES];
            }
            Token::Word(w) if SEPARATORS.iter().any(|s| w.eq_ignore_ascii_case(s)) => {
                depth -= chained(&levels[last]);
                levels[last] = [0; CLASSES];
            }
            other => {
                if let Some(c) = class(other) {
                    let level = &mut levels[last];
                    let before = chained(level);
                    level[c] += 1;
                    level[c + 1..].iter_mut().for_each(|n| *n = 0);
                    depth = depth + chained(level) - before;
                }
            }
        }
        if depth > MOST {
            return Err(too_deep(place(file, text, *at)));
        }
    }
    Ok(())
}

fn too_deep(place: Place) -> ParseError {
    ParseError {
        place,
        message: format!(
            "this expression nests deeper than {MOST} (parentheses and chained operators such \
             as `+` or `OR`, counted together); split it into columns or views"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tokens::tokens;
    use super::*;

    fn depth_check(sql: &str) -> Result<(), ParseError> {
        check("p.sql", sql, &tokens("p.sql", sql, 0, sql.len()).unwrap())
    }

    #[test]
    fn a_chain_of_thousands_is_refused_where_it_passes_the_limit_and_a_wide_query_is_not() {
        let chain = |n: usize, op: &str| vec!["1"; n].join(op);
        let deep = format!("SELECT\n{} AS v", chain(30_000, " + "));
        let error = depth_check(&deep).unwrap_err();
        assert_eq!(error.place.line, 2, "{error}");
        assert!(error.to_string().contains("deeper than 2000"), "{error}");
        // 1,900 terms of OR (the attack's plausible 8 KB query had 400) and 1,500 nested
        // parentheses pass.
        let ors = (0..1900)
            .map(|i| format!("ticket_id = 't{i}'"))
            .collect::<Vec<_>>()
            .join(" OR ");
        depth_check(&format!("SELECT * FROM t WHERE {ors}")).unwrap();
        let nested = format!("SELECT {}1{} AS v", "(".repeat(1500), ")".repeat(1500));
        depth_check(&nested).unwrap();
        depth_check(&format!(
            "SELECT {}1{} AS v",
            "(".repeat(2500),
            ")".repeat(2500)
        ))
        .unwrap_err();
        // A chain through CASE expressions, and one of casts and IS NULL, are chains too.
        let cases = vec!["CASE WHEN TRUE THEN 1 END"; 3000].join(" + ");
        depth_check(&format!("SELECT {cases} AS v")).unwrap_err();
        let casts = format!("SELECT 1{} AS v", "::int".repeat(3000));
        depth_check(&casts).unwrap_err();
        let nulls = format!("SELECT a{} AS v FROM t", " IS NULL".repeat(3000));
        depth_check(&nulls).unwrap_err();
        // Many short expressions side by side are not one deep one.
        let wide = (0..3000)
            .map(|i| format!("a + {i} AS c{i}"))
            .collect::<Vec<_>>()
            .join(", ");
        depth_check(&format!("SELECT {wide} FROM t")).unwrap();
    }
}
