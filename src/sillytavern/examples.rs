//! Example dialogue as SillyTavern sends it (notes rules 27–29): `parseMesExamples` splits
//! the text into `<START>` blocks, `parseExampleIntoIndividual` each block into messages named
//! `example_user` / `example_assistant`.

use crate::jstext::{js_trim, split_ascii_ci};

/// One example message: `user` says whether it is the user's line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExampleLine {
    pub user: bool,
    pub text: String,
}

impl ExampleLine {
    /// The message's `name`: `example_user` or `example_assistant`.
    pub fn name(&self) -> &'static str {
        match self.user {
            true => "example_user",
            false => "example_assistant",
        }
    }
}

/// `parseMesExamples` (chat completion): blocks, each `<START>\n` + the trimmed block + `\n`.
pub(crate) fn blocks(text: &str) -> Vec<String> {
    const START: &str = "<START>";
    if text.is_empty() || text == START {
        return Vec::new();
    }
    let owned;
    let text = if text.starts_with(START) {
        text
    } else {
        owned = format!("{START}\n{}", js_trim(text));
        &owned
    };
    split_ascii_ci(text, START)
        .into_iter()
        .skip(1)
        .map(|b| format!("{START}\n{}\n", js_trim(b)))
        .collect()
}

/// `parseExampleIntoIndividual` over one block: the first line (the `<START>` heading) is
/// skipped; a line starting with `user:` opens a user message, one starting with `char:` (or a
/// group member's `Name:`) a character message; other lines continue the current one. Each
/// message drops the first `Name:` it contains and is trimmed; in a group chat it is prefixed
/// with `Name: `. A block without a speaker line has no messages.
pub(crate) fn split(block: &str, user: &str, char: &str, group: &[String]) -> Vec<ExampleLine> {
    let user_tag = format!("{user}:");
    let char_tag = format!("{char}:");
    // `groupBotNames.some(n => line.startsWith(n))`: a line starts with `Name:` when the text up
    // to one of its colons is a member's name, so each colon is one lookup. Only colons within
    // the longest name can end one: a line of a million colons hashes no prefix longer than a
    // name (linear in the line, whatever the group's size).
    let members: std::collections::HashSet<&str> = group.iter().map(String::as_str).collect();
    let longest = group.iter().map(String::len).max().unwrap_or(0);
    let member_line = |line: &str| {
        line.match_indices(':')
            .take_while(|&(at, _)| at <= longest)
            .any(|(at, _)| members.contains(&line[..at]))
    };
    let mut out = Vec::new();
    let mut lines: Vec<&str> = Vec::new();
    let (mut in_user, mut in_bot) = (false, false);
    let mut bot_name = char.to_string();
    let add = |out: &mut Vec<ExampleLine>, lines: &mut Vec<&str>, name: &str, is_user: bool| {
        let joined = lines.join("\n");
        let tag = format!("{name}:");
        let text = match joined.find(&tag) {
            Some(at) => format!("{}{}", &joined[..at], &joined[at + tag.len()..]),
            None => joined,
        };
        let mut text = js_trim(&text).to_string();
        if !group.is_empty() {
            text = format!("{name}: {text}");
        }
        out.push(ExampleLine {
            user: is_user,
            text,
        });
        lines.clear();
    };
    for line in block.split('\n').skip(1) {
        if line.starts_with(&user_tag) {
            in_user = true;
            if in_bot {
                let name = bot_name.clone();
                add(&mut out, &mut lines, &name, false);
            }
            in_bot = false;
        } else if line.starts_with(&char_tag) || member_line(line) {
            if !line.starts_with(&char_tag) && !members.is_empty() {
                bot_name = line.split(':').next().unwrap_or_default().to_string();
            }
            in_bot = true;
            if in_user {
                add(&mut out, &mut lines, user, true);
            }
            in_user = false;
        }
        lines.push(line);
    }
    if in_user {
        add(&mut out, &mut lines, user, true);
    } else if in_bot {
        let name = bot_name.clone();
        add(&mut out, &mut lines, &name, false);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_and_lines_as_sillytavern_reads_them() {
        let b = blocks(
            "Oren: *He unrolls a chart.*\nAlice: Even the small ones?\n<START>\nAlice: Old?\nOren: That one.\nThe ink has faded.\n<start>\n",
        );
        assert_eq!(b.len(), 3);
        assert_eq!(
            b[0],
            "<START>\nOren: *He unrolls a chart.*\nAlice: Even the small ones?\n"
        );
        let lines = split(&b[1], "Alice", "Oren", &[]);
        assert_eq!(
            lines,
            [
                ExampleLine {
                    user: true,
                    text: "Old?".into()
                },
                ExampleLine {
                    user: false,
                    text: "That one.\nThe ink has faded.".into()
                },
            ]
        );
        assert!(split(&b[2], "Alice", "Oren", &[]).is_empty());
        assert!(blocks("<START>").is_empty());
    }

    #[test]
    fn group_member_lines_found_past_other_colons() {
        let group = ["Oren".to_string(), "Mira: the elder".to_string()];
        let block = "<START>\nMira: the elder: Hello.\nAlice: Hi.\nOren:: ok";
        let lines = split(block, "Alice", "Oren", &group);
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0].text, "Mira: the elder: Hello.");
        assert!(lines[1].user);
        // A line of colons longer than every name is no member's line, and costs one pass.
        let colons = format!("<START>\nAlice: x\n{}", ":".repeat(1 << 16));
        let lines = split(&colons, "Alice", "Oren", &group);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].user);
    }
}
