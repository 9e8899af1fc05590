//! Tables: the rows of each Delta table, its version history, and the rows at an older version.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::api::get_table;
use crate::components::{current_lab, href};
use crate::model::{RowsWanted, TableView};
use crate::pages::loaded;

#[component]
pub fn TablesPage() -> impl IntoView {
    let query = use_query_map();
    let lab = current_lab();
    let chosen = move || {
        let q = query.read();
        // No table named: the server shows the pipeline's first.
        let name = q.get("table").unwrap_or_default();
        let wanted = (q.get("column"), q.get("op"), q.get("value"), q.get("page"));
        (lab.clone(), name, q.get("version"), wanted)
    };
    view! {
        <h1>"Tables"</h1>
        {loaded(chosen, |(lab, name, version, (column, op, value, page))| get_table(lab, name, version, column, op, value, page), table_view)}
    }
}

/// The page's address for table `t` with `wanted`'s filter and page `page`.
fn address(t: &TableView, page: usize) -> String {
    let mut query = format!("/tables?table={}", t.name);
    if let Some(v) = t.version.filter(|v| Some(*v) != t.latest_version) {
        query.push_str(&format!("&version={v}"));
    }
    if let Some(column) = &t.wanted.column {
        let encode = |s: &str| {
            s.bytes()
                .map(|b| match b {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                        (b as char).to_string()
                    }
                    b => format!("%{b:02X}"),
                })
                .collect::<String>()
        };
        query.push_str(&format!(
            "&column={}&op={}&value={}",
            encode(column),
            encode(t.wanted.op.as_deref().unwrap_or("=")),
            encode(t.wanted.value.as_deref().unwrap_or_default())
        ));
    }
    if page > 0 {
        query.push_str(&format!("&page={page}"));
    }
    href(&query)
}

/// The filter: a column, a comparison and a value (sent as the page's address, so it can be
/// shared and kept).
fn filter_form(t: &TableView) -> impl IntoView + use<> {
    let chosen = t.wanted.column.clone().unwrap_or_default();
    let op = t.wanted.op.clone().unwrap_or_else(|| "=".into());
    let version = t
        .version
        .filter(|v| Some(*v) != t.latest_version)
        .map(|v| view! { <input type="hidden" name="version" value=v.to_string() /> });
    view! {
        <form method="get" class="filter rows-filter">
            <input type="hidden" name="table" value=t.name.clone() />
            {version}
            <label class="field"><span>"column"</span>
                <select name="column">
                    <option value="" selected=chosen.is_empty()>"(all rows)"</option>
                    {t.columns.iter().map(|c| view! { <option value=c.clone() selected=*c == chosen>{c.clone()}</option> }).collect_view()}
                </select>
            </label>
            <label class="field"><span>"is"</span>
                <select name="op">
                    {RowsWanted::OPS.iter().map(|o| view! { <option value=*o selected=*o == op>{*o}</option> }).collect_view()}
                </select>
            </label>
            <label class="field"><span>"value"</span>
                <input name="value" value=t.wanted.value.clone().unwrap_or_default() maxlength="200" />
            </label>
            <button type="submit">"Show"</button>
        </form>
    }
}

fn table_view(t: TableView) -> impl IntoView {
    let tabs = view! {
        <nav class="tabs">
            {t.tables.iter().map(|name| view! { <a href=href(&format!("/tables?table={name}"))>{name.clone()}</a> }).collect_view()}
        </nav>
    };
    let Some(version) = t.version else {
        return view! { {tabs}<h2>{t.name}</h2><p>"This table does not exist yet: the first run creates it."</p> }.into_any();
    };
    let at = if Some(version) == t.latest_version {
        format!("version {version} (latest)")
    } else {
        format!(
            "version {version} (latest is {})",
            t.latest_version.unwrap_or(version)
        )
    };
    let first = t.wanted.page * t.page_size;
    let shown = match (t.wanted.column.is_some(), t.rows.len()) {
        (true, 0) => format!("{} rows; none matches the filter", t.total_rows),
        (true, n) => format!(
            "{} rows; {} match, rows {} to {} of them shown",
            t.total_rows,
            t.matching_rows,
            first + 1,
            first + n
        ),
        (false, n) if n < t.total_rows => format!(
            "{} rows; rows {} to {} shown",
            t.total_rows,
            first + 1,
            first + n
        ),
        (false, _) => format!("{} rows", t.total_rows),
    };
    let pages = {
        let previous = (t.wanted.page > 0)
            .then(|| view! { <a class="previous" href=address(&t, t.wanted.page - 1)>"Previous rows"</a> });
        let next = (first + t.rows.len() < t.matching_rows)
            .then(|| view! { <a class="next" href=address(&t, t.wanted.page + 1)>"Next rows"</a> });
        view! { <p class="pages">{previous}" "{next}</p> }
    };
    let form = filter_form(&t);
    let name = t.name.clone();
    view! {
        {tabs}
        <h2>{format!("{} at {at}", t.name)}</h2>
        {form}
        <p class="shown">{shown}</p>
        <div class="scroll">
            <table class="rows" data-table=t.name.clone()>
                <tbody>
                <tr>{t.columns.into_iter().map(|c| view! { <th>{c}</th> }).collect_view()}</tr>
                {t.rows.into_iter().map(|row| view! {
                    <tr>{row.into_iter().map(|cell| view! { <td>{cell}</td> }).collect_view()}</tr>
                }).collect_view()}
                </tbody>
            </table>
        </div>
        {pages}
        <h2>"Versions"</h2>
        <table class="versions">
            <tbody>
            <tr><th>"version"</th><th>"committed"</th><th>"operation"</th></tr>
            {t.versions.into_iter().map(|v| view! {
                <tr>
                    <td><a href=href(&format!("/tables?table={name}&version={}", v.version))>{v.version}</a></td>
                    <td>{v.timestamp.unwrap_or_default()}</td>
                    <td>{v.operation.unwrap_or_default()}</td>
                </tr>
            }).collect_view()}
            </tbody>
        </table>
    }.into_any()
}
