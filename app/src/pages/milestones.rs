//! A learner's checklist on the lab's home page (issue "The classroom"): each course's "done
//! when", proved from what the lab did, with the run that proves it, or how to get there.

use leptos::prelude::*;

use crate::api::classroom::{AcceptMilestone, get_progress};
use crate::components::{
    ErrorLine, FormScope, IfInstructor, IfWriter, Live, current_lab, href, short_time,
};
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
    let state = match (m.done, &m.accepted) {
        (true, _) => "done",
        (false, Some(_)) => "accepted",
        (false, None) => "todo",
    };
    let mark = if m.done || m.accepted.is_some() {
        "✓"
    } else {
        "○"
    };
    let accepted = m.accepted.clone().map(|a| {
        view! { <span class="accepted-note">{format!(" Accepted by the instructor ({}): {}", short_time(&a.at), a.note)}</span> }
    });
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
    let id = m.id.clone();
    let accept = (!m.done && m.accepted.is_none()).then(|| {
        let id = id.clone();
        view! { <IfInstructor><AcceptForm milestone=id.clone() /></IfInstructor> }
    });
    view! {
        <li class=state data-milestone=m.id>
            <span class="mark" aria-hidden="true">{mark}</span>
            <b>{m.title}</b>
            ": "
            {detail}
            {accepted}
            {accept}
        </li>
    }
}

/// The instructor accepts a milestone the evidence does not prove, saying why.
#[component]
fn AcceptForm(milestone: String) -> impl IntoView {
    let accept = ServerAction::<AcceptMilestone>::new();
    Effect::new(move |_| {
        if accept.value().get().is_some_and(|r| r.is_ok()) {
            Live::bump();
        }
    });
    let error = move || match accept.value().get() {
        Some(Err(error)) => Some(view! { <ErrorLine error /> }),
        _ => None,
    };
    let field = milestone.clone();
    view! {
        <ActionForm action=accept attr:class="accept-form" attr:data-milestone=milestone>
            <FormScope />
            <input type="hidden" name="milestone" value=field />
            <input name="note" placeholder="why it is accepted" />
            <button type="submit">"Accept"</button>
        </ActionForm>
        {error}
    }
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
