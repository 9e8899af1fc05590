//! Tables: the rows of each Delta table, its version history, and the rows at an older version.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::api::get_table;
use crate::components::{current_lab, href};
use crate::model::TableView;
use crate::pages::loaded;

#[component]
pub fn TablesPage() -> impl IntoView {
    let query = use_query_map();
    let lab = current_lab();
    let chosen = move || {
        let q = query.read();
        // No table named: the server shows the pipeline's first.
        let name = q.get("table").unwrap_or_default();
        (lab.clone(), name, q.get("version"))
    };
    view! {
        <h1>"Tables"</h1>
        {loaded(chosen, |(lab, name, version)| get_table(lab, name, version), table_view)}
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
    let shown = if t.rows.len() < t.total_rows {
        format!("{} rows; the first {} shown", t.total_rows, t.rows.len())
    } else {
        format!("{} rows", t.total_rows)
    };
    let name = t.name.clone();
    view! {
        {tabs}
        <h2>{format!("{} at {at}", t.name)}</h2>
        <p>{shown}</p>
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
