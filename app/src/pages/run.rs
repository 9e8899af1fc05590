//! One run: each stream's figures, the offsets and versions it covered, and the check.

use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

use crate::api::get_run;
use crate::components::{VerdictBadge, current_lab, short_time};
use crate::model::{Figures, FlowRun, RunDetail, SourceRange};
use crate::pages::loaded;

#[component]
pub fn RunPage() -> impl IntoView {
    let params = use_params_map();
    let lab = current_lab();
    let id = move || (lab.clone(), params.read().get("id").unwrap_or_default());
    view! {
        {loaded(id, |(lab, id)| get_run(lab, id), |run: RunDetail| {
            let r = &run.run;
            view! {
                <h1>{format!("Run #{}", r.id)}</h1>
                <p class=format!("status {}", r.status)>
                    {format!("{} · started by {} at {} · ", r.status, r.started_by, short_time(&r.started_at))}
                    {r.finished_at.as_deref().map(|f| format!("finished {}", short_time(f)))}
                </p>
                {r.error.clone().map(|e| view! { <p class="error">{e}</p> })}
                {run.streams.into_iter().map(stream_view).collect_view()}
                <h2>"Check"</h2>
                {if run.findings.is_empty() {
                    view! { <p>"This run did not check."</p> }.into_any()
                } else {
                    view! {
                        <ul class="check">
                            {run.findings.into_iter().map(|f| view! {
                                <li><VerdictBadge verdict=f.verdict />" "{f.text}</li>
                            }).collect_view()}
                        </ul>
                    }.into_any()
                }}
            }
        })}
    }
}

/// What a flow read: a topic's offsets, a table's versions, or (a project's flows) the files
/// and the versions of the tables it streams from.
fn covered(figures: &Figures) -> String {
    let mut read: Vec<String> = figures
        .source_versions
        .iter()
        .map(|(table, (first, last))| format!("{table} versions {first}-{last}"))
        .collect();
    let files = figures.files.iter().filter(|f| !f.changed).count();
    if files > 0 {
        let rows: u64 = figures.files.iter().map(|f| f.rows).sum();
        read.push(match files {
            1 => format!("1 file ({rows} rows)"),
            n => format!("{n} files ({rows} rows)"),
        });
    }
    match (&figures.source, read.is_empty()) {
        (SourceRange::Nothing, false) => read.join(", "),
        (source, _) => range(source),
    }
}

fn range(source: &SourceRange) -> String {
    match source {
        SourceRange::Offsets { topic, partitions } => {
            let parts: Vec<String> = partitions
                .iter()
                .map(|p| format!("partition {} offsets {}-{}", p.partition, p.first, p.last))
                .collect();
            format!("{topic}: {}", parts.join(", "))
        }
        SourceRange::Versions { table, first, last } => format!("{table} versions {first}-{last}"),
        SourceRange::Nothing => "nothing new".into(),
    }
}

fn stream_view(s: FlowRun) -> impl IntoView {
    let n = &s.figures;
    let dropped = (!s.dropped.is_empty()).then(|| view! {
        <details>
            <summary>{format!("{} events not counted", s.dropped.len())}</summary>
            <ul>
                {s.dropped.iter().map(|d| view! {
                    <li>{format!("order {} {} at {} (partition {}, offset {}): {}", d.order_id, d.status, short_time(&d.event_time), d.partition, d.offset, d.reason)}</li>
                }).collect_view()}
            </ul>
        </details>
    });
    view! {
        <section class="stream" data-stream=s.flow.clone()>
            <h2>{s.flow.clone()}</h2>
            <dl>
                <dt>"read"</dt><dd>{n.rows_read}</dd>
                <dt>"written"</dt><dd>{n.rows_written}</dd>
                <dt>"late"</dt><dd>{n.rows_late}</dd>
                <dt>"duplicate"</dt><dd>{n.rows_duplicate}</dd>
                <dt>"rejected"</dt><dd>{n.rows_rejected}</dd>
                <dt>"covered"</dt><dd>{covered(n)}</dd>
                <dt>"table version"</dt><dd>{n.table_version.map(|v| v.to_string()).unwrap_or_else(|| "none (nothing committed)".into())}</dd>
                <dt>"watermark"</dt>
                <dd>{format!("{} -> {}", n.watermark_before.as_deref().map(short_time).unwrap_or_else(|| "none".into()), n.watermark_after.as_deref().map(short_time).unwrap_or_else(|| "none".into()))}</dd>
                <dt>"took"</dt><dd>{format!("{} ms", s.duration_ms)}</dd>
            </dl>
            {dropped}
        </section>
    }
}
