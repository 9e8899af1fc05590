//! Sign in: a token (the instructor's, a lab's learner or viewer token) becomes a session cookie.
//! A plain form posted to the server: the token never reaches the page's script.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

#[component]
pub fn LoginPage() -> impl IntoView {
    let query = use_query_map();
    let failed = move || query.read().get("failed").is_some();
    let next = move || query.read().get("next").unwrap_or_default();
    view! {
        <h1>"Sign in"</h1>
        <p class="lead">
            "Paste the token you were given: the instructor's, your lab's learner token (send, run, reset) or a viewer token (look only)."
        </p>
        {move || failed().then(|| view! {
            <p class="error" role="alert">"That token opens nothing here: check it and try again."</p>
        })}
        <form method="post" action="/login" class="login-form">
            <label class="field">
                <span>"token"</span>
                <input type="password" name="token" autocomplete="off" required />
            </label>
            <input type="hidden" name="next" value=next />
            <button type="submit" class="primary">"Sign in"</button>
        </form>
    }
}
