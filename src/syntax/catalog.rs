//! The macro catalog as the compiler sees it: which names exist and how many arguments each
//! takes (SPEC §3). What each macro does lives in `eval::macros`.

/// Every macro the engine knows, plus `Unknown` and `Unsupported`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MacroKind {
    User,
    Char,
    Description,
    Personality,
    Scenario,
    Persona,
    MesExamples,
    MesExamplesRaw,
    LastMessage,
    LastUserMessage,
    LastCharMessage,
    Model,
    CharVersion,
    Time,
    Date,
    Weekday,
    IsoTime,
    IsoDate,
    DateTimeFormat,
    IdleDuration,
    SetVar(Scope),
    AddVar(Scope),
    IncVar(Scope),
    DecVar(Scope),
    GetVar(Scope),
    Random,
    Pick,
    Roll,
    Newline,
    Trim,
    Noop,
    Banned,
    Reverse,
    /// Group-chat macros: recognised, deliberately not supported.
    Unsupported,
    Unknown,
}

/// Local (per render) or global (host-supplied) variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    Local,
    Global,
}

/// How many arguments a macro accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arity {
    Exactly(u8),
    Any,
}

impl MacroKind {
    /// Resolves a macro name, ignoring ASCII case.
    pub fn lookup(name: &str) -> MacroKind {
        use MacroKind::*;
        use Scope::*;
        let mut buf = [0u8; 24];
        let Some(lower) = lowercase(name, &mut buf) else {
            return Unknown;
        };
        match lower {
            "user" => User,
            "char" | "bot" => Char,
            "description" | "chardescription" => Description,
            "personality" | "charpersonality" => Personality,
            "scenario" => Scenario,
            "persona" => Persona,
            "mesexamples" => MesExamples,
            "mesexamplesraw" => MesExamplesRaw,
            "lastmessage" => LastMessage,
            "lastusermessage" | "lastchatmessage" => LastUserMessage,
            "lastcharmessage" => LastCharMessage,
            "model" => Model,
            "char_version" | "charversion" | "version" => CharVersion,
            "time" => Time,
            "date" => Date,
            "weekday" => Weekday,
            "isotime" => IsoTime,
            "isodate" => IsoDate,
            "datetimeformat" => DateTimeFormat,
            "idle_duration" => IdleDuration,
            "setvar" => SetVar(Local),
            "addvar" => AddVar(Local),
            "incvar" => IncVar(Local),
            "decvar" => DecVar(Local),
            "getvar" => GetVar(Local),
            "setglobalvar" => SetVar(Global),
            "addglobalvar" => AddVar(Global),
            "incglobalvar" => IncVar(Global),
            "decglobalvar" => DecVar(Global),
            "getglobalvar" => GetVar(Global),
            "random" => Random,
            "pick" => Pick,
            "roll" => Roll,
            "newline" => Newline,
            "trim" => Trim,
            "noop" => Noop,
            "banned" => Banned,
            "reverse" => Reverse,
            "group" | "charifnotgroup" | "groupnotmuted" | "notchar" => Unsupported,
            _ => Unknown,
        }
    }

    pub fn arity(self) -> Arity {
        use MacroKind::*;
        match self {
            SetVar(_) | AddVar(_) => Arity::Exactly(2),
            IncVar(_) | DecVar(_) | GetVar(_) | DateTimeFormat | Roll | Banned | Reverse => {
                Arity::Exactly(1)
            }
            Random | Pick | Unsupported | Unknown => Arity::Any,
            _ => Arity::Exactly(0),
        }
    }

    /// `setvar` & co. keep their value argument raw: everything after the key's `::`.
    pub fn raw_value(self) -> bool {
        matches!(self, MacroKind::SetVar(_) | MacroKind::AddVar(_))
    }

    /// Macros that read the clock (for the cache-unfriendly-prefix audit).
    pub fn is_temporal(self) -> bool {
        use MacroKind::*;
        matches!(
            self,
            Time | Date | Weekday | IsoTime | IsoDate | DateTimeFormat | IdleDuration
        )
    }

    /// Declarations run in pass 1 and render their recorded result in pass 2.
    pub fn is_declaration(self) -> bool {
        matches!(
            self,
            MacroKind::SetVar(_)
                | MacroKind::AddVar(_)
                | MacroKind::IncVar(_)
                | MacroKind::DecVar(_)
        )
    }
}

fn lowercase<'b>(name: &str, buf: &'b mut [u8; 24]) -> Option<&'b str> {
    let bytes = name.as_bytes();
    if bytes.len() > buf.len() {
        return None;
    }
    for (dst, src) in buf.iter_mut().zip(bytes) {
        *dst = src.to_ascii_lowercase();
    }
    std::str::from_utf8(&buf[..bytes.len()]).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_ignore_case_and_aliases_resolve() {
        assert_eq!(MacroKind::lookup("User"), MacroKind::User);
        assert_eq!(MacroKind::lookup("BOT"), MacroKind::Char);
        assert_eq!(MacroKind::lookup("charDescription"), MacroKind::Description);
        assert_eq!(
            MacroKind::lookup("lastChatMessage"),
            MacroKind::LastUserMessage
        );
        assert_eq!(
            MacroKind::lookup("GetGlobalVar"),
            MacroKind::GetVar(Scope::Global)
        );
        assert_eq!(MacroKind::lookup("notChar"), MacroKind::Unsupported);
        assert_eq!(MacroKind::lookup("summary"), MacroKind::Unknown);
        assert_eq!(
            MacroKind::lookup("a_name_far_longer_than_any_known_macro"),
            MacroKind::Unknown
        );
    }
}
