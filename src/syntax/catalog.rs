//! The macro catalog as the compiler sees it: which names exist and how many arguments each
//! takes (SPEC §3). What each macro does lives in `eval::macros`.

/// Every macro the engine knows, plus `Unknown`.
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
    /// The character card's main-prompt override (SPEC §11.14.4).
    CharPrompt,
    /// The character card's post-history instruction override (alias `charJailbreak`).
    CharInstruction,
    /// `outlet::NAME`: the World Info text placed in that outlet (SPEC §15.7).
    Outlet,
    /// `group` / `charIfNotGroup`: the group's members, or `char` outside a group.
    Group,
    /// Members not muted, or `char` outside a group.
    GroupNotMuted,
    /// Members not muted and other than `char`, or `user` outside a group.
    NotChar,
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
    /// `hasvar` / `varexists`: `true` when the key is present (SPEC §11.6).
    HasVar(Scope),
    /// `deletevar` / `flushvar`: a declaration that removes the key.
    DeleteVar(Scope),
    /// `setvarkey::NAME::KEY::VALUE` (`setvarindex`): a declaration that sets one key of the
    /// variable's JSON object or array, as SillyTavern's `setLocalVariable` does.
    SetVarKey(Scope),
    /// `getvarkey::NAME::KEY` (`getvarindex`): one key of the variable's JSON.
    GetVarKey(Scope),
    Random,
    Pick,
    Roll,
    Newline,
    /// `space`, `space::N`.
    Space,
    Trim,
    Noop,
    Banned,
    Reverse,
    /// Variable shorthand `{{.v OP R}}` / `{{$v OP R}}` (SPEC §11.5). Never a name: the
    /// builder makes these from a shorthand tag or condition.
    Shorthand(ShOp, Scope),
    /// A `{{if}}` condition read as literal text (SPEC §11.2 case e): its one argument,
    /// expanded, is the condition's text. Never a name.
    CondText,
    /// `{{if::C::THEN}}` given three or more arguments: literal, `BadArguments`. Never a name.
    If,
    /// A scoped closer (`{{/NAME}}`, `{{/NAME::x}}`) of a catalog name that closes nothing: it
    /// stays literal text; its `StrayCloser` is a parse diagnostic. Never a name.
    Closer,
    /// A captured value of a regex script's match (SPEC §13.5.2): what a `$N` / `$<name>`
    /// token of a replacement becomes, so it acts as a macro whose output is the value.
    /// Outside a script's expansion it is an unknown macro.
    ScriptValue,
    /// A position in the chat log: `lastMessageId` & co. (docs/macros.md).
    ChatIndex(ChatIndex),
    /// `charFirstMessage` / `greeting`, `greeting::N`: the card's greetings.
    Greeting,
    /// `charCreatorNotes` / `creatorNotes`.
    CreatorNotes,
    /// `charDepthPrompt`: the card's depth prompt text.
    CharDepthPrompt,
    /// `systemPrompt`: the card's prompt when preferred, else the host's system prompt.
    SystemPrompt,
    /// `defaultSystemPrompt` (`instructSystem`, `instructSystemPrompt`): the host's system
    /// prompt.
    DefaultSystemPrompt,
    /// Instruct-mode sequences (`instructInput` & co.): instruct mode is a text-completion
    /// setting, off for chat completion, so they are empty.
    Instruct,
    /// `chatStart`, `exampleSeparator` (`chatSeparator`): the default context template's.
    ContextTemplate,
    /// `maxContext`, `maxPrompt`, `maxResponse` (and `…Tokens`).
    TokenLimit(TokenLimit),
    /// `timeDiff::A::B`: the humanised difference of two times.
    TimeDiff,
    /// `lastGenerationType`: the render's generation type.
    LastGenerationType,
    /// `isMobile`: `false` (a bot is no mobile browser).
    IsMobile,
    /// `hasExtension::NAME`: whether the host has that extension on.
    HasExtension,
    /// `input`: the send box, empty by the time SillyTavern builds a prompt.
    Input,
    /// `comment` (ST's alias of `//`): one argument (the comment, usually scoped), renders
    /// nothing; like `//`'s other forms otherwise a wrong count and literal.
    Comment,
    Unknown,
}

/// The operator of a variable shorthand (SPEC §11.5), by what it does when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShOp {
    /// `.v`: a read.
    Read,
    /// `=`, `+=`, `-=`, `++`, `--`, `||=`, `??=`: declarations (pass 1, in source order).
    Set,
    Add,
    Sub,
    Inc,
    Dec,
    OrAssign,
    NullAssign,
    /// `||`, `??`: selections, decided in pass 1 like a block.
    Or,
    Null,
    /// `==`, `!=`, `>`, `>=`, `<`, `<=`: reads of the final map.
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

impl ShOp {
    /// The operators, longest first where one is a prefix of another.
    pub const ALL: [(&'static str, ShOp); 15] = [
        ("??=", ShOp::NullAssign),
        ("??", ShOp::Null),
        ("||=", ShOp::OrAssign),
        ("||", ShOp::Or),
        ("-=", ShOp::Sub),
        ("+=", ShOp::Add),
        ("==", ShOp::Eq),
        ("!=", ShOp::Ne),
        (">=", ShOp::Ge),
        ("<=", ShOp::Le),
        ("++", ShOp::Inc),
        ("--", ShOp::Dec),
        (">", ShOp::Gt),
        ("<", ShOp::Lt),
        ("=", ShOp::Set),
    ];
}

/// Which position in the chat log a `ChatIndex` macro prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChatIndex {
    /// `lastMessageId`: the last message's index.
    LastMessage,
    /// `firstIncludedMessageId`: the host's value.
    FirstIncluded,
    /// `firstDisplayedMessageId`.
    FirstDisplayed,
    /// `lastSwipeId`: the last message's swipe count.
    LastSwipe,
    /// `currentSwipeId`: its shown swipe, from 1.
    CurrentSwipe,
    /// `allChatRange`: `0-LAST`.
    AllRange,
}

/// Which token limit a `TokenLimit` macro prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenLimit {
    Context,
    Prompt,
    Response,
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
    /// None or one (`time`, `newline`, `space`).
    Optional,
    Any,
}

impl Arity {
    pub fn accepts(self, n: usize) -> bool {
        match self {
            Arity::Exactly(k) => n == k as usize,
            Arity::Optional => n <= 1,
            Arity::Any => true,
        }
    }
}

/// The macro name a replacement's value tokens are rewritten to (`{{stpreset_capture::N}}`).
pub(crate) const SCRIPT_VALUE: &str = "stpreset_capture";

impl MacroKind {
    /// Resolves a macro name, ignoring ASCII case.
    pub fn lookup(name: &str) -> MacroKind {
        use MacroKind::*;
        use Scope::*;
        let mut buf = [0u8; 32];
        let Some(lower) = lowercase(name, &mut buf) else {
            return Unknown;
        };
        match lower {
            "user" => User,
            "char" | "bot" => Char,
            "description" | "chardescription" => Description,
            "personality" | "charpersonality" => Personality,
            "scenario" | "charscenario" => Scenario,
            "persona" => Persona,
            "mesexamples" => MesExamples,
            "mesexamplesraw" => MesExamplesRaw,
            "lastmessage" => LastMessage,
            "lastusermessage" | "lastchatmessage" => LastUserMessage,
            "lastcharmessage" => LastCharMessage,
            "model" => Model,
            "char_version" | "charversion" | "version" => CharVersion,
            "charprompt" => CharPrompt,
            "charinstruction" | "charjailbreak" => CharInstruction,
            "outlet" => Outlet,
            "group" | "charifnotgroup" => Group,
            "groupnotmuted" => GroupNotMuted,
            "notchar" => NotChar,
            "time" => Time,
            "date" => Date,
            "weekday" => Weekday,
            "isotime" => IsoTime,
            "isodate" => IsoDate,
            "datetimeformat" => DateTimeFormat,
            "idle_duration" | "idleduration" => IdleDuration,
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
            "hasvar" | "varexists" => HasVar(Local),
            "hasglobalvar" | "globalvarexists" => HasVar(Global),
            "deletevar" | "flushvar" => DeleteVar(Local),
            "deleteglobalvar" | "flushglobalvar" => DeleteVar(Global),
            "random" => Random,
            "pick" => Pick,
            "roll" => Roll,
            "newline" => Newline,
            "space" => Space,
            "trim" => Trim,
            "noop" => Noop,
            "banned" => Banned,
            "reverse" => Reverse,
            SCRIPT_VALUE => ScriptValue,
            "lastmessageid" => ChatIndex(self::ChatIndex::LastMessage),
            "firstincludedmessageid" => ChatIndex(self::ChatIndex::FirstIncluded),
            "firstdisplayedmessageid" => ChatIndex(self::ChatIndex::FirstDisplayed),
            "lastswipeid" => ChatIndex(self::ChatIndex::LastSwipe),
            "currentswipeid" => ChatIndex(self::ChatIndex::CurrentSwipe),
            "allchatrange" => ChatIndex(self::ChatIndex::AllRange),
            "charfirstmessage" | "greeting" => Greeting,
            "charcreatornotes" | "creatornotes" => CreatorNotes,
            "chardepthprompt" => CharDepthPrompt,
            "systemprompt" => SystemPrompt,
            "defaultsystemprompt" | "instructsystem" | "instructsystemprompt" => {
                DefaultSystemPrompt
            }
            "instructstorystringprefix"
            | "instructstorystringsuffix"
            | "instructuserprefix"
            | "instructinput"
            | "instructusersuffix"
            | "instructassistantprefix"
            | "instructoutput"
            | "instructassistantsuffix"
            | "instructseparator"
            | "instructsystemprefix"
            | "instructsystemsuffix"
            | "instructfirstassistantprefix"
            | "instructfirstoutputprefix"
            | "instructlastassistantprefix"
            | "instructlastoutputprefix"
            | "instructstop"
            | "instructuserfiller"
            | "instructsysteminstructionprefix"
            | "instructfirstuserprefix"
            | "instructfirstinput"
            | "instructlastuserprefix"
            | "instructlastinput" => Instruct,
            "chatstart" | "exampleseparator" | "chatseparator" => ContextTemplate,
            "maxcontext" | "maxcontexttokens" => TokenLimit(self::TokenLimit::Context),
            "maxprompt" | "maxprompttokens" => TokenLimit(self::TokenLimit::Prompt),
            "maxresponse" | "maxresponsetokens" => TokenLimit(self::TokenLimit::Response),
            "timediff" => TimeDiff,
            "lastgenerationtype" => LastGenerationType,
            "ismobile" => IsMobile,
            "hasextension" => HasExtension,
            "input" => Input,
            "comment" => Comment,
            "setvarkey" | "setvarindex" => SetVarKey(Local),
            "getvarkey" | "getvarindex" => GetVarKey(Local),
            "setglobalvarkey" | "setglobalvarindex" => SetVarKey(Global),
            "getglobalvarkey" | "getglobalvarindex" => GetVarKey(Global),
            _ => Unknown,
        }
    }

    pub fn arity(self) -> Arity {
        use MacroKind::*;
        match self {
            SetVarKey(_) => Arity::Exactly(3),
            SetVar(_) | AddVar(_) | If | TimeDiff | GetVarKey(_) => Arity::Exactly(2),
            CondText => Arity::Exactly(1),
            IncVar(_) | DecVar(_) | GetVar(_) | HasVar(_) | DeleteVar(_) | DateTimeFormat
            | Roll | Banned | Reverse | ScriptValue | Outlet | HasExtension | Comment => {
                Arity::Exactly(1)
            }
            Time | Newline | Space | Trim | Greeting => Arity::Optional,
            Random | Pick | Unknown | Shorthand(..) | Closer => Arity::Any,
            _ => Arity::Exactly(0),
        }
    }

    /// Whether a tag of this macro written with `written` arguments may open a scoped pair
    /// (SPEC §11.3): catalog macros other than the list macros and `if`, when one more
    /// argument (the content) is a count they accept.
    pub fn opens_scope(self, written: usize) -> bool {
        use MacroKind::*;
        !matches!(
            self,
            Random | Pick | If | CondText | Shorthand(..) | Closer | Unknown | ScriptValue
        ) && self.arity().accepts(written + 1)
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
        use ShOp::*;
        matches!(
            self,
            MacroKind::SetVar(_)
                | MacroKind::AddVar(_)
                | MacroKind::IncVar(_)
                | MacroKind::DecVar(_)
                | MacroKind::DeleteVar(_)
                | MacroKind::SetVarKey(_)
                | MacroKind::Shorthand(Set | Add | Sub | Inc | Dec | OrAssign | NullAssign, _)
        )
    }

    /// Shorthand selections (`||`, `??`): decided in pass 1, like a block.
    pub fn is_selection(self) -> bool {
        matches!(self, MacroKind::Shorthand(ShOp::Or | ShOp::Null, _))
    }

    /// Calls that own a pass-1 record: declarations (their output) and selections (the
    /// choice).
    pub fn needs_slot(self) -> bool {
        self.is_declaration() || self.is_selection()
    }
}

fn lowercase<'b>(name: &str, buf: &'b mut [u8; 32]) -> Option<&'b str> {
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
        assert_eq!(MacroKind::lookup("notChar"), MacroKind::NotChar);
        assert_eq!(MacroKind::lookup("charIfNotGroup"), MacroKind::Group);
        assert_eq!(
            MacroKind::lookup("charJailbreak"),
            MacroKind::CharInstruction
        );
        assert_eq!(MacroKind::lookup("idleDuration"), MacroKind::IdleDuration);
        assert_eq!(
            MacroKind::lookup("globalVarExists"),
            MacroKind::HasVar(Scope::Global)
        );
        assert_eq!(
            MacroKind::lookup("flushvar"),
            MacroKind::DeleteVar(Scope::Local)
        );
        assert_eq!(
            MacroKind::lookup("setglobalvarindex"),
            MacroKind::SetVarKey(Scope::Global)
        );
        assert_eq!(MacroKind::lookup("summary"), MacroKind::Unknown);
        assert_eq!(
            MacroKind::lookup("a_name_far_longer_than_any_known_macro"),
            MacroKind::Unknown
        );
    }
}
