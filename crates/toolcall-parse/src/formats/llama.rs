//! `llama`: Llama 3.x JSON calls `{"name", "parameters"}` (recognised by [`super::json`]
//! when `llama` precedes `json` in the priority order), and `<|python_tag|>` which marks
//! what follows as calls (any name, flagged when unregistered). End-of-message tokens are
//! markup and removed from the text.

pub(crate) const PYTHON_TAG: &str = "<|python_tag|>";
pub(crate) const END_TOKENS: [&str; 3] = ["<|eom_id|>", "<|eot_id|>", "<|end_of_text|>"];
