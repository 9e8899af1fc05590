//! The instructor's board of a class (issue "The classroom"): labs down, milestones across, each
//! reached one linking to the run that proves it; the share of the class at each milestone; a
//! filter by course; the board as CSV.

use leptos::prelude::*;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::api::classroom::{ClassViewerToken, DeleteClass, ReplaceToken, get_class_progress};
use crate::components::{CsrfField, ErrorLine, IfInstructor, csv_href, lab_href, short_time};
use crate::model::{ClassProgress, Course, Milestone};
use crate::pages::loaded;

#[component]
pub fn BoardPage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let class = move || params.read().get("class").unwrap_or_default();
    let course = move || query.read().get("course");
    let key = move || (class(), course());
    view! {
        <h1>{move || format!("Class {}", class())}</h1>
        <p class="lead">"Each lab's milestones, proved from what the lab did. A mark links to the run that proves it."</p>
        <nav class="filter">
            <a href=move || format!("/classes/{}", class())>"both courses"</a>
            " · "
            <a href=move || format!("/classes/{}?course=module9", class())>"module 9"</a>
            " · "
            <a href=move || format!("/classes/{}?course=week14", class())>"week 14"</a>
        </nav>
        {loaded(
            key,
            |(class, _)| get_class_progress(class),
            move |board: ClassProgress| board_view(board, course()),
        )}
    }
}

fn chosen(course: &Option<String>, m: &Milestone) -> bool {
    match course.as_deref() {
        Some("module9") => m.course == Course::Module9,
        Some("week14") => m.course == Course::Week14,
        _ => true,
    }
}

fn board_view(board: ClassProgress, course: Option<String>) -> impl IntoView {
    let columns: Vec<Milestone> = (board.labs.first())
        .map(|row| row.progress.milestones.clone())
        .unwrap_or_default()
        .into_iter()
        .filter(|m| chosen(&course, m))
        .collect();
    let total = board.labs.len();
    let csv = csv(&board, &columns);
    let head = columns
        .iter()
        .map(|m| view! { <th title=m.how.clone() data-milestone=m.id.clone()>{m.title.clone()}</th> })
        .collect_view();
    let share = columns
        .iter()
        .map(|m| {
            let n = board.reached(&m.id);
            let percent = (n * 100).checked_div(total).unwrap_or(0);
            view! { <td class="share" data-milestone=m.id.clone()>{format!("{n} of {total} ({percent} %)")}</td> }
        })
        .collect_view();
    let rows = board
        .labs
        .iter()
        .map(|row| {
            let lab = row.progress.lab.clone();
            let cells = (row.progress.milestones.iter())
                .filter(|m| chosen(&course, m))
                .map(|m| cell(&lab, m))
                .collect_view();
            view! {
                <tr data-lab=lab.clone()>
                    <th scope="row">
                        <a href=lab_href(&lab, "/")>{lab.clone()}</a>
                        <span class="line">{row.line.clone()}</span>
                        {row.progress.project.clone().map(|p| view! { <span class="line project">{p}</span> })}
                        <a class="writing-link" href=lab_href(&lab, "/writing")>"writing"</a>
                        {let lab = lab.clone(); let token = move || view! { <NewToken lab=lab.clone() /> }; view! { <IfInstructor>{token.clone()}</IfInstructor> }}
                    </th>
                    {cells}
                </tr>
            }
        })
        .collect_view();
    let file = format!("{}.csv", board.class);
    let class = board.class.clone();
    let forms = move || {
        let (one, two) = (class.clone(), class.clone());
        view! { <ViewerForm class=one /><DeleteForm class=two /> }
    };
    view! {
        <div class="board-scroll">
            <table class="board">
                <thead><tr><th>"lab"</th>{head}</tr></thead>
                <tbody>{rows}</tbody>
                <tfoot><tr><th>"reached"</th>{share}</tr></tfoot>
            </table>
        </div>
        <p><a class="button" href=csv download=file>"Download the board (CSV)"</a></p>
        <IfInstructor>{forms.clone()}</IfInstructor>
    }
}

/// Replaces a lab's lost learner token: the new one shown once, the old one dead.
#[component]
fn NewToken(lab: String) -> impl IntoView {
    let replace = ServerAction::<ReplaceToken>::new();
    let shown = move || match replace.value().get() {
        Some(Ok(made)) => {
            Some(view! { <code class="token new-token">{made.token}</code> }.into_any())
        }
        Some(Err(error)) => Some(view! { <ErrorLine error /> }.into_any()),
        None => None,
    };
    let field = lab.clone();
    view! {
        <ActionForm action=replace attr:class="replace-token-form" attr:data-lab=lab>
            <CsrfField />
            <input type="hidden" name="lab" value=field />
            <button type="submit" title="The old token stops working">"new token"</button>
        </ActionForm>
        {shown}
    }
}

/// A token that opens this board and no lab, for a class's observers: shown once.
#[component]
fn ViewerForm(class: String) -> impl IntoView {
    let mint = ServerAction::<ClassViewerToken>::new();
    let said = move || {
        match mint.value().get() {
        Some(Ok(made)) => Some(view! { <p>"The class viewer token (shown once): "<code class="token class-token">{made.token}</code></p> }.into_any()),
        Some(Err(error)) => Some(view! { <ErrorLine error /> }.into_any()),
        None => None,
    }
    };
    view! {
        <section class="class-viewer">
            <h2>"A token for observers"</h2>
            <p>"It opens this board, and no lab."</p>
            <ActionForm action=mint attr:class="class-viewer-form">
                <CsrfField />
                <input type="hidden" name="class" value=class />
                <label class="confirm">
                    <input type="checkbox" name="hide_names" value="true" />
                    " hide the learners' names (and their labs' names) from every viewer of the class"
                </label>
                <button type="submit">"Make a viewer token"</button>
            </ActionForm>
            {said}
        </section>
    }
}

/// Deletes the class's labs: asked once, answered with what would go, then confirmed.
#[component]
fn DeleteForm(class: String) -> impl IntoView {
    let delete = ServerAction::<DeleteClass>::new();
    let said = move || {
        match delete.value().get() {
        Some(Ok(labs)) => Some(view! { <p class="outcome succeeded">{format!("Deleted {} lab(s): {}.", labs.len(), labs.join(", "))}</p> }.into_any()),
        Some(Err(error)) => Some(view! { <ErrorLine error /> }.into_any()),
        None => None,
    }
    };
    view! {
        <section class="delete-class">
            <h2>"Delete this class's labs"</h2>
            <ActionForm action=delete attr:class="delete-class-form">
                <CsrfField />
                <input type="hidden" name="class" value=class />
                <label class="confirm">
                    <input type="checkbox" name="confirm" value="true" />
                    " yes: delete every lab of the class, with its topic, tables and history"
                </label>
                <button type="submit">"Delete the labs"</button>
            </ActionForm>
            {said}
        </section>
    }
}

fn cell(lab: &str, m: &Milestone) -> impl IntoView + use<> {
    let id = m.id.clone();
    match (m.done, m.run) {
        (true, run) => {
            let said = format!(
                "{}{}",
                m.evidence.clone().unwrap_or_default(),
                m.since
                    .as_deref()
                    .map(|s| format!(" (since {})", short_time(s)))
                    .unwrap_or_default()
            );
            let link = match run {
                Some(run) => lab_href(lab, &format!("/runs/{run}")),
                None => lab_href(lab, "/topic"),
            };
            view! { <td class="done" data-milestone=id><a href=link title=said>"✓"</a></td> }
                .into_any()
        }
        (false, _) if m.accepted.is_some() => {
            let note = m.accepted.as_ref().map(|a| format!("accepted: {}", a.note));
            view! { <td class="accepted" data-milestone=id title=note>"A"</td> }.into_any()
        }
        (false, _) => {
            view! { <td class="todo" data-milestone=id title=m.how.clone()>"·"</td> }.into_any()
        }
    }
}

/// The board as CSV: a lab a line, then per milestone when it was reached (empty: not yet).
fn csv(board: &ClassProgress, columns: &[Milestone]) -> String {
    let quote = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    let mut text = format!(
        "lab,line,{}\n",
        columns
            .iter()
            .map(|m| m.id.as_str())
            .collect::<Vec<_>>()
            .join(",")
    );
    for row in &board.labs {
        let reached: Vec<String> = columns
            .iter()
            .map(|c| {
                (row.progress.milestones.iter())
                    .find(|m| m.id == c.id && m.done)
                    .map(|m| m.since.clone().unwrap_or_else(|| "yes".into()))
                    .unwrap_or_default()
            })
            .collect();
        text += &format!(
            "{},{},{}\n",
            quote(&row.progress.lab),
            quote(&row.line),
            reached.join(",")
        );
    }
    csv_href(&text)
}
