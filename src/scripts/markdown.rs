//! The display pass's text for Markdown hosts (issue 39 §3): a Discord bot cannot show the
//! HTML and CSS that `markdownOnly` scripts write (`<span style="…animation…">`,
//! `<style>@keyframes…</style>`), so [`to_markdown`] turns the HTML in a display text into
//! Markdown and leaves the rest as it is.
//!
//! The text is a reply's Markdown with HTML inside, not an HTML document: line breaks and
//! Markdown in the text must survive. So it is tokenized, not parsed into a tree (a DOM
//! collapses whitespace and an HTML→Markdown converter escapes the reply's own `*`): the
//! WHATWG tokenizer `html5gum` (one small dependency; entities decoded, `<style>` and
//! `<script>` read as raw text) gives tags and text; text is kept verbatim and each tag is
//! mapped here. Linear: one pass over the tokens, a stack of open elements whose end-tag
//! search looks at most [`SCOPE`] deep, and output at most about twice the input.
//!
//! - Dropped with their content: `style`, `script`, `template`, `head`, `title`, `noscript`,
//!   `svg`, `iframe`, `object`, and any element with `hidden` or a `display: none` /
//!   `visibility: hidden` style. Comments and doctypes are dropped.
//! - Emphasis: `b`/`strong` `**`, `i`/`em` `*`, `u` `__`, `s`/`del`/`strike` `~~`, `code` a
//!   backtick, `pre` a fenced block; `h1`–`h6` `#`, `##`, `###`; `li` `- `; `br` a line
//!   break; `hr` `---`; `img` its `alt`; `a` `[text](url)` for an `http(s)` link.
//! - Any other tag (`span`, `div`, `font`, `details`, …) is removed and its content kept;
//!   block elements end a line.

use html5gum::{DefaultEmitter, Token, Tokenizer};

/// How deep an end tag looks for its start tag among the open elements; an end tag with no
/// match that near is ignored (so 100,000 unclosed `<div>` and as many stray `</span>` cost
/// 64 steps each, not 100,000).
const SCOPE: usize = 64;

/// Class rules read from `<style>` at most (each a class name and how it displays).
const MAX_RULES: usize = 4096;

/// The longest tag read as a tag; a longer one is text. `html5gum` recurses once per
/// attribute of a tag (a tag of 50,000 attributes overflowed an 8 MiB stack and aborted the
/// process), so a tag's size is capped before it sees it: 8 KiB holds at most ~2,700
/// attributes, well within the stack [`display_markdown`] makes sure of. Real tags (long
/// inline styles included) are under 1 KiB.
const MAX_TAG: usize = 8 << 10;

/// What an open element does at its end.
#[derive(Debug)]
struct Open {
    name: String,
    /// Its content is not shown.
    hidden: bool,
    /// Laid out as a block (a line of its own).
    block: bool,
    /// A flex or grid box: its children are set apart by a space.
    spaced: bool,
    /// Written at its end (`**`, `](url)`, …).
    close: String,
    /// Where its content starts in the output: an emphasis with nothing inside is removed.
    start: usize,
    /// A link's URL (a link without text shows it).
    link: Option<String>,
}

/// Elements whose content is never text people read.
const DROPPED: &[&str] = &[
    "style", "script", "template", "head", "title", "noscript", "svg", "iframe", "object",
];

/// Elements that end a line.
const BLOCKS: &[&str] = &[
    "p",
    "div",
    "section",
    "article",
    "header",
    "footer",
    "main",
    "aside",
    "nav",
    "blockquote",
    "details",
    "summary",
    "table",
    "tr",
    "ul",
    "ol",
    "li",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "pre",
    "figure",
    "figcaption",
    "center",
];

/// Elements without an end tag.
const VOID: &[&str] = &[
    "br", "hr", "img", "input", "meta", "link", "wbr", "area", "base", "col", "embed", "source",
    "track", "param",
];

/// How an element is laid out, as far as text cares.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Display {
    hidden: bool,
    block: bool,
    spaced: bool,
}

/// The layout CSS declarations give (`display: none`, `display: flex`, …); `None` when they
/// say nothing about it.
fn display_of(declarations: &str) -> Option<Display> {
    let compact: String = declarations
        .chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect();
    if compact.contains("visibility:hidden") {
        return Some(Display {
            hidden: true,
            ..Display::default()
        });
    }
    // The last `display` wins, as in CSS.
    let value = compact
        .rsplit("display:")
        .next()
        .filter(|_| compact.contains("display:"))?;
    let value = value.split([';', '!', '}']).next().unwrap_or_default();
    Some(match value {
        "none" => Display {
            hidden: true,
            ..Display::default()
        },
        "block" | "list-item" | "table" | "table-row" => Display {
            block: true,
            ..Display::default()
        },
        "flex" | "grid" => Display {
            block: true,
            spaced: true,
            ..Display::default()
        },
        "inline-flex" | "inline-grid" => Display {
            spaced: true,
            ..Display::default()
        },
        _ => Display::default(),
    })
}

/// Reads a style sheet's simple class rules (`.pk-h{display:block}`, `b.st-row{…}`): the
/// class of each selector's last compound, and the layout its declarations give.
fn read_rules(sheet: &str, rules: &mut std::collections::HashMap<String, Display>) {
    let mut rest = sheet;
    while let Some(open) = rest.find('{') {
        let selectors = &rest[..open];
        let selectors = selectors.rsplit(['}', '{', ';']).next().unwrap_or_default();
        let after = &rest[open + 1..];
        let end = after.find(['}', '{']).unwrap_or(after.len());
        if let Some(display) = display_of(&after[..end]) {
            for selector in selectors.split(',') {
                let last = selector.split_whitespace().last().unwrap_or_default();
                let last = last.rsplit(['>', '+', '~']).next().unwrap_or_default();
                let Some((_, class)) = last.split_once('.') else {
                    continue;
                };
                let class: String = class
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '-' || *c == '_')
                    .collect();
                if !class.is_empty() && rules.len() < MAX_RULES {
                    rules.insert(class, display);
                }
            }
        }
        rest = &after[end.min(after.len())..];
    }
}

/// Ends the current line unless the output is empty or already at a line's start.
fn end_line(out: &mut String) {
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
}

/// A display text with its HTML as Markdown, for hosts that show Markdown (a Discord bot):
/// styles, scripts and hidden elements dropped, emphasis, links, lists and line breaks kept,
/// the text's own Markdown untouched. [`CompiledPreset::display_text`](crate::CompiledPreset::display_text)
/// is the display pass followed by this.
///
/// ```
/// let html = "<style>.x{color:red}</style><div class=\"x\">It <b>rains</b>.</div>\n*She* waits.";
/// assert_eq!(stpreset::scripts::display_markdown(html), "It **rains**.\n*She* waits.");
/// ```
pub fn display_markdown(html: &str) -> String {
    let html = cap_tags(html);
    // Room for the tokenizer's recursion within a capped tag (~200 bytes an attribute), on
    // a fresh segment when the caller's thread has less (a bot's worker may have 64 KiB).
    stacker::maybe_grow(1 << 20, 2 << 20, || convert(&html))
}

/// `html` with the `<` of every tag longer than [`MAX_TAG`] (to its first `>` outside
/// quotes, or the end) written `&lt;`, so the tokenizer reads it as text. Quotes count from
/// wherever they appear, which can only make a tag look longer than the tokenizer reads it.
fn cap_tags(html: &str) -> std::borrow::Cow<'_, str> {
    let b = html.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while let Some(k) = memchr::memchr(b'<', &b[i..]) {
        let at = i + k;
        i = at + 1;
        let starts_tag = b
            .get(at + 1)
            .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'/' || *c == b'!');
        if !starts_tag {
            continue;
        }
        let window = &b[at..b.len().min(at + MAX_TAG)];
        let mut quote = None;
        let closed = window.iter().skip(1).any(|&c| match quote {
            Some(q) => {
                if c == q {
                    quote = None;
                }
                false
            }
            None if c == b'"' || c == b'\'' => {
                quote = Some(c);
                false
            }
            None => c == b'>',
        });
        if !closed {
            let out = out.get_or_insert_with(|| String::with_capacity(html.len() + 16));
            out.push_str(&html[copied..at]);
            out.push_str("&lt;");
            copied = at + 1;
        }
    }
    match out {
        Some(mut out) => {
            out.push_str(&html[copied..]);
            std::borrow::Cow::Owned(out)
        }
        None => std::borrow::Cow::Borrowed(html),
    }
}

fn convert(html: &str) -> String {
    let mut emitter = DefaultEmitter::default();
    emitter.naively_switch_states(true);
    let mut out = String::with_capacity(html.len());
    let mut open: Vec<Open> = Vec::new();
    // Open hidden elements: nothing is written while there is one.
    let mut hidden = 0usize;
    // A block element just started or ended a line: the text's own line break right after
    // it is that line's end, not a blank line.
    let mut edge = false;
    // Class rules of the style sheets met so far (presets style their markup by class).
    let mut rules = std::collections::HashMap::new();
    for token in Tokenizer::new_with_emitter(html, emitter).flatten() {
        match token {
            Token::String(s) => {
                let text = String::from_utf8_lossy(&s);
                if open.last().is_some_and(|o| o.name == "style") {
                    read_rules(&text, &mut rules);
                }
                if hidden == 0 {
                    let text = match edge {
                        true => text
                            .strip_prefix("\r\n")
                            .or_else(|| text.strip_prefix('\n'))
                            .unwrap_or(&text),
                        false => &text,
                    };
                    edge &= text.is_empty();
                    out.push_str(text);
                }
            }
            Token::StartTag(tag) => {
                let name = String::from_utf8_lossy(&tag.name).to_ascii_lowercase();
                let attr = |key: &str| {
                    tag.attributes
                        .get(key.as_bytes())
                        .map(|v| String::from_utf8_lossy(v).into_owned())
                };
                // Its own style wins over its classes' rules.
                let display = attr("style")
                    .and_then(|s| display_of(&s))
                    .or_else(|| {
                        let classes = attr("class")?;
                        classes
                            .split_whitespace()
                            .find_map(|c| rules.get(c).copied())
                    })
                    .unwrap_or_default();
                let is_hidden =
                    DROPPED.contains(&name.as_str()) || attr("hidden").is_some() || display.hidden;
                let block = BLOCKS.contains(&name.as_str()) || display.block;
                let shown = hidden == 0 && !is_hidden;
                if shown
                    && open.last().is_some_and(|o| o.spaced)
                    && !out.is_empty()
                    && !out.ends_with(char::is_whitespace)
                {
                    out.push(' ');
                }
                if VOID.contains(&name.as_str()) {
                    if shown {
                        match name.as_str() {
                            "br" => out.push('\n'),
                            "hr" => {
                                end_line(&mut out);
                                out.push_str("---\n");
                            }
                            "img" => out.push_str(attr("alt").as_deref().unwrap_or_default()),
                            _ => {}
                        }
                    }
                    continue;
                }
                if tag.self_closing {
                    // `<div/>` is a start tag in HTML, but nothing follows it as content.
                    continue;
                }
                let mut close = String::new();
                let mut link = None;
                if shown {
                    if block {
                        end_line(&mut out);
                        edge = true;
                    }
                    let mark = match name.as_str() {
                        "b" | "strong" => "**",
                        "i" | "em" => "*",
                        "u" => "__",
                        "s" | "del" | "strike" => "~~",
                        "code" if !open.iter().any(|o| o.name == "pre") => "`",
                        "pre" => "```\n",
                        "h1" => "# ",
                        "h2" => "## ",
                        "h3" | "h4" | "h5" | "h6" => "### ",
                        "li" => "- ",
                        _ => "",
                    };
                    out.push_str(mark);
                    close = match name.as_str() {
                        "pre" => "\n```".to_string(),
                        n if n.starts_with('h') || n == "li" => String::new(),
                        _ => mark.to_string(),
                    };
                    if name == "a"
                        && let Some(href) = attr("href")
                        && (href.starts_with("https://") || href.starts_with("http://"))
                    {
                        out.push('[');
                        close = String::new();
                        link = Some(href);
                    }
                }
                hidden += usize::from(is_hidden);
                open.push(Open {
                    name,
                    hidden: is_hidden,
                    block,
                    spaced: display.spaced,
                    close,
                    start: out.len(),
                    link,
                });
            }
            Token::EndTag(tag) => {
                let name = String::from_utf8_lossy(&tag.name).to_ascii_lowercase();
                let Some(at) = open
                    .iter()
                    .rev()
                    .take(SCOPE)
                    .position(|o| o.name == name)
                    .map(|k| open.len() - 1 - k)
                else {
                    continue;
                };
                // Elements left open inside it end with it.
                for o in open.drain(at..).rev() {
                    hidden -= usize::from(o.hidden);
                    if hidden > 0 || o.hidden {
                        continue;
                    }
                    let empty = out.len() == o.start;
                    match o.link {
                        // A link without text shows its URL.
                        Some(href) if empty => {
                            out.pop();
                            out.push_str(&href);
                        }
                        Some(href) => {
                            out.push_str("](");
                            out.push_str(&href);
                            out.push(')');
                        }
                        // An emphasis around nothing is nothing (`<u><i></i></u>`: a bar).
                        None if empty && !o.close.is_empty() && o.close != "\n```" => {
                            out.truncate(o.start - o.close.len());
                        }
                        None => out.push_str(&o.close),
                    }
                    if o.block {
                        end_line(&mut out);
                        edge = true;
                    }
                }
            }
            Token::Comment(_) | Token::Doctype(_) | Token::Error(_) => {}
        }
    }
    tidy(&out)
}

/// Trailing spaces off every line, runs of blank lines down to one, and the ends trimmed:
/// the indentation between block tags is not text.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.trim().lines() {
        let line = line.trim_end();
        if line.trim().is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
            out.push('\n');
            continue;
        }
        blank = 0;
        out.push_str(line);
        out.push('\n');
    }
    out.truncate(out.trim_end().len());
    out
}

#[cfg(test)]
mod tests {
    use super::display_markdown as to_markdown;

    #[test]
    fn html_becomes_markdown_and_the_text_stays() {
        let html = "<style>@keyframes glow { from { opacity: 0 } }</style>\n\
            <div class=\"pk\"><span style=\"animation: glow 2s\">Tomori</span> *smiles*.</div>\n\
            <p>She says <b>hello</b> &amp; <i>waves</i>. See <a href=\"https://example.com/a\">the map</a>.</p>\n\
            <div style=\"display: NONE\">secret <b>tracker</b></div><div hidden>x</div>\n\
            <script>alert(1)</script><!-- note -->\n\
            <ul><li>one</li><li>two</li></ul>Line<br>next\n\nkept **Markdown** _here_";
        assert_eq!(
            to_markdown(html),
            "Tomori *smiles*.\nShe says **hello** & *waves*. See [the map](https://example.com/a).\n\
             - one\n- two\nLine\nnext\n\nkept **Markdown** _here_"
        );
    }

    #[test]
    fn links_images_code_and_headings() {
        assert_eq!(to_markdown("<a href=\"https://x.io\"></a>"), "https://x.io");
        assert_eq!(to_markdown("<a href=\"javascript:alert(1)\">t</a>"), "t");
        assert_eq!(to_markdown("<img src=\"a.png\" alt=\"a cat\">!"), "a cat!");
        assert_eq!(to_markdown("<code>x = 1</code>"), "`x = 1`");
        assert_eq!(
            to_markdown("<pre><code>a\nb</code></pre>"),
            "```\na\nb\n```"
        );
        assert_eq!(to_markdown("<h2>Status</h2>HP 10"), "## Status\nHP 10");
        assert_eq!(to_markdown("a<hr>b"), "a\n---\nb");
    }

    #[test]
    fn broken_html_is_read_leniently() {
        // Unclosed, misnested and stray tags; an end tag closes what is open inside it.
        assert_eq!(
            to_markdown("<b>bold <i>both</b> after"),
            "**bold *both*** after"
        );
        assert_eq!(to_markdown("</span>text</div>"), "text");
        assert_eq!(to_markdown("<div style=\"display:none\">gone"), "");
        assert_eq!(to_markdown("a < b and c > d"), "a < b and c > d");
    }

    #[test]
    fn hostile_shapes_stay_linear_and_bounded() {
        // Unclosed elements, then stray end tags: each end tag looks 64 deep at most.
        let html = format!("{}x{}", "<div>".repeat(50_000), "</span>".repeat(50_000));
        assert_eq!(to_markdown(&html), "x");
        // Markup grows at most by a constant factor.
        let html = "<hr>".repeat(10_000);
        assert!(to_markdown(&html).len() <= 2 * html.len());
        let html = "<a href=\"https://a.b\">".repeat(10_000);
        assert!(to_markdown(&html).len() <= 2 * html.len());
    }

    #[test]
    fn style_sheets_and_inline_styles_lay_out_the_text() {
        // A class made a block by the sheet; a flex box's children set apart; a hidden class.
        let html = "<style>.pk-h{display:block;font-weight:700} .row{display:flex;gap:8px}\
            .secret{display : none}</style>\
            <b class=\"pk-h\">The Archive</b>She waits.\
            <div class=\"row\"><b>HP</b><span>10</span></div><span class=\"secret\">gm notes</span>\
            <span style=\"display:inline-grid\"><i>a</i><i>b</i></span>";
        assert_eq!(
            to_markdown(html),
            "**The Archive**\nShe waits.\n**HP** 10\n*a* *b*"
        );
        // An emphasis with nothing inside (a progress bar) leaves nothing.
        assert_eq!(to_markdown("x<u><i style=\"width:70%\"></i></u>y"), "xy");
        // The last `display` of a style wins; `visibility: hidden` hides.
        assert_eq!(
            to_markdown("<span style=\"display:none;display:inline\">a</span>"),
            "a"
        );
        assert_eq!(
            to_markdown("<span style=\"visibility: hidden\">a</span>b"),
            "b"
        );
    }

    /// Found by a hostile run: html5gum recursed once per attribute, and a tag of 50,000
    /// attributes aborted the process on a stack overflow.
    #[test]
    fn a_tag_longer_than_the_cap_is_text() {
        let huge = format!("<span {}>x</span>", "a=\"b\" ".repeat(60_000));
        let out = std::thread::Builder::new()
            .stack_size(64 << 10)
            .spawn(move || to_markdown(&huge))
            .unwrap()
            .join()
            .unwrap();
        assert!(out.starts_with("<span a=\"b\""), "{}", &out[..40]);
        // Quotes count: a `>` inside one does not end the tag.
        let quoted = format!("<span t=\">\" {}", "a ".repeat(5_000));
        assert!(to_markdown(&quoted).starts_with("<span t="));
        // A long inline style under the cap is a tag.
        let styled = format!("<span style=\"{}\">x</span>", "color:red;".repeat(500));
        assert_eq!(to_markdown(&styled), "x");
    }
}
