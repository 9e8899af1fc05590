//! The lab service: the server's labs ([`labs`]), and per lab its dashboard (the runs it starts,
//! its schedule and settings, the backend the pages call), one lab's pipeline ([`lab`]), and
//! what each page shows ([`pages`]).

pub mod dashboard;
pub mod error;
pub mod lab;
pub mod labs;
pub mod pages;
