//! Landing: the lab's `landing/` folder, where `read_files` finds new files. A learner uploads
//! files (a plain multipart form to the JSON API, which sends the browser back here) or lands
//! days of week 14's example; every file is listed with the run that read it and what became of
//! its rows.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::api::get_settings;
use crate::api::project::{LandExample, SetRunOnArrival, get_landing};
use crate::components::{
    ErrorLine, FormScope, IfWriter, Live, Session, current_lab, field_error, href, short_time,
};
use crate::model::{DEFAULT_LAB, LandedFile, Settings};
use crate::pages::loaded;

#[component]
pub fn LandingPage() -> impl IntoView {
    let query = use_query_map();
    // What the upload form's post said, when the server sent the browser back here.
    let said = move || {
        let q = query.read();
        match (q.get("uploaded"), q.get("error")) {
            (_, Some(error)) => Some(
                view! { <p class="error" role="alert">{format!("Nothing uploaded: {error}")}</p> }
                    .into_any(),
            ),
            (Some(n), None) => Some(
                view! { <p class="outcome succeeded">{match n.as_str() {
                    "1" => "Uploaded 1 file.".to_string(),
                    n => format!("Uploaded {n} files."),
                }}</p> }
                .into_any(),
            ),
            _ => None,
        }
    };
    view! {
        <h1>"Landing"</h1>
        <p class="lead">"Files put here are read by the next run, each once: a file changed after it was loaded is not read again."</p>
        <p class="note volumes">
            "The course's Python reads Databricks volumes: "
            <code>"/Volumes/<catalog>/<schema>/<volume>/<dir>"</code>
            " is this lab's "<code>"landing/<dir>"</code>", and the guided lab's "
            <code>"/Volumes/workspace/support/landing/"</code>" is "<code>"landing/"</code>" itself."
        </p>
        <IfWriter>
            <div class="landing-forms">
                <UploadForm />
                <LandForms />
            </div>
        </IfWriter>
        <ArrivalSetting />
        {said}
        {loaded(current_lab, get_landing, files_view)}
    }
}

/// Uploads into `landing/<folder>/`. The form posts straight to the API (no JavaScript needed);
/// a form cannot set a header, so the session's CSRF token rides in the address.
#[component]
fn UploadForm() -> impl IntoView {
    let session = Session::resource();
    let lab = current_lab();
    view! {
        <Suspense>
            {move || {
                let lab = lab.clone();
                Suspend::new(async move {
                    let csrf = match session {
                        Some(s) => s.await.ok().and_then(|s| s.csrf),
                        None => None,
                    };
                    let base = match lab.as_str() {
                        DEFAULT_LAB => "/api/landing".to_string(),
                        lab => format!("/api/labs/{lab}/landing"),
                    };
                    let action = match csrf {
                        Some(token) => format!("{base}?csrf={token}"),
                        None => base,
                    };
                    view! {
                        <form method="post" enctype="multipart/form-data" action=action class="upload-form">
                            <h2>"Upload files"</h2>
                            <label class="field">
                                <span>"into landing/"</span>
                                <input name="folder" value="tickets" />
                            </label>
                            <input type="file" name="file" multiple=true />
                            <button type="submit" class="primary">"Upload"</button>
                        </form>
                    }
                })
            }}
        </Suspense>
    }
}

/// Lands days of week 14's example, or its file of bad rows.
#[component]
fn LandForms() -> impl IntoView {
    let days = ServerAction::<LandExample>::new();
    let bad = ServerAction::<LandExample>::new();
    Effect::new(move |_| {
        if days.value().get().is_some() || bad.value().get().is_some() {
            Live::bump();
        }
    });
    let result: Signal<_> = days.value().into();
    view! {
        <div class="example-forms">
            <h2>"Week 14's example files"</h2>
            <ActionForm action=days attr:class="land-form">
                <FormScope />
                <label class="field">
                    <span>"days"</span>
                    <input name="days" value="1-30" size="6" />
                    {field_error(result, "days")}
                </label>
                <button type="submit" disabled=move || days.pending().get()>"Land these days"</button>
            </ActionForm>
            <ActionForm action=bad attr:class="bad-rows-form">
                <FormScope />
                <input type="hidden" name="bad_rows" value="true" />
                <button type="submit" disabled=move || bad.pending().get()>"Land the bad rows"</button>
            </ActionForm>
            {move || bad.value().get().and_then(Result::err).map(|error| view! { <ErrorLine error /> })}
        </div>
    }
}

fn files_view(files: Vec<LandedFile>) -> impl IntoView {
    if files.is_empty() {
        return view! { <p>"No files have landed yet."</p> }.into_any();
    }
    let count = |n: Option<u64>| n.map(|n| n.to_string()).unwrap_or_else(|| "-".into());
    view! {
        <table class="landed">
            <thead>
                <tr><th>"file"</th><th>"size"</th><th>"landed"</th><th>"read by"</th><th>"rows"</th><th>"rescued"</th><th>"dropped by rule"</th><th></th></tr>
            </thead>
            <tbody>
                {files.into_iter().map(|f| {
                    let run = match f.read_by_run {
                        Some(id) => view! { <a href=href(&format!("/runs/{id}"))>{format!("run #{id}")}</a> }.into_any(),
                        None => view! { <span class="waiting">"not read yet"</span> }.into_any(),
                    };
                    let path = f.path.clone();
                    view! {
                        <tr data-file=path data-run=f.read_by_run.map(|r| r.to_string()).unwrap_or_default()>
                            <td>{f.path}</td>
                            <td class="n">{size(f.size)}</td>
                            <td>{short_time(&f.landed_at)}</td>
                            <td>{run}</td>
                            <td class="n">{count(f.rows)}</td>
                            <td class="n">{count(f.rescued)}</td>
                            <td class="n">{f.dropped}</td>
                            <td>{f.changed_after_load.then_some("changed after it was loaded: not read again")}</td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }.into_any()
}

fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / (1 << 10) as f64),
        b => format!("{b} B"),
    }
}

/// "Run when new files land", beside the schedule: a checkbox for who may change the lab, the
/// setting in words for the others.
#[component]
fn ArrivalSetting() -> impl IntoView {
    let save = ServerAction::<SetRunOnArrival>::new();
    Effect::new(move |_| {
        if save.value().get().is_some() {
            Live::bump();
        }
    });
    let said = |on: bool| match on {
        true => {
            "Runs start on their own when files land (after a moment of quiet), recorded as started by file-arrival."
        }
        false => {
            "Runs start from the run button, the schedule or the API; landing files does not start one."
        }
    };
    view! {
        {loaded(current_lab, get_settings, move |settings: Settings| {
            let on = settings.run_on_arrival;
            view! {
                <p class="arrival" data-arrival=on.to_string()>{said(on)}</p>
                <IfWriter>
                    <ActionForm action=save attr:class="arrival-form">
                        <FormScope />
                        <label class="confirm">
                            <input type="checkbox" name="on" value="true" checked=on />
                            " run when new files land"
                        </label>
                        <button type="submit">"Save"</button>
                    </ActionForm>
                </IfWriter>
            }
        })}
    }
}
