//! A learner's checklist on the lab's home page (issue "The classroom"): each course's "done
//! when", proved from what the lab did, with the run that proves it, or how to get there.

use leptos::prelude::*;

use crate::api::classroom::get_progress;
use crate::components::{IfWriter, current_lab, href, short_time};
use crate::model::{Course, LabProgress, Milestone};
use crate::pages::loaded;

/// The lab's milestones as a checklist, for whoever may work in the lab.
#[component]
pub fn Checklist() -> impl IntoView {
    let list = move || loaded(current_lab, get_progress, checklist_view);
    view! { <IfWriter>{list}</IfWriter> }
}

fn checklist_view(progress: LabProgress) -> impl IntoView {
    let course = |course: Course| {
        let items: Vec<Milestone> = (progress.milestones.iter())
            .filter(|m| m.course == course)
            .cloned()
            .collect();
        let done = items.iter().filter(|m| m.done).count();
        let total = items.len();
        view! {
            <section class="course" data-course=course.label()>
                <h3>{format!("{}: {done} of {total} done", capitalized(course.label()))}</h3>
                <ul>{items.into_iter().map(item_view).collect_view()}</ul>
            </section>
        }
    };
    view! {
        <section class="checklist">
            <h2>"Done when"</h2>
            <p class="note">"Each line is proved from what this lab did: its runs, checks and resets. Nothing is ticked by hand."</p>
            {progress.project.clone().map(|p| view! { <p class="project-changes">{format!("Your project: {p}.")}</p> })}
            {course(Course::Module9)}
            {course(Course::Week14)}
        </section>
    }
}

fn item_view(m: Milestone) -> impl IntoView {
    let state = if m.done { "done" } else { "todo" };
    let mark = if m.done { "✓" } else { "○" };
    let detail = match (m.done, m.evidence) {
        (true, Some(evidence)) => {
            let since = m.since.map(|s| format!(" (since {})", short_time(&s)));
            let run = m.run.map(|id| {
                view! { " " <a href=href(&format!("/runs/{id}"))>{format!("run #{id}")}</a> }
            });
            view! { <span class="evidence">{evidence}{since}</span>{run} }.into_any()
        }
        _ => view! { <span class="how">{m.how}</span> }.into_any(),
    };
    view! {
        <li class=state data-milestone=m.id>
            <span class="mark" aria-hidden="true">{mark}</span>
            <b>{m.title}</b>
            ": "
            {detail}
        </li>
    }
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
