//! A class made in one step (issue "The classroom"): a pasted list, a lab and a learner token
//! per line, shown once.

use serde::{Deserialize, Serialize};

/// What making (or adding to) a class did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ClassMade {
    pub class: String,
    /// The labs made now, each with its learner token (shown once).
    pub labs: Vec<ClassLab>,
    /// Lines made into labs before (matched as pasted): nothing new was made for them.
    pub seen_before: Vec<String>,
    /// The sheet as CSV: `name,email,lab,token`.
    pub csv: String,
}

/// One line of the list and the lab it became.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassLab {
    /// The line as pasted.
    pub line: String,
    pub name: String,
    pub email: Option<String>,
    pub lab: String,
    pub token: String,
    /// Why the lab's name is not the person's: made safe, or made unique.
    pub note: Option<String>,
}
