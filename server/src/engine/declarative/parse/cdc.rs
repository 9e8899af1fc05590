//! `CREATE FLOW name AS AUTO CDC INTO target FROM STREAM(source) KEYS (...) ...` (PIPELINES §5),
//! read into a plain declaration; what the clauses mean is `declared/cdc`'s.

use super::{ParseError, Place, Reader};

/// Which columns a clause names: all, these, or all but these.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ColumnList {
    All,
    Only(Vec<String>),
    Except(Vec<String>),
}

impl ColumnList {
    /// The columns of `all` this list selects, in `all`'s order.
    pub fn select<'a>(&self, all: &'a [String]) -> Vec<&'a String> {
        all.iter()
            .filter(|c| match self {
                ColumnList::All => true,
                ColumnList::Only(named) => named.iter().any(|n| n.eq_ignore_ascii_case(c)),
                ColumnList::Except(named) => !named.iter().any(|n| n.eq_ignore_ascii_case(c)),
            })
            .collect()
    }
}

/// SCD type 1 keeps a key's latest row; type 2 keeps every version with `__START_AT`/`__END_AT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Scd {
    Type1,
    Type2,
}

/// `CREATE FLOW ... AS AUTO CDC INTO ...`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AutoCdc {
    pub name: String,
    pub target: String,
    /// The table or view it streams from.
    pub source: String,
    pub keys: Vec<String>,
    pub ignore_null_updates: bool,
    /// `APPLY AS DELETE WHEN`: a SQL condition on the source's row.
    pub delete_when: Option<String>,
    pub sequence_by: String,
    pub columns: ColumnList,
    pub scd: Scd,
    /// `TRACK HISTORY ON` (SCD type 2): `All` means every column but keys and sequence.
    pub track: ColumnList,
    pub at: Place,
}

impl Reader<'_> {
    /// The rest of `CREATE FLOW name AS AUTO`, `AUTO` already read.
    pub(super) fn auto_cdc(&mut self, name: String, at: Place) -> Result<AutoCdc, ParseError> {
        self.expect("cdc")?;
        self.expect("into")?;
        let target = self.defined_name("the target table")?;
        self.expect("from")?;
        self.expect("stream")?;
        let parenthesised = self.symbol('(');
        let source = self.dataset_name("the source table or view")?;
        if parenthesised && !self.symbol(')') {
            return self.error("`)`");
        }
        let mut cdc = AutoCdc {
            name,
            target,
            source,
            keys: vec![],
            ignore_null_updates: false,
            delete_when: None,
            sequence_by: String::new(),
            columns: ColumnList::All,
            scd: Scd::Type1,
            track: ColumnList::All,
            at,
        };
        self.expect("keys")?;
        cdc.keys = self.names()?;
        while self.next < self.tokens.len() {
            if self.eat("ignore") {
                self.expect("null")?;
                self.expect("updates")?;
                cdc.ignore_null_updates = true;
            } else if self.eat("apply") {
                self.expect("as")?;
                self.expect("delete")?;
                self.expect("when")?;
                cdc.delete_when = Some(self.condition()?);
            } else if self.eat("sequence") {
                self.expect("by")?;
                cdc.sequence_by = self.name("the SEQUENCE BY column")?;
            } else if self.eat("columns") {
                cdc.columns = self.column_list()?;
            } else if self.eat("stored") {
                self.expect("as")?;
                self.expect("scd")?;
                self.expect("type")?;
                cdc.scd = match self.name("1 or 2")?.as_str() {
                    "1" => Scd::Type1,
                    "2" => Scd::Type2,
                    _ => {
                        self.next -= 1;
                        return self.error("1 or 2");
                    }
                };
            } else if self.eat("track") {
                self.expect("history")?;
                self.expect("on")?;
                cdc.track = self.column_list()?;
            } else {
                return self.error(
                    "`IGNORE NULL UPDATES`, `APPLY AS DELETE WHEN`, `SEQUENCE BY`, `COLUMNS`, \
                     `STORED AS`, `TRACK HISTORY ON` or `;`",
                );
            }
        }
        if cdc.sequence_by.is_empty() {
            return self.error("`SEQUENCE BY column`");
        }
        Ok(cdc)
    }

    /// `(a, b, ...)`.
    fn names(&mut self) -> Result<Vec<String>, ParseError> {
        if !self.symbol('(') {
            return self.error("`(` and column names");
        }
        let mut out = vec![self.name("a column name")?];
        while self.symbol(',') {
            out.push(self.name("a column name")?);
        }
        if !self.symbol(')') {
            return self.error("`,` or `)`");
        }
        Ok(out)
    }

    /// `a, b` | `* EXCEPT (a, b)`.
    fn column_list(&mut self) -> Result<ColumnList, ParseError> {
        if self.symbol('*') {
            if self.eat("except") {
                return Ok(ColumnList::Except(self.names()?));
            }
            return Ok(ColumnList::All);
        }
        let mut out = vec![self.name("a column name or `*`")?];
        while self.symbol(',') {
            out.push(self.name("a column name")?);
        }
        Ok(ColumnList::Only(out))
    }

    /// A condition up to the next clause's first word (or the end of the statement).
    fn condition(&mut self) -> Result<String, ParseError> {
        const CLAUSES: [&str; 5] = ["sequence", "columns", "stored", "track", "ignore"];
        let start = self.at();
        let mut depth = 0;
        while let Some((token, _)) = self.tokens.get(self.next) {
            match token {
                super::Token::Symbol('(') => depth += 1,
                super::Token::Symbol(')') => depth -= 1,
                super::Token::Word(w)
                    if depth == 0 && CLAUSES.iter().any(|c| w.eq_ignore_ascii_case(c)) =>
                {
                    break;
                }
                _ => {}
            }
            self.next += 1;
        }
        let text = self.text[start..self.at()].trim().to_string();
        if text.is_empty() {
            return self.error("a condition");
        }
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Statement, statements};
    use super::*;

    #[test]
    fn every_clause_reads() {
        let sql = "CREATE FLOW accounts_cdc AS AUTO CDC INTO accounts\n\
                   FROM STREAM(accounts_bronze) KEYS (account_id)\n\
                   IGNORE NULL UPDATES\n\
                   APPLY AS DELETE WHEN op = 'DELETE'\n\
                   SEQUENCE BY updated_at\n\
                   COLUMNS * EXCEPT (op, source_file)\n\
                   STORED AS SCD TYPE 2\n\
                   TRACK HISTORY ON plan;";
        let Statement::AutoCdc(cdc) = &statements("a.sql", sql).unwrap()[0] else {
            panic!()
        };
        assert_eq!(
            (cdc.target.as_str(), cdc.source.as_str()),
            ("accounts", "accounts_bronze")
        );
        assert_eq!(cdc.keys, ["account_id"]);
        assert!(cdc.ignore_null_updates);
        assert_eq!(cdc.delete_when.as_deref(), Some("op = 'DELETE'"));
        assert_eq!(cdc.sequence_by, "updated_at");
        assert_eq!(
            cdc.columns,
            ColumnList::Except(vec!["op".into(), "source_file".into()])
        );
        assert_eq!(cdc.scd, Scd::Type2);
        assert_eq!(cdc.track, ColumnList::Only(vec!["plan".into()]));
        let plain = "CREATE FLOW f AS AUTO CDC INTO t FROM STREAM s KEYS (a, b) SEQUENCE BY n;";
        let Statement::AutoCdc(cdc) = &statements("a.sql", plain).unwrap()[0] else {
            panic!()
        };
        assert_eq!((cdc.scd, cdc.keys.len()), (Scd::Type1, 2));
    }

    #[test]
    fn a_missing_sequence_or_a_bad_type_is_refused_in_place() {
        let error = statements(
            "a.sql",
            "CREATE FLOW f AS AUTO CDC INTO t FROM STREAM s KEYS (a);",
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            error,
            "a.sql:1:56: expected `SEQUENCE BY column`, found the end of the statement"
        );
        let error = statements(
            "a.sql",
            "CREATE FLOW f AS AUTO CDC INTO t FROM STREAM s KEYS (a) SEQUENCE BY n STORED AS SCD TYPE 3;",
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("expected 1 or 2, found `3`"), "{error}");
    }
}
