//! A client that plays a recorded session file ([`crate::replay::SessionFile`]): each model
//! request gets the next recorded reply. It records the requests it received, so tests can
//! check what the model would have seen.

use std::sync::Mutex;

use async_trait::async_trait;

use super::conversation::reply_from_message;
use super::{ClientError, ModelClient, ModelReply, ModelRequest, name_map};
use crate::replay::SessionFile;

pub struct ReplayClient {
    replies: Vec<serde_json::Value>,
    state: Mutex<ReplayState>,
}

#[derive(Default)]
struct ReplayState {
    next: usize,
    requests: Vec<ModelRequest>,
}

impl ReplayClient {
    pub fn new(session: &SessionFile) -> Self {
        Self::from_replies(session.replies.clone())
    }

    /// Replies as OpenAI Chat assistant messages.
    pub fn from_replies(replies: Vec<serde_json::Value>) -> Self {
        ReplayClient {
            replies,
            state: Mutex::new(ReplayState::default()),
        }
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.state
            .lock()
            .map(|s| s.requests.clone())
            .unwrap_or_default()
    }

    /// How many recorded replies were not played.
    pub fn remaining(&self) -> usize {
        let next = self.state.lock().map(|s| s.next).unwrap_or(0);
        self.replies.len().saturating_sub(next)
    }
}

#[async_trait]
impl ModelClient for ReplayClient {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ClientError> {
        let mut state = self
            .state
            .lock()
            .map_err(|_| ClientError::Other("replay state poisoned".into()))?;
        state.requests.push(request.clone());
        let index = state.next;
        let Some(reply) = self.replies.get(index) else {
            return Err(ClientError::ReplayExhausted {
                recorded: self.replies.len(),
                asked: index + 1,
            });
        };
        state.next += 1;
        // Recorded replies use the registry ids (or aliases, which map back).
        let names = name_map(request);
        reply_from_message(reply, &names)
    }
}
