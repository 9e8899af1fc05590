//! Pipeline code: the lab's project files, highlighted with line numbers; a learner edits them
//! (a textarea, which the page highlights as it is typed once JavaScript runs) and saves, and a
//! save the project would not read with is refused at its line, and one whose flows do not
//! resolve is kept with a warning ("Validate" asks the same at any time). Starting from week 14's example,
//! or going back to the course's streams, asks first when the lab has tables.

use leptos::prelude::*;

use crate::api::ApiError;
use crate::api::project::{SaveFile, SwitchPipeline, ValidateProject, get_code};
use crate::components::{ErrorLine, FormScope, IfWriter, Live, current_lab};
use crate::model::{Example, PipelineKind, ProjectCode, ProjectFile, Validation};
use crate::pages::loaded;
use crate::pages::sql::highlighted;

#[component]
pub fn CodePage() -> impl IntoView {
    view! {
        <h1>"Pipeline code"</h1>
        {loaded(current_lab, get_code, |code: ProjectCode| match code.kind {
            PipelineKind::Course => view! {
                <p class="lead">"This lab runs the course's pipeline: Kafka topic → bronze_orders → orders → hourly_sales, written in Rust."</p>
                <Switch to=PipelineKind::Project has_tables=code.has_tables />
                <Switch to=PipelineKind::Project example=Example::SupportPython has_tables=code.has_tables />
                <Switch to=PipelineKind::Project example=Example::Shop has_tables=code.has_tables />
            }.into_any(),
            PipelineKind::Project => view! {
                <p class="lead">"This lab runs its own declarative pipeline: the code below (SQL, or the course's Python, which Reckon reads and never runs). A save is kept only if the project still reads; an error is shown at its line. A flow whose names or columns do not resolve is saved with a warning: runs refuse the project until it does."</p>
                <Validate />
                {code.files.into_iter().map(|file| view! { <FileEditor file /> }).collect_view()}
                <Switch to=PipelineKind::Course has_tables=code.has_tables />
            }.into_any(),
        })}
    }
}

/// The form that switches the lab's pipeline, with the confirmation a reset needs.
#[component]
fn Switch(to: PipelineKind, #[prop(optional)] example: Example, has_tables: bool) -> impl IntoView {
    let switch = ServerAction::<SwitchPipeline>::new();
    Effect::new(move |_| {
        if switch.value().get().is_some_and(|r| r.is_ok()) {
            Live::bump();
        }
    });
    let (target, label, class) = match (to, example) {
        (PipelineKind::Project, Example::Support) => {
            ("project", "Start from the week-14 example", "primary")
        }
        (PipelineKind::Project, Example::Shop) => {
            ("shop", "Start from module 9 written in SQL", "primary")
        }
        (PipelineKind::Project, Example::SupportPython) => (
            "python",
            "Start from the week-14 example in the course's Python",
            "primary",
        ),
        (PipelineKind::Course, _) => ("course", "Go back to the course's pipeline", ""),
    };
    let form = move || {
        view! {
            <ActionForm action=switch attr:class="switch-form" attr:data-switch=target>
                <FormScope />
                <input type="hidden" name="to" value=target />
                {has_tables.then(|| view! {
                    <label class="confirm">
                        <input type="checkbox" name="confirm" value="true" />
                        " reset this lab's tables (landed files and run history stay)"
                    </label>
                })}
                <button type="submit" class=class>{label}</button>
            </ActionForm>
        }
    };
    let error = move || {
        switch
            .value()
            .get()
            .and_then(Result::err)
            .map(|error| view! { <ErrorLine error /> })
    };
    view! { <IfWriter>{form}</IfWriter>{error} }
}

/// One file: highlighted with line numbers for everyone; an editor for who may change the lab.
#[component]
fn FileEditor(file: ProjectFile) -> impl IntoView {
    let save = ServerAction::<SaveFile>::new();
    let text = RwSignal::new(file.text.clone());
    let sql = file.path.ends_with(".sql");
    // Set once the page runs in the browser: the textarea then turns transparent over the
    // highlighted copy that follows it. Without JavaScript it stays a plain textarea.
    let live = RwSignal::new(false);
    Effect::new(move |_| live.set(true));
    Effect::new(move |_| {
        if save.value().get().is_some_and(|r| r.is_ok()) {
            Live::bump();
        }
    });
    let bad_line = move || match save.value().get() {
        Some(Err(ApiError::AtLine { line, .. })) => Some(line),
        _ => None,
    };
    let gutter = move || {
        let lines = text.with(|t| t.lines().count()).max(1);
        (1..=lines)
            .map(|n| {
                let class = if bad_line() == Some(n) { "bad" } else { "" };
                view! { <span class=class>{n}</span> }
            })
            .collect_view()
    };
    let shown = move || text.with(|t| highlighted(t, sql));
    let rows = file.text.lines().count().clamp(6, 40);
    let path = file.path.clone();
    let initial = file.text.clone();
    let editor = move || {
        let (path, initial) = (path.clone(), initial.clone());
        let (form_file, field) = (path.clone(), path.clone());
        view! {
            <ActionForm action=save attr:class="save-form" attr:data-file=form_file>
                <FormScope />
                <input type="hidden" name="path" value=field />
                <div class="editor" class:live=move || live.get()>
                    <pre class="gutter" aria-hidden="true">{gutter}</pre>
                    <div class="layers">
                        <pre class="highlight" aria-hidden="true">{shown}"\n"</pre>
                        <textarea
                            name="text"
                            rows=rows
                            spellcheck="false"
                            data-file=path
                            prop:value=move || text.get()
                            on:input=move |ev| text.set(event_target_value(&ev))
                        >{initial}</textarea>
                    </div>
                </div>
                <button type="submit" class="primary" disabled=move || save.pending().get()>"Save"</button>
            </ActionForm>
        }
    };
    let outcome = move || match save.value().get() {
        Some(Ok(code)) => Some(
            view! {
                <p class="outcome succeeded">"Saved: the project reads."</p>
                {code.validation.map(|validation| view! { <Validated validation /> })}
            }
            .into_any(),
        ),
        Some(Err(ApiError::AtLine {
            field,
            line,
            column,
            message,
        })) => Some(
            view! {
                <p class="error code-error" role="alert" data-line=line>
                    {format!("Not saved. {field}, line {line}, column {column}: {message}")}
                </p>
            }
            .into_any(),
        ),
        Some(Err(error)) => Some(view! { <ErrorLine error /> }.into_any()),
        None => None,
    };
    let read_only = {
        let text = file.text.clone();
        move || view! { <ReadOnly text=text.clone() sql /> }
    };
    view! {
        <section class="code-file" data-path=file.path.clone()>
            <h2>{file.path.clone()}</h2>
            <IfWriter fallback=read_only>{editor.clone()}</IfWriter>
            {outcome}
        </section>
    }
}

/// "Validate": every flow analysed as a run does first, without reading a row.
#[component]
fn Validate() -> impl IntoView {
    let validate = ServerAction::<ValidateProject>::new();
    let form = move || {
        view! {
            <ActionForm action=validate attr:class="validate-form">
                <FormScope />
                <button type="submit" disabled=move || validate.pending().get()>"Validate"</button>
                <span class="hint">" analyses every flow's names, columns and types, as a run does first; nothing is read or written"</span>
            </ActionForm>
        }
    };
    let outcome = move || match validate.value().get() {
        Some(Ok(validation)) => Some(view! { <Validated validation /> }.into_any()),
        Some(Err(error)) => Some(view! { <ErrorLine error /> }.into_any()),
        None => None,
    };
    view! { <IfWriter>{form}</IfWriter>{outcome} }
}

/// What validating found: the flow that does not resolve, at its place, or how many resolve and
/// which wait for their files.
#[component]
fn Validated(validation: Validation) -> impl IntoView {
    let waiting = validation
        .by_name_only
        .iter()
        .map(|(flow, source)| {
            view! { <li>{format!("{flow}: its source {source} has no columns until files land; its first run checks it")}</li> }
        })
        .collect_view();
    let headline = match &validation.unresolved {
        Some(u) => view! {
            <p class="error code-error validation" role="alert" data-line=u.line>
                {format!(
                    "Flow {} does not resolve: {}, line {}, column {}: {}. Runs refuse the project until it does.",
                    u.flow, u.file, u.line, u.column, u.message
                )}
            </p>
        }
        .into_any(),
        None => view! {
            <p class="outcome succeeded validation">
                {format!(
                    "Validated: {} flow(s) resolve{}.",
                    validation.resolved.len(),
                    match validation.by_name_only.len() {
                        0 => String::new(),
                        n => format!("; {n} wait for their files"),
                    }
                )}
            </p>
        }
        .into_any(),
    };
    view! { {headline}<ul class="waiting">{waiting}</ul> }
}

/// A file as a viewer reads it: highlighted, with line numbers.
#[component]
fn ReadOnly(text: String, sql: bool) -> impl IntoView {
    let lines = text.lines().count().max(1);
    view! {
        <div class="editor read-only">
            <pre class="gutter" aria-hidden="true">
                {(1..=lines).map(|n| view! { <span>{n}</span> }).collect_view()}
            </pre>
            <pre class="highlight">{highlighted(&text, sql)}</pre>
        </div>
    }
}
