//! A project's Python files (`pyspark.pipelines`, or the older `dlt`), read as program text and
//! never run (PIPELINES §2, issue "The course's Python runs as written"). tree-sitter-python
//! parses the file (maintained, and it gives every node's line and column; rustpython-parser is
//! no longer updated); each decorated function becomes the statement a SQL project would write
//! for it (`frame.rs` turns its returned DataFrame into a query, `column.rs` its column
//! expressions), read by the SQL reader with the function's line, so an error names the
//! Python file and line. Anything outside the subset is refused at its line and column, saying
//! what is supported instead.

mod body;
mod calls;
mod column;
mod decorators;
mod frame;
mod join;

use std::collections::BTreeMap;

use tree_sitter::{Node, Parser};

use super::parse::{self, ParseError, Place, Statement};
use frame::Frame;

/// The deepest a Python file's syntax tree may nest before any walk of it (which recurses).
const MOST_DEPTH: usize = 200;

/// Reads every decorated function of one Python file as a statement.
pub fn statements(file: &str, text: &str) -> Result<Vec<Statement>, ParseError> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_python::LANGUAGE.into())
        .map_err(|e| {
            error_at(
                file,
                1,
                1,
                format!("the Python parser would not start: {e}"),
            )
        })?;
    let tree = parser
        .parse(text, None)
        .ok_or_else(|| error_at(file, 1, 1, "the file could not be parsed as Python".into()))?;
    let root = tree.root_node();
    let source = Source { file, text };
    source.bounded(root)?;
    if root.has_error() {
        let bad = first_error(root).unwrap_or(root);
        return Err(source.error(bad, "this is not valid Python".into()));
    }
    let mut constants: BTreeMap<String, String> = BTreeMap::new();
    let mut out = vec![];
    let mut cursor = root.walk();
    for node in root.named_children(&mut cursor) {
        match node.kind() {
            "import_statement" | "import_from_statement" | "comment" => {}
            "expression_statement" if node.named_child(0).is_some_and(|c| c.kind() == "call") => {
                let call = node.named_child(0).expect("checked");
                let sql = calls::statement(source, call, &constants)?;
                out.extend(at_line(file, node.start_position().row + 1, &sql)?);
            }
            "expression_statement" => source.module_level(node, &mut constants)?,
            "decorated_definition" => {
                let (line, sql) = source.definition(node, &constants)?;
                out.extend(at_line(file, line, &sql)?);
            }
            "function_definition" => {
                return Err(source.error(
                    node,
                    "a function without a decorator defines no dataset: add @dp.table, \
                     @dp.materialized_view or @dp.temporary_view"
                        .into(),
                ));
            }
            other => {
                return Err(source.error(
                    node,
                    format!(
                        "a {} at the top of a pipeline file is not supported: imports, \
                         constants (NAME = \"text\" or a number) and decorated functions are",
                        other.replace('_', " ")
                    ),
                ));
            }
        }
    }
    Ok(out)
}

/// The statement `sql` (one line) read as if it stood at `line` of `file`: the SQL reader's
/// errors and the graph's places name the Python line.
fn at_line(file: &str, line: usize, sql: &str) -> Result<Vec<Statement>, ParseError> {
    let padded = format!("{}{sql}", "\n".repeat(line.saturating_sub(1)));
    parse::statements(file, &padded)
}

fn error_at(file: &str, line: usize, column: usize, message: String) -> ParseError {
    ParseError {
        place: Place {
            file: file.to_string(),
            line,
            column,
        },
        message,
    }
}

fn first_error(node: Node) -> Option<Node> {
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if n.is_error() || n.is_missing() {
            return Some(n);
        }
        let mut cursor = n.walk();
        let children: Vec<Node> = n.children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    None
}

/// One file's text, to read nodes from and to place errors.
#[derive(Clone, Copy)]
pub(super) struct Source<'a> {
    file: &'a str,
    text: &'a str,
}

impl<'a> Source<'a> {
    pub(super) fn text(&self, node: Node) -> &'a str {
        &self.text[node.byte_range()]
    }

    pub(super) fn error(&self, node: Node, message: String) -> ParseError {
        let at = node.start_position();
        error_at(self.file, at.row + 1, at.column + 1, message)
    }

    /// Refuses a tree deeper than [`MOST_DEPTH`], walked without recursing.
    fn bounded(&self, root: Node) -> Result<(), ParseError> {
        let mut stack = vec![(root, 0usize)];
        while let Some((node, depth)) = stack.pop() {
            if depth > MOST_DEPTH {
                return Err(self.error(
                    node,
                    format!("the code nests deeper than {MOST_DEPTH} levels here"),
                ));
            }
            let mut cursor = node.walk();
            for child in node.named_children(&mut cursor) {
                stack.push((child, depth + 1));
            }
        }
        Ok(())
    }

    /// A module-level statement: `NAME = "text"` (or a number) is a constant later code may
    /// name; a docstring is skipped; anything else is refused.
    fn module_level(
        &self,
        node: Node,
        constants: &mut BTreeMap<String, String>,
    ) -> Result<(), ParseError> {
        let Some(inner) = node.named_child(0) else {
            return Ok(());
        };
        match inner.kind() {
            "string" => Ok(()),
            "assignment" => {
                let (Some(left), Some(right)) = (
                    inner.child_by_field_name("left"),
                    inner.child_by_field_name("right"),
                ) else {
                    return Err(self.error(inner, "an assignment without a value".into()));
                };
                if left.kind() != "identifier" {
                    return Err(self.error(left, "assign constants to one name each".into()));
                }
                let value = column::constant(*self, right, constants)?;
                let value = match right.kind() {
                    "integer" | "float" => format!("{}{value}", column::NUMBER),
                    _ => value,
                };
                constants.insert(self.text(left).to_string(), value);
                Ok(())
            }
            _ => Err(self.error(
                inner,
                "only constants (NAME = \"text\") may run at a pipeline file's top level: Reckon \
                 reads the code, it never runs it"
                    .into(),
            )),
        }
    }

    /// A decorated function as one SQL statement (on one line), and the line it starts on.
    fn definition(
        &self,
        node: Node,
        constants: &BTreeMap<String, String>,
    ) -> Result<(usize, String), ParseError> {
        let Some(function) = node.child_by_field_name("definition") else {
            return Err(self.error(node, "a decorator must stand before a function".into()));
        };
        if function.kind() != "function_definition" {
            return Err(self.error(function, "decorate a function (def name(): ...)".into()));
        }
        let name = function
            .child_by_field_name("name")
            .map(|n| self.text(n).to_string())
            .unwrap_or_default();
        // Spark calls a dataset's function with no arguments; a default value would be code.
        if let Some(parameter) = function
            .child_by_field_name("parameters")
            .and_then(|p| p.named_child(0))
        {
            return Err(self.error(
                parameter,
                "a dataset's function takes no parameters: def name(): return ...".into(),
            ));
        }
        let mut cursor = node.walk();
        let decorators: Vec<Node> = node
            .named_children(&mut cursor)
            .filter(|n| n.kind() == "decorator")
            .collect();
        let declared = decorators::Declared::of(*self, &decorators, &name, constants)?;
        let body = function
            .child_by_field_name("body")
            .ok_or_else(|| self.error(function, "a function without a body".into()))?;
        let returned = returned(*self, body)?;
        let frame = Frame::of(*self, returned, constants)?;
        let sql = declared.statement(*self, &frame, function)?;
        Ok((node.start_position().row + 1, sql))
    }
}

/// The expression a function's body returns: its one statement (after an optional docstring)
/// must be `return <DataFrame>`.
fn returned<'t>(source: Source, body: Node<'t>) -> Result<Node<'t>, ParseError> {
    let mut cursor = body.walk();
    let statements: Vec<Node> = body
        .named_children(&mut cursor)
        .filter(|n| n.kind() != "comment")
        .collect();
    let statements: Vec<Node> = match statements.as_slice() {
        [first, rest @ ..]
            if first.kind() == "expression_statement"
                && first.named_child(0).is_some_and(|s| s.kind() == "string") =>
        {
            rest.to_vec()
        }
        all => all.to_vec(),
    };
    match statements.as_slice() {
        [one] if one.kind() == "return_statement" => one
            .named_child(0)
            .ok_or_else(|| source.error(*one, "return the DataFrame the dataset holds".into())),
        [one, ..] => Err(source.error(
            *one,
            "a dataset's function must only `return` a DataFrame expression: Reckon reads the \
             code and cannot follow loops, conditions, assignments or other statements"
                .into(),
        )),
        [] => Err(source.error(body, "the function returns nothing".into())),
    }
}
