//! The statements of a pipeline's `.sql` files (PIPELINES §2), read into plain declarations. Only
//! the statements' own words are read here; each query is kept as text with its position, for
//! `sql.rs` to hand to DataFusion's parser. An error names `file:line:column` and what was expected.

mod cdc;
pub mod depth;
mod tokens;

use std::collections::BTreeMap;

pub use cdc::{AutoCdc, ColumnList, Scd};
pub use tokens::{ParseError, Place, place};
use tokens::{Spanned, Token, split, tokens};

/// What a dataset is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Kind {
    StreamingTable,
    MaterializedView,
    TemporaryView,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::StreamingTable => "streaming table",
            Kind::MaterializedView => "materialized view",
            Kind::TemporaryView => "view",
        }
    }
}

/// What happens to a row that breaks an expectation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Violation {
    /// Written and counted.
    Warn,
    /// Not written, counted, kept in `_quarantine`.
    Drop,
    /// The flow fails and commits nothing.
    Fail,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Expectation {
    pub name: String,
    /// A SQL condition; a row passes when it is true (false and NULL fail).
    pub condition: String,
    pub on_violation: Violation,
}

/// A query as written, and where it starts.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QueryText {
    pub sql: String,
    pub at: Place,
}

/// `CREATE ... STREAMING TABLE | MATERIALIZED VIEW | TEMPORARY VIEW`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Dataset {
    pub kind: Kind,
    pub name: String,
    pub expectations: Vec<Expectation>,
    pub comment: Option<String>,
    pub properties: BTreeMap<String, String>,
    pub query: Option<QueryText>,
    pub at: Place,
}

/// `CREATE FLOW name AS INSERT INTO target BY NAME query`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InsertFlow {
    pub name: String,
    pub target: String,
    pub query: QueryText,
    pub at: Place,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Statement {
    Dataset(Dataset),
    Insert(InsertFlow),
    AutoCdc(AutoCdc),
}

/// Reads every statement of one file.
pub fn statements(file: &str, text: &str) -> Result<Vec<Statement>, ParseError> {
    let mut out = vec![];
    for (start, end) in split(file, text)? {
        out.push(Reader::new(file, text, start, end)?.statement()?);
    }
    Ok(out)
}

struct Reader<'a> {
    file: &'a str,
    text: &'a str,
    tokens: Vec<Spanned>,
    next: usize,
    end: usize,
}

impl<'a> Reader<'a> {
    fn new(file: &'a str, text: &'a str, start: usize, end: usize) -> Result<Self, ParseError> {
        let tokens = tokens(file, text, start, end)?;
        depth::check(file, text, &tokens)?;
        Ok(Self {
            file,
            text,
            tokens,
            next: 0,
            end,
        })
    }

    fn at(&self) -> usize {
        self.tokens.get(self.next).map_or(self.end, |t| t.1)
    }

    fn error<T>(&self, expected: &str) -> Result<T, ParseError> {
        let found = match self.tokens.get(self.next) {
            Some((Token::Word(w), _)) => format!("`{w}`"),
            Some((Token::Text(t), _)) => format!("'{t}'"),
            Some((Token::Symbol(s), _)) => format!("`{s}`"),
            None => "the end of the statement".into(),
        };
        Err(ParseError {
            place: place(self.file, self.text, self.at()),
            message: format!("expected {expected}, found {found}"),
        })
    }

    /// Takes the next word if it is `word` (any case).
    fn eat(&mut self, word: &str) -> bool {
        match self.tokens.get(self.next) {
            Some((Token::Word(w), _)) if w.eq_ignore_ascii_case(word) => {
                self.next += 1;
                true
            }
            _ => false,
        }
    }

    fn expect(&mut self, word: &str) -> Result<(), ParseError> {
        match self.eat(word) {
            true => Ok(()),
            false => self.error(&format!("`{}`", word.to_uppercase())),
        }
    }

    fn symbol(&mut self, symbol: char) -> bool {
        match self.tokens.get(self.next) {
            Some((Token::Symbol(s), _)) if *s == symbol => {
                self.next += 1;
                true
            }
            _ => false,
        }
    }

    fn name(&mut self, what: &str) -> Result<String, ParseError> {
        match self.tokens.get(self.next) {
            Some((Token::Word(w), _)) => {
                self.next += 1;
                Ok(w.clone())
            }
            _ => self.error(what),
        }
    }

    /// A dataset's or flow's name, in lower case: Spark resolves them without regard to case, so
    /// `Bronze` and `bronze` name one table (a query's reads are lower-cased too).
    fn dataset_name(&mut self, what: &str) -> Result<String, ParseError> {
        let at = self.next;
        let name = self.name(what)?.to_lowercase();
        if !crate::engine::tables::is_table_name(&name) {
            self.next = at;
            return self.error(&format!(
                "{what}: letters, digits and _, starting with a letter or _ (it names the \
                 table's folder)"
            ));
        }
        Ok(name)
    }

    /// The name of a dataset or flow being defined: also not starting with `_`, which Reckon's
    /// own tables do (`_quarantine`); a learner's `_quarantine` would be written over by them.
    fn defined_name(&mut self, what: &str) -> Result<String, ParseError> {
        let at = self.next;
        let name = self.dataset_name(what)?;
        if name.starts_with('_') {
            self.next = at;
            return self.error(&format!(
                "{what}: {name} starts with `_`, which Reckon keeps for its own tables \
                 (`_quarantine`); pick another name"
            ));
        }
        Ok(name)
    }

    fn text_literal(&mut self, what: &str) -> Result<String, ParseError> {
        match self.tokens.get(self.next) {
            Some((Token::Text(t), _)) => {
                self.next += 1;
                Ok(t.clone())
            }
            _ => self.error(what),
        }
    }

    /// The rest of the statement, from the next token, as a query.
    fn query(&mut self) -> Result<QueryText, ParseError> {
        if self.next >= self.tokens.len() {
            return self.error("a query");
        }
        let start = self.at();
        self.next = self.tokens.len();
        Ok(QueryText {
            sql: self.text[start..self.end].trim_end().to_string(),
            at: place(self.file, self.text, start),
        })
    }

    fn statement(mut self) -> Result<Statement, ParseError> {
        let at = place(self.file, self.text, self.at());
        self.expect("create")?;
        if self.eat("flow") {
            return self.flow(at);
        }
        if self.eat("or") {
            self.expect("refresh")?;
        }
        let kind = if self.eat("streaming") {
            self.expect("table")?;
            Kind::StreamingTable
        } else if self.eat("materialized") {
            self.expect("view")?;
            Kind::MaterializedView
        } else if self.eat("temporary") || self.eat("temp") {
            self.expect("view")?;
            Kind::TemporaryView
        } else {
            return self
                .error("`STREAMING TABLE`, `MATERIALIZED VIEW`, `TEMPORARY VIEW` or `FLOW`");
        };
        let name = self.defined_name("a name")?;
        let mut dataset = Dataset {
            kind,
            name,
            expectations: vec![],
            comment: None,
            properties: BTreeMap::new(),
            query: None,
            at,
        };
        if self.symbol('(') {
            dataset.expectations = self.expectations()?;
        }
        loop {
            if self.eat("comment") {
                dataset.comment = Some(self.text_literal("the comment as 'text'")?);
            } else if self.eat("tblproperties") {
                dataset.properties = self.properties()?;
            } else {
                break;
            }
        }
        if self.eat("as") {
            dataset.query = Some(self.query()?);
        } else if self.next < self.tokens.len() {
            return self.error("`AS`, `COMMENT`, `TBLPROPERTIES` or `;`");
        } else if kind != Kind::StreamingTable {
            return self.error(&format!("`AS query`: a {} needs one", kind.as_str()));
        }
        Ok(Statement::Dataset(dataset))
    }

    fn flow(mut self, at: Place) -> Result<Statement, ParseError> {
        let name = self.defined_name("the flow's name")?;
        self.expect("as")?;
        if self.eat("auto") {
            return Ok(Statement::AutoCdc(self.auto_cdc(name, at)?));
        }
        self.expect("insert")?;
        self.expect("into")?;
        let target = self.defined_name("the target table")?;
        self.expect("by")?;
        self.expect("name")?;
        let query = self.query()?;
        Ok(Statement::Insert(InsertFlow {
            name,
            target,
            query,
            at,
        }))
    }

    /// `CONSTRAINT rule EXPECT (condition) [ON VIOLATION ...], ... )`: the `(` already read.
    fn expectations(&mut self) -> Result<Vec<Expectation>, ParseError> {
        let mut out = vec![];
        loop {
            self.expect("constraint")?;
            let name = self.name("the rule's name")?;
            self.expect("expect")?;
            if !self.symbol('(') {
                return self.error("`(` and the rule's condition");
            }
            let condition = self.balanced()?;
            let on_violation = if self.eat("on") {
                self.expect("violation")?;
                if self.eat("drop") {
                    self.expect("row")?;
                    Violation::Drop
                } else if self.eat("fail") {
                    self.expect("update")?;
                    Violation::Fail
                } else {
                    return self.error("`DROP ROW` or `FAIL UPDATE`");
                }
            } else {
                Violation::Warn
            };
            out.push(Expectation {
                name,
                condition,
                on_violation,
            });
            if self.symbol(')') {
                return Ok(out);
            }
            if !self.symbol(',') {
                return self.error("`,` or `)`");
            }
        }
    }

    /// The text up to the `)` closing a `(` already read.
    fn balanced(&mut self) -> Result<String, ParseError> {
        let start = self.at();
        let mut depth = 1;
        while let Some((token, at)) = self.tokens.get(self.next) {
            match token {
                Token::Symbol('(') => depth += 1,
                Token::Symbol(')') => {
                    depth -= 1;
                    if depth == 0 {
                        let condition = self.text[start..*at].trim().to_string();
                        self.next += 1;
                        return Ok(condition);
                    }
                }
                _ => {}
            }
            self.next += 1;
        }
        self.error("`)`")
    }

    fn properties(&mut self) -> Result<BTreeMap<String, String>, ParseError> {
        if !self.symbol('(') {
            return self.error("`(`");
        }
        let mut out = BTreeMap::new();
        loop {
            let key = self.text_literal("a property's name as 'text'")?;
            if !self.symbol('=') {
                return self.error("`=`");
            }
            let value = self.text_literal("the property's value as 'text'")?;
            out.insert(key, value);
            if self.symbol(')') {
                return Ok(out);
            }
            if !self.symbol(',') {
                return self.error("`,` or `)`");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SILVER: &str = "-- silver\nCREATE OR REFRESH STREAMING TABLE silver_tickets (\n  \
        CONSTRAINT valid_status EXPECT (status IN ('open', 'closed')) ON VIOLATION DROP ROW,\n  \
        CONSTRAINT non_negative_response EXPECT (first_response_s >= 0)\n)\n\
        COMMENT 'Cleaned; deduplicated'\n\
        TBLPROPERTIES ('reckon.dropDuplicates' = 'ticket_id')\n\
        AS SELECT *, to_date(created_at) AS ticket_date FROM STREAM(bronze_tickets);\n\
        CREATE FLOW more AS INSERT INTO silver_tickets BY NAME SELECT * FROM STREAM t;";

    #[test]
    fn a_streaming_table_reads_with_its_rules_properties_and_query() {
        let statements = statements("t.sql", SILVER).unwrap();
        let Statement::Dataset(silver) = &statements[0] else {
            panic!("{statements:?}")
        };
        assert_eq!(silver.kind, Kind::StreamingTable);
        assert_eq!(silver.name, "silver_tickets");
        assert_eq!(
            silver.expectations[0],
            Expectation {
                name: "valid_status".into(),
                condition: "status IN ('open', 'closed')".into(),
                on_violation: Violation::Drop,
            }
        );
        assert_eq!(silver.expectations[1].on_violation, Violation::Warn);
        assert_eq!(silver.comment.as_deref(), Some("Cleaned; deduplicated"));
        assert_eq!(silver.properties["reckon.dropDuplicates"], "ticket_id");
        let query = silver.query.as_ref().unwrap();
        assert!(query.sql.starts_with("SELECT *, to_date"), "{}", query.sql);
        assert_eq!((query.at.line, query.at.column), (8, 4));
        assert_eq!((silver.at.line, silver.at.column), (2, 1));
        let Statement::Insert(flow) = &statements[1] else {
            panic!()
        };
        assert_eq!(
            (flow.name.as_str(), flow.target.as_str()),
            ("more", "silver_tickets")
        );
    }

    #[test]
    fn an_error_names_the_file_line_and_column_and_what_was_expected() {
        let error = statements(
            "p/x.sql",
            "CREATE STREAMING TABLE t\n  (CONSTRAINT r EXPECT x > 0) AS SELECT 1;",
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            error,
            "p/x.sql:2:24: expected `(` and the rule's condition, found `x`"
        );
        let error = statements("x.sql", "CREATE MATERIALIZED VIEW g AS SELECT 1")
            .unwrap_err()
            .to_string();
        assert!(error.contains("expected `;`"), "{error}");
        let error = statements("x.sql", "CREATE TABLE g AS SELECT 1;")
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("x.sql:1:8: expected `STREAMING TABLE`"),
            "{error}"
        );
    }
}
