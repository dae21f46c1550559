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

impl std::str::FromStr for Role {
    type Err = String;

    /// A role as the context file spells it (`assistant` is `model`); the error is one line.
    ///
    /// ```
    /// assert_eq!("assistant".parse(), Ok(stpreset::Role::Model));
    /// assert!("narrator".parse::<stpreset::Role>().unwrap_err().contains("narrator"));
    /// ```
    fn from_str(name: &str) -> Result<Role, String> {
        match name {
            "system" => Ok(Role::System),
            "user" => Ok(Role::User),
            "model" | "assistant" => Ok(Role::Model),
            other => Err(format!(
                "role: expected \"user\", \"model\" (or \"assistant\") or \"system\", not {}",
                serde_json::Value::String(crate::diagnostic::excerpt(other).into_owned())
            )),
        }
    }
}
