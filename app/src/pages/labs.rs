//! Every lab on one screen (the instructor's overview): each lab's freshness and last verdict,
//! making a lab (its learner token shown once) and viewer tokens.

use leptos::prelude::*;

use crate::api::{ApiError, CreateLab, MakeViewerToken, get_labs};
use crate::components::{
    CsrfField, ErrorLine, IfInstructor, Live, field_error, lab_href, short_time,
};
use crate::model::{CheckOutcome, LabSummary, NewToken, PipelineKind};
use crate::pages::loaded;

#[component]
pub fn LabsPage() -> impl IntoView {
    let create = ServerAction::<CreateLab>::new();
    let viewer = ServerAction::<MakeViewerToken>::new();
    let created: Signal<Option<Result<NewToken, ApiError>>> = create.value().into();
    Effect::new(move |_| {
        if created.get().is_some_and(|r| r.is_ok()) {
            Live::bump();
        }
    });
    view! {
        <h1>"Labs"</h1>
        <p class="lead">"Every lab: are its numbers final, and did its last check pass?"</p>
        {loaded(|| (), |()| get_labs(), move |labs: Vec<LabSummary>| view! {
            <table class="labs">
                <thead>
                    <tr><th>"lab"</th><th>"pipeline"</th><th>"freshness"</th><th>"final through"</th><th>"last check"</th><th>"last run"</th><th>"rule failures"</th><th>"topic"</th><th></th></tr>
                </thead>
                <tbody>
                    {labs.into_iter().map(|lab| lab_row(lab, viewer)).collect_view()}
                </tbody>
            </table>
        })}
        {token_view(viewer.value().into())}
        <IfInstructor>
        <section class="new-lab">
            <h2>"Make a lab"</h2>
            <p>"A lab has its own topic, tables and history. Its learner token is shown once: hand it to the learner."</p>
            <ActionForm action=create attr:class="create-lab-form">
                <CsrfField />
                <label class="field">
                    <span>"name"</span>
                    <input name="name" placeholder="ann" />
                    {field_error(created, "name")}
                </label>
                <button type="submit" class="primary">"Make the lab"</button>
            </ActionForm>
            {token_view(created)}
        </section>
        <crate::pages::class::MakeClass />
        </IfInstructor>
    }
}

fn lab_row(lab: LabSummary, viewer: ServerAction<MakeViewerToken>) -> impl IntoView {
    let check = lab.last_check.map_or("none yet", CheckOutcome::as_str);
    let (name, page) = (lab.name.clone(), lab_href(&lab.name, "/"));
    let (form_lab, button_lab) = (name.clone(), name.clone());
    let failures_class = if lab.rule_failures > 0 {
        "n failed"
    } else {
        "n"
    };
    view! {
        <tr data-lab=name.clone()>
            <td><a href=page rel="external">{name.clone()}</a>{lab.public.then_some(" (public)")}</td>
            <td>{match lab.pipeline { PipelineKind::Course => "course", PipelineKind::Project => "SQL project" }}</td>
            <td><span class=format!("lamp-small {}", lab.light) data-light=lab.light.as_str()>{lab.light.as_str()}</span></td>
            <td>{lab.final_through.as_deref().map(short_time).unwrap_or_else(|| "-".into())}</td>
            <td class=format!("check {check}")>{check}</td>
            <td>{lab.last_run_at.as_deref().map(short_time).unwrap_or_else(|| "-".into())}</td>
            <td class=failures_class>{lab.rule_failures}</td>
            <td>{lab.topic.clone()}</td>
            <td>
                {lab.error.map(|e| view! { <span class="error">{e}</span> })}
                <ActionForm action=viewer attr:class="viewer-token-form">
                    <input type="hidden" name="lab" value=form_lab.clone() />
                    <CsrfField />
                    <button type="submit" data-viewer-token=button_lab.clone()>"viewer token"</button>
                </ActionForm>
            </td>
        </tr>
    }
}

/// The copy button's script: the token to the clipboard, or selected where the page may not
/// write the clipboard.
const COPY: &str = "var b=this,t=b.dataset.token,c=b.previousElementSibling;\
if(navigator.clipboard){navigator.clipboard.writeText(t).then(function(){b.textContent='Copied'},\
function(){getSelection().selectAllChildren(c)})}else{getSelection().selectAllChildren(c)}";

/// A token just made, shown once with what it opens.
fn token_view(value: Signal<Option<Result<NewToken, ApiError>>>) -> impl IntoView {
    move || {
        match value.get() {
        Some(Ok(token)) => Some(view! {
            <div class="new-token" data-token-lab=token.lab.clone() data-token-role=token.role.as_str()>
                <p>{format!("The {} token of lab {} (shown once, keep it):", token.role, token.lab)}</p>
                <code class="token">{token.token.clone()}</code>
                // Works before the page's script loads too; where the clipboard is closed to
                // the page (plain HTTP off this machine), the token is selected to copy by hand.
                <button type="button" class="copy" data-token=token.token
                    onclick=COPY>"Copy"</button>
            </div>
        }.into_any()),
        Some(Err(e)) if e.field_name().is_none() => Some(view! { <ErrorLine error=e /> }.into_any()),
        _ => None,
    }
    }
}
