//! A class list as labs (issue "The classroom"): one line a person (a name, or a CSV of name and
//! email with an optional header), each given a lab name that is safe (lowercase letters,
//! digits and `-`, starting with a letter, at most 32) and unique (a repeat gets `-2`, `-3`; a
//! name with no usable letter becomes `learner-N`), each change said back.

use std::collections::BTreeSet;

use app::api::{ApiError, Server};
use app::model::{ClassLab, ClassMade, DEFAULT_LAB};

use crate::access::registry::Registry;
use crate::config::validate_lab_name;
use crate::service::error::failed;

/// Makes a lab and a learner token for each line of `list` that class `class` has not made into
/// a lab before (the caller was found to manage labs), and says each back, shown once.
pub async fn create(
    server: &impl Server,
    registry: &Registry,
    headers: &http::HeaderMap,
    (class, list): (&str, &str),
    csrf: Option<&str>,
) -> Result<ClassMade, ApiError> {
    let class = class.trim();
    validate_lab_name(class).map_err(|e| ApiError::field("class", e.why))?;
    let people = people(list).map_err(|e| ApiError::field("list", e))?;
    let seen = registry.class_lines(class).await.map_err(failed)?;
    let mut taken: BTreeSet<String> = registry
        .labs()
        .await
        .map_err(failed)?
        .into_iter()
        .map(|l| l.name)
        .collect();
    taken.insert(DEFAULT_LAB.to_string());
    let mut made = ClassMade {
        class: class.to_string(),
        csv: "name,email,lab,token\n".into(),
        ..ClassMade::default()
    };
    // A line pasted twice is two people of one name: the second is kept as `line (2)`.
    let mut pasted: std::collections::BTreeMap<String, usize> = Default::default();
    for mut person in people {
        let n = pasted.entry(person.line.clone()).or_default();
        *n += 1;
        if *n > 1 {
            person.line = format!("{} ({n})", person.line);
        }
        if seen.iter().any(|(line, _)| *line == person.line) {
            made.seen_before.push(person.line);
            continue;
        }
        let (lab, note) = lab_name(&person.name, &mut taken);
        let token = server.create_lab(headers, &lab, csrf).await?;
        registry
            .add_to_class(class, &person.line, &lab)
            .await
            .map_err(failed)?;
        made.csv.push_str(&format!(
            "{},{},{},{}\n",
            csv_field(&person.name),
            csv_field(person.email.as_deref().unwrap_or("")),
            lab,
            token.token
        ));
        made.labs.push(ClassLab {
            line: person.line,
            name: person.name,
            email: person.email,
            lab,
            token: token.token,
            note,
        });
    }
    Ok(made)
}

/// One person of a pasted list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    pub line: String,
    pub name: String,
    pub email: Option<String>,
}

/// The most lines a list may hold.
pub const MOST_LINES: usize = 500;

/// The people of a pasted list, blank lines and a `name,email` header left out.
pub fn people(list: &str) -> Result<Vec<Person>, String> {
    let mut out = vec![];
    for raw in list.lines() {
        let line = raw.trim();
        if line.is_empty()
            || line.eq_ignore_ascii_case("name,email")
            || line.eq_ignore_ascii_case("name")
        {
            continue;
        }
        let (name, email) = match line.split_once(',') {
            Some((name, email)) => (name.trim(), Some(email.trim()).filter(|e| !e.is_empty())),
            None => (line, None),
        };
        if name.chars().count() > 200 {
            return Err(format!(
                "line {}: a name of at most 200 characters",
                out.len() + 1
            ));
        }
        out.push(Person {
            line: line.to_string(),
            name: name.to_string(),
            email: email.map(String::from),
        });
        if out.len() > MOST_LINES {
            return Err(format!("a class of at most {MOST_LINES} lines"));
        }
    }
    Ok(out)
}

/// A lab name for `name`, not in `taken` (which it joins), and why it differs from the name.
pub fn lab_name(name: &str, taken: &mut BTreeSet<String>) -> (String, Option<String>) {
    let mut safe = String::new();
    for c in name.to_lowercase().chars() {
        let c = match c {
            'a'..='z' | '0'..='9' => c,
            'à' | 'á' | 'â' | 'ä' | 'ã' | 'å' => 'a',
            'è' | 'é' | 'ê' | 'ë' => 'e',
            'ì' | 'í' | 'î' | 'ï' => 'i',
            'ò' | 'ó' | 'ô' | 'ö' | 'õ' => 'o',
            'ù' | 'ú' | 'û' | 'ü' => 'u',
            'ç' => 'c',
            'ñ' => 'n',
            _ => '-',
        };
        if !(c == '-' && (safe.is_empty() || safe.ends_with('-'))) {
            safe.push(c);
        }
    }
    let safe = safe.trim_start_matches(|c: char| !c.is_ascii_lowercase());
    let mut safe: String = safe.trim_end_matches('-').chars().take(26).collect();
    safe = safe.trim_end_matches('-').to_string();
    let mut note = None;
    if safe.is_empty() {
        let mut n = 1;
        while taken.contains(&format!("learner-{n}")) {
            n += 1;
        }
        safe = format!("learner-{n}");
        note = Some(format!(
            "{name:?} has no letter a lab name can hold: {safe}"
        ));
    } else if safe != name {
        note = Some(format!("{name:?} as a lab name: {safe}"));
    }
    let mut lab = safe.clone();
    let mut n = 2;
    while taken.contains(&lab) {
        lab = format!("{safe}-{n}");
        n += 1;
    }
    if lab != safe {
        note = Some(format!("{name:?} again: {lab}"));
    }
    taken.insert(lab.clone());
    (lab, note)
}

/// A CSV field, quoted when it must be.
pub fn csv_field(text: &str) -> String {
    match text.contains([',', '"', '\n']) {
        true => format!("\"{}\"", text.replace('"', "\"\"")),
        false => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_made_safe_and_unique_and_each_change_is_said() {
        let mut taken = BTreeSet::from(["ann".to_string()]);
        let mut named = |n: &str| lab_name(n, &mut taken);
        assert_eq!(named("Ann").0, "ann-2");
        assert_eq!(named("Zoë O'Brien").0, "zoe-o-brien");
        assert!(named("Zoë O'Brien").1.unwrap().contains("again"));
        assert_eq!(named("李雷").0, "learner-1");
        assert_eq!(named("!!!").0, "learner-2");
        assert_eq!(named("9lives").0, "lives");
        assert_eq!(named("sam").1, None);
        for name in ["a very long name that goes on and on and on", "x"] {
            let (lab, _) = named(name);
            assert!(crate::config::validate_lab_name(&lab).is_ok(), "{lab}");
        }
    }

    #[test]
    fn a_list_reads_names_or_csv_with_a_header() {
        let people = people("name,email\nAnn Lee, ann@x.org\n\nBob\n").unwrap();
        assert_eq!(people.len(), 2);
        assert_eq!(people[0].email.as_deref(), Some("ann@x.org"));
        assert_eq!(people[1].name, "Bob");
        assert!(super::people(&"x\n".repeat(MOST_LINES + 1)).is_err());
    }
}
