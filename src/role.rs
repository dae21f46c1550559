//! Who speaks: shared by the context's items, the assembled messages and provider requests.

use serde::{Deserialize, Serialize};

/// Role of a native-context item or an output message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// System instructions.
    System,
    /// The human side of the chat.
    User,
    /// The model side of the chat (`assistant` is accepted).
    #[serde(alias = "assistant")]
    Model,
}
