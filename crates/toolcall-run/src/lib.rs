//! Everything after parsing: the executor, model clients, the agent loop, and the session
//! archive.

pub mod backend;
