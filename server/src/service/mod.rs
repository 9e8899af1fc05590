//! The lab service: the server's labs ([`labs`]), and per lab its runner (the runs it starts in
//! child processes, its schedule and settings, the backend the pages call: [`runner`]), one
//! lab's pipeline ([`lab`]), and what each page shows ([`pages`]).

pub mod class;
pub mod error;
pub mod lab;
pub mod labs;
pub mod pages;
pub mod progress;
pub mod runner;
