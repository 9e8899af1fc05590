//! Making a class on the labs page (issue "The classroom"): a class name and a pasted list (one
//! name a line, or a CSV of name and email); each new line becomes a lab with its learner
//! token, shown once as a printable sheet with a copy button and a CSV download.

use leptos::prelude::*;

use crate::api::{ApiError, CreateClass};
use crate::components::{CsrfField, ErrorLine, Live, csv_href, field_error};
use crate::model::ClassMade;

#[component]
pub fn MakeClass() -> impl IntoView {
    let create = ServerAction::<CreateClass>::new();
    let made: Signal<Option<Result<ClassMade, ApiError>>> = create.value().into();
    Effect::new(move |_| {
        if made.get().is_some_and(|r| r.is_ok()) {
            Live::bump();
        }
    });
    view! {
        <section class="new-class">
            <h2>"Make a class"</h2>
            <p>"Paste the class list: one name a line, or a CSV with name and email. Each line becomes a lab with its own token. Paste the list again later: only the lines not seen before become labs."</p>
            <ActionForm action=create attr:class="create-class-form">
                <CsrfField />
                <label class="field">
                    <span>"class"</span>
                    <input name="class" placeholder="dp-2026" />
                    {field_error(made, "class")}
                </label>
                <label class="field wide">
                    <span>"list"</span>
                    <textarea name="list" rows="8" placeholder="Ann Lee\nBob Roy, bob@example.org"></textarea>
                    {field_error(made, "list")}
                </label>
                <button type="submit" class="primary">"Make the labs"</button>
            </ActionForm>
            {move || match made.get() {
                Some(Ok(made)) => Some(sheet(made).into_any()),
                Some(Err(e)) if e.field_name().is_none() => Some(view! { <ErrorLine error=e /> }.into_any()),
                _ => None,
            }}
        </section>
    }
}

/// The tokens, shown once: a table to print, the CSV to download.
fn sheet(made: ClassMade) -> impl IntoView {
    let csv = csv_href(&made.csv);
    let seen = (!made.seen_before.is_empty()).then(|| {
        view! { <p class="note">{format!("{} line(s) had labs already: nothing new made for them.", made.seen_before.len())}</p> }
    });
    let file = format!("{}-tokens.csv", made.class);
    view! {
        <div class="class-sheet" data-class=made.class.clone()>
            <p>{format!("Class {}: {} lab(s) made. The tokens are shown once: print this sheet or download it.", made.class, made.labs.len())}</p>
            <p>
                <a class="button" href=csv download=file>"Download the CSV"</a>
                " "
                <button type="button" onclick="window.print()">"Print"</button>
                " "
                <a class="button" href=format!("/classes/{}", made.class)>"Open the class board"</a>
            </p>
            {seen}
            <table class="tokens">
                <thead><tr><th>"name"</th><th>"lab"</th><th>"token"</th><th>"note"</th></tr></thead>
                <tbody>
                    {made.labs.into_iter().map(|lab| {
                        let key = lab.lab.clone();
                        view! {
                        <tr data-lab=key>
                            <td>{lab.name}</td>
                            <td>{lab.lab}</td>
                            <td><code class="token">{lab.token}</code></td>
                            <td>{lab.note.unwrap_or_default()}</td>
                        </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
}
