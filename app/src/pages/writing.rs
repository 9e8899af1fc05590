//! Writing (week 14, sections 4 to 6; issue "The classroom"): the note to a director, with the
//! lab's own cost-of-freshness figures offered as facts to cite and the jargon it uses marked as
//! it is typed; the check's questions; the teach-back. Each save is kept with its time, and the
//! instructor reads them from the class board.

use leptos::prelude::*;

use crate::api::classroom::{SaveWriting, get_writings};
use crate::api::get_freshness;
use crate::components::{ErrorLine, FormScope, IfWriter, current_lab, short_time};
use crate::model::{CostModel, Freshness, Writing, jargon, words};
use crate::pages::loaded;

#[component]
pub fn WritingPage() -> impl IntoView {
    view! {
        <h1>"Writing"</h1>
        <p class="lead">"Week 14 asks for writing as well as pipelines: a note to a director, the check's questions, a teach-back. Each save is kept with its time; your instructor reads them from the class board."</p>
        {loaded(current_lab, get_writings, |tasks: Vec<Writing>| {
            tasks.into_iter().map(|w| view! { <WritingBox writing=w /> }).collect_view()
        })}
    }
}

#[component]
fn WritingBox(writing: Writing) -> impl IntoView {
    let save = ServerAction::<SaveWriting>::new();
    // A save is said here, where it was made; the page is not reloaded under it (a reload
    // would make this box again, and the saying with it).
    let text = RwSignal::new(writing.text.clone());
    let note = writing.task == "note";
    let (target, least) = match note {
        true => (" of 150 asked (100 at least)", 100),
        false => (" (10 at least)", 10),
    };
    let count = move || text.with(|t| words(t).len());
    let counted = move || {
        let n = count();
        let class = if n >= least { "count enough" } else { "count" };
        view! { <p class=class><span class="words">{n}</span>" words"{target}</p> }
    };
    let marked = move || {
        note.then(|| {
            let found = text.with(|t| jargon(t));
            match found.is_empty() {
                true => view! { <p class="jargon none">"No jargon a director would trip on."</p> }
                    .into_any(),
                false => view! {
                    <p class="jargon">"Jargon a director may not follow: "
                        {found.into_iter().map(|(word, n)| {
                            let times = if n > 1 { format!(" ×{n}") } else { String::new() };
                            let shown = word.clone();
                            view! { <mark data-word=word>{shown}</mark>{times}" " }
                        }).collect_view()}
                    </p>
                }
                .into_any(),
            }
        })
    };
    let saved = move || {
        match save.value().get() {
        Some(Ok(w)) => Some(view! { <p class="outcome succeeded">{format!("Saved at {}.", w.at.as_deref().map(short_time).unwrap_or_default())}</p> }.into_any()),
        Some(Err(error)) => Some(view! { <ErrorLine error /> }.into_any()),
        None => None,
    }
    };
    let last = writing
        .at
        .as_deref()
        .map(|at| format!("Last saved {}.", short_time(at)));
    let rows = if note { 10 } else { 4 };
    let (task, initial) = (writing.task.clone(), writing.text.clone());
    let form = move || {
        let (task, field, initial) = (task.clone(), task.clone(), initial.clone());
        view! {
            <ActionForm action=save attr:class="writing-form" attr:data-task=task>
                <FormScope />
                <input type="hidden" name="task" value=field />
                <textarea
                    name="text"
                    rows=rows
                    on:input=move |ev| text.set(event_target_value(&ev))
                >{initial}</textarea>
                {counted}
                {marked}
                <button type="submit" class="primary">"Save"</button>
            </ActionForm>
        }
    };
    let shown = writing.text.clone();
    let readonly = move || view! { <p class="saved-text">{shown.clone()}</p> };
    view! {
        <section class="writing" data-task=writing.task.clone()>
            <h2>{title(&writing.task)}</h2>
            <p>{writing.prompt}</p>
            {note.then(|| view! { <Facts /> })}
            <IfWriter fallback=readonly>{form.clone()}</IfWriter>
            <p class="note">{last}</p>
            {saved}
        </section>
    }
}

fn title(task: &str) -> String {
    match task {
        "note" => "The note to a director".into(),
        "teachback" => "Teach-back".into(),
        other => match other.strip_prefix("check.") {
            Some(n) => format!("Check, question {n}"),
            None => other.into(),
        },
    }
}

/// The lab's own cost of freshness, as facts the note may cite.
#[component]
fn Facts() -> impl IntoView {
    let facts = |f: Freshness| {
        f.cost.map(|cost| {
            let age = |s: u64| match s {
                0..120 => format!("{s} seconds"),
                120..7200 => format!("{} minutes", (s + 30) / 60),
                _ => format!("{:.1} hours", s as f64 / 3600.0),
            };
            view! {
                <div class="facts">
                    <p>"Facts from this lab's own runs, to cite: " {cost.sentence}</p>
                    <ul>
                        {cost.options.into_iter().map(|o| view! {
                            <li>{format!("{}: about {} a day; the numbers are at most {} old.", o.label, CostModel::price(o.cents_per_day), age(o.worst_stale_s))}</li>
                        }).collect_view()}
                    </ul>
                </div>
            }
        })
    };
    loaded(current_lab, get_freshness, facts)
}
