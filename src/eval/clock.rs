//! The render's one clock reading and moment-style formatting (SPEC §3.1).

use chrono::{DateTime, Datelike, Duration, NaiveDateTime, TimeZone, Timelike, Utc};

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const WEEKDAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

pub(crate) const TIME: &str = "h:mm A";
pub(crate) const DATE: &str = "MMMM D, YYYY";
pub(crate) const WEEKDAY: &str = "dddd";
pub(crate) const ISOTIME: &str = "HH:mm";
pub(crate) const ISODATE: &str = "YYYY-MM-DD";

/// Local time of the render: `now` shifted by the host's UTC offset.
pub(crate) fn local(now: DateTime<Utc>, offset_minutes: i32) -> NaiveDateTime {
    now.naive_utc()
        .checked_add_signed(Duration::minutes(offset_minutes.into()))
        .unwrap_or(now.naive_utc())
}

fn ordinal(n: u32) -> &'static str {
    match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    }
}

/// Tokens, longest first so `MMMM` wins over `MM` and `Do` over `D`.
const TOKENS: [&str; 22] = [
    "YYYY", "MMMM", "dddd", "MMM", "ddd", "YY", "MM", "DD", "Do", "HH", "hh", "mm", "ss", "M", "D",
    "H", "h", "m", "s", "A", "a", "[",
];

/// Formats `t` with moment-style tokens; other characters are literal, `[text]` is literal text.
pub(crate) fn format(t: NaiveDateTime, fmt: &str, out: &mut String) {
    use std::fmt::Write;
    let mut rest = fmt;
    // Once no `]` is left, every later `[` is literal: remembering that keeps a format of
    // many unmatched `[` linear (searching again for each one was quadratic).
    let mut no_close = false;
    while let Some(c) = rest.chars().next() {
        let Some(tok) = TOKENS.iter().find(|tok| rest.starts_with(**tok)) else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        };
        rest = &rest[tok.len()..];
        let hour12 = match t.hour() % 12 {
            0 => 12,
            h => h,
        };
        let month = MONTHS[t.month0() as usize];
        let weekday = WEEKDAYS[t.weekday().num_days_from_monday() as usize];
        let _ = match *tok {
            "YYYY" => write!(out, "{:04}", t.year()),
            "YY" => write!(out, "{:02}", t.year().rem_euclid(100)),
            "MMMM" => write!(out, "{month}"),
            "MMM" => write!(out, "{}", &month[..3]),
            "MM" => write!(out, "{:02}", t.month()),
            "M" => write!(out, "{}", t.month()),
            "DD" => write!(out, "{:02}", t.day()),
            "Do" => write!(out, "{}{}", t.day(), ordinal(t.day())),
            "D" => write!(out, "{}", t.day()),
            "dddd" => write!(out, "{weekday}"),
            "ddd" => write!(out, "{}", &weekday[..3]),
            "HH" => write!(out, "{:02}", t.hour()),
            "H" => write!(out, "{}", t.hour()),
            "hh" => write!(out, "{hour12:02}"),
            "h" => write!(out, "{hour12}"),
            "mm" => write!(out, "{:02}", t.minute()),
            "m" => write!(out, "{}", t.minute()),
            "ss" => write!(out, "{:02}", t.second()),
            "s" => write!(out, "{}", t.second()),
            "A" => write!(out, "{}", if t.hour() < 12 { "AM" } else { "PM" }),
            "a" => write!(out, "{}", if t.hour() < 12 { "am" } else { "pm" }),
            _ => {
                // `[text]`: literal up to `]`; an unmatched `[` is itself literal.
                let close = if no_close { None } else { rest.find(']') };
                match close {
                    Some(end) => {
                        out.push_str(&rest[..end]);
                        rest = &rest[end + 1..];
                    }
                    None => {
                        no_close = true;
                        out.push('[');
                    }
                }
                Ok(())
            }
        };
    }
}

/// The hours of a `time::UTC±N` argument (trimmed by the caller): `UTC` in any case, a sign,
/// ASCII digits, 0 to 15 (SPEC §11.6). `None` for anything else.
pub(crate) fn utc_offset_hours(arg: &str) -> Option<i32> {
    let rest = arg.get(..3).filter(|p| p.eq_ignore_ascii_case("utc"))?;
    let rest = &arg[rest.len()..];
    let (sign, digits) = match rest.as_bytes().first()? {
        b'+' => (1, &rest[1..]),
        b'-' => (-1, &rest[1..]),
        _ => return None,
    };
    if digits.is_empty() || digits.len() > 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let hours: i32 = digits.parse().ok()?;
    (hours <= 15).then_some(sign * hours)
}

/// `idle_duration`: the time since `since` as SillyTavern prints it, moment.js's
/// `duration.humanize()` with its default thresholds (SPEC §11.14.3): each unit rounded half
/// up, then the first of `a few seconds`, `a minute`, `N minutes`, `an hour`, `N hours`,
/// `a day`, `N days`, `a month`, `N months`, `a year`, `N years` that fits. No time, or a time
/// in the future, is `just now`.
pub(crate) fn idle(now: DateTime<Utc>, since: Option<DateTime<Utc>>) -> String {
    let Some(since) = since else {
        return "just now".into();
    };
    let ms = (now - since).num_milliseconds();
    if ms < 0 {
        return "just now".into();
    }
    humanize(ms as f64)
}

/// moment.js's `duration.humanize()` of `ms` milliseconds (never negative), default
/// thresholds: each unit rounded half up, then the first wording that fits.
fn humanize(ms: f64) -> String {
    // moment's `Math.round`: half up (the values are never negative here).
    let round = |x: f64| (x + 0.5).floor();
    let seconds = round(ms / 1e3);
    let minutes = round(ms / 6e4);
    let hours = round(ms / 36e5);
    let days = round(ms / 864e5);
    let months_exact = ms / 864e5 * 4800.0 / 146_097.0;
    let months = round(months_exact);
    let years = round(months_exact / 12.0);
    let n = |x: f64, unit: &str| format!("{x} {unit}");
    if seconds <= 44.0 {
        "a few seconds".into()
    } else if minutes <= 1.0 {
        "a minute".into()
    } else if minutes < 45.0 {
        n(minutes, "minutes")
    } else if hours <= 1.0 {
        "an hour".into()
    } else if hours < 22.0 {
        n(hours, "hours")
    } else if days <= 1.0 {
        "a day".into()
    } else if days < 26.0 {
        n(days, "days")
    } else if months <= 1.0 {
        "a month".into()
    } else if months < 11.0 {
        n(months, "months")
    } else if years <= 1.0 {
        "a year".into()
    } else {
        n(years, "years")
    }
}

/// `{{timeDiff::A::B}}` as SillyTavern prints it: `moment.duration(moment(A).diff(moment(B)))
/// .humanize(true)`, so `in 3 hours` when A is later and `3 hours ago` otherwise (a zero
/// difference is `a few seconds ago`); `Invalid date` when either does not parse. Times parse
/// as moment's ISO 8601 forms do (`parse_iso`); moment's last resort, JavaScript's `Date`
/// parser for any other text, is not followed: such text is an invalid date here.
pub(crate) fn time_diff(a: &str, b: &str) -> String {
    let (Some(a), Some(b)) = (parse_iso(a), parse_iso(b)) else {
        return "Invalid date".into();
    };
    let ms = (a - b).num_milliseconds();
    let words = humanize(ms.unsigned_abs() as f64);
    if ms > 0 {
        format!("in {words}")
    } else {
        format!("{words} ago")
    }
}

/// A time in one of moment.js's ISO 8601 forms (its `configFromISO`), in UTC when it names no
/// offset (the render's clock is UTC): a calendar date `YYYY-MM-DD`, `YYYY-MM` or basic
/// `YYYYMMDD` / `YYYY`, optionally then `T` or a space and `HH`, `HH:mm`, `HH:mm:ss`,
/// `HH:mm:ss.SSS` (or `,`; basic forms without colons), then `Z` or `±HH:mm` / `±HHmm` /
/// `±HH`. Week and ordinal dates are not read (`None`, as an invalid date).
pub(crate) fn parse_iso(text: &str) -> Option<DateTime<Utc>> {
    let text = text.trim_start();
    let digits = |s: &str, n: usize| -> Option<u32> {
        let d = s.get(..n)?;
        d.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| d.parse().ok())?
    };
    let year = digits(text, 4)? as i32;
    let mut rest = &text[4..];
    let extended = rest.starts_with('-');
    let (month, day) = if extended {
        rest = &rest[1..];
        let month = digits(rest, 2)?;
        rest = &rest[2..];
        let day = match rest.strip_prefix('-') {
            Some(r) => {
                let d = digits(r, 2)?;
                rest = &r[2..];
                d
            }
            None => 1,
        };
        (month, day)
    } else if let Some(md) = digits(rest, 4) {
        rest = &rest[4..];
        (md / 100, md % 100)
    } else {
        (1, 1)
    };
    let date = chrono::NaiveDate::from_ymd_opt(year, month, day)?;
    let (mut h, mut m, mut s, mut ms) = (0, 0, 0, 0u32);
    let mut offset_minutes = 0i32;
    if let Some(time) = rest.strip_prefix(['T', ' ']) {
        fn sep(r: &str, extended: bool) -> Option<&str> {
            if extended {
                r.strip_prefix(':')
            } else {
                Some(r)
            }
        }
        let mut r = time;
        h = digits(r, 2)?;
        r = &r[2..];
        if let Some(after) = sep(r, extended).filter(|a| digits(a, 2).is_some()) {
            m = digits(after, 2)?;
            r = &after[2..];
            if let Some(after) = sep(r, extended).filter(|a| digits(a, 2).is_some()) {
                s = digits(after, 2)?;
                r = &after[2..];
                if let Some(frac) = r.strip_prefix(['.', ',']) {
                    let n = frac.bytes().take_while(u8::is_ascii_digit).count();
                    if n == 0 {
                        return None;
                    }
                    // moment keeps milliseconds: the first three digits.
                    let f = &frac[..n];
                    ms = format!("{:0<3}", &f[..n.min(3)]).parse().ok()?;
                    r = &frac[n..];
                }
            }
        }
        let zone = r.trim_start();
        if zone == "Z" {
            r = "";
        } else if let Some(sign) = r.chars().next().filter(|c| *c == '+' || *c == '-') {
            let z = &r[1..];
            let oh = digits(z, 2)?;
            let z = &z[2..];
            let z = z.strip_prefix(':').unwrap_or(z);
            let om = if z.is_empty() { 0 } else { digits(z, 2)? };
            if z.len() > 2 {
                return None;
            }
            offset_minutes = (oh * 60 + om) as i32 * if sign == '-' { -1 } else { 1 };
            r = "";
        }
        if !r.is_empty() {
            return None;
        }
        // moment takes 24:00:00.000 as the next midnight.
        if h == 24 && m == 0 && s == 0 && ms == 0 {
            let next = date.succ_opt()?.and_hms_opt(0, 0, 0)?;
            return Some(Utc.from_utc_datetime(&next) - Duration::minutes(offset_minutes.into()));
        }
    } else if !rest.is_empty() {
        return None;
    }
    let t = date.and_hms_milli_opt(h, m, s, ms)?;
    Some(Utc.from_utc_datetime(&t) - Duration::minutes(offset_minutes.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_forms_moment_reads() {
        let t = |s: &str| parse_iso(s).map(|d| d.to_rfc3339());
        assert_eq!(
            t("2023-01-02").as_deref(),
            Some("2023-01-02T00:00:00+00:00")
        );
        assert_eq!(t("2023-01").as_deref(), Some("2023-01-01T00:00:00+00:00"));
        assert_eq!(t("20230102").as_deref(), Some("2023-01-02T00:00:00+00:00"));
        assert_eq!(t("2023").as_deref(), Some("2023-01-01T00:00:00+00:00"));
        assert_eq!(
            t("2023-01-02 03:04").as_deref(),
            Some("2023-01-02T03:04:00+00:00")
        );
        assert_eq!(
            t("2023-01-02T03:04:05,1234+02:30").as_deref(),
            Some("2023-01-02T00:34:05.123+00:00")
        );
        assert_eq!(
            t("20230102T0304-0100").as_deref(),
            Some("2023-01-02T04:04:00+00:00")
        );
        assert_eq!(
            t("2023-01-02T24:00").as_deref(),
            Some("2023-01-03T00:00:00+00:00")
        );
        for bad in [
            "",
            "yesterday",
            "2023-02-30",
            "2023-01-02T25:00",
            "2023-01-02T03:04x",
            "2023-W01",
            "2023-01-02T03:04:05.",
        ] {
            assert_eq!(t(bad), None, "{bad}");
        }
    }

    #[test]
    fn time_diff_words_and_direction() {
        assert_eq!(
            time_diff("2023-01-01 12:00", "2023-01-01 15:00"),
            "3 hours ago"
        );
        assert_eq!(
            time_diff("2023-01-01 15:00", "2023-01-01 12:00"),
            "in 3 hours"
        );
        assert_eq!(time_diff("2023-01-01", "2023-01-01"), "a few seconds ago");
        assert_eq!(time_diff("2023-01-01", "nope"), "Invalid date");
    }

    fn at(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S").unwrap()
    }

    fn fmt(t: NaiveDateTime, f: &str) -> String {
        let mut s = String::new();
        format(t, f, &mut s);
        s
    }

    #[test]
    fn spec_formats() {
        let t = at("2026-11-29 17:07:05");
        assert_eq!(fmt(t, TIME), "5:07 PM");
        assert_eq!(fmt(t, DATE), "November 29, 2026");
        assert_eq!(fmt(t, WEEKDAY), "Sunday");
        assert_eq!(fmt(t, ISOTIME), "17:07");
        assert_eq!(fmt(t, ISODATE), "2026-11-29");
    }

    #[test]
    fn every_token() {
        let t = at("2026-03-02 00:04:09");
        assert_eq!(
            fmt(
                t,
                "YYYY YY MMMM MMM MM M DD D Do dddd ddd HH H hh h mm m ss s A a"
            ),
            "2026 26 March Mar 03 3 02 2 2nd Monday Mon 00 0 12 12 04 4 09 9 AM am"
        );
        assert_eq!(fmt(at("2026-03-11 12:00:00"), "Do h A"), "11th 12 PM");
        assert_eq!(fmt(at("2026-03-23 12:00:00"), "Do"), "23rd");
        assert_eq!(fmt(t, "[Today is] dddd [x"), "Today is Monday [x");
        assert_eq!(fmt(t, "Q é"), "Q é");
        assert_eq!(fmt(t, "[[a]b[c"), "[ab[c");
    }

    #[test]
    fn unmatched_brackets_stay_literal_in_one_pass() {
        let t = at("2026-03-02 00:04:09");
        // A `]` after the first unmatched `[` is still used by that `[`; then none is left.
        assert_eq!(fmt(t, "[[[x]YYYY"), "[[x2026");
        let many = "[".repeat(200_000);
        assert_eq!(fmt(t, &many), many);
    }

    #[test]
    fn offsets_shift_the_day() {
        let now: DateTime<Utc> = "2026-01-01T02:00:00Z".parse().unwrap();
        assert_eq!(
            fmt(local(now, -180), "YYYY-MM-DD HH:mm"),
            "2025-12-31 23:00"
        );
        assert_eq!(fmt(local(now, 480), "HH:mm"), "10:00");
    }

    #[test]
    fn idle_units() {
        let now: DateTime<Utc> = "2026-11-29T17:07:00Z".parse().unwrap();
        let ago = |s: i64| Some(now - Duration::seconds(s));
        assert_eq!(idle(now, None), "just now");
        assert_eq!(idle(now, ago(-500)), "just now");
        for (secs, want) in [
            (0, "a few seconds"),
            (44, "a few seconds"),
            (45, "a minute"),
            (89, "a minute"),
            (90, "2 minutes"),
            (44 * 60 + 29, "44 minutes"),
            (44 * 60 + 30, "an hour"),
            (89 * 60 + 59, "an hour"),
            (90 * 60, "2 hours"),
            (21 * 3600 + 29 * 60, "21 hours"),
            (21 * 3600 + 30 * 60, "a day"),
            (36 * 3600, "2 days"),
            (25 * 86_400 + 11 * 3600, "25 days"),
            (25 * 86_400 + 12 * 3600, "a month"),
            (45 * 86_400, "a month"),
            (46 * 86_400, "2 months"),
            (319 * 86_400, "10 months"),
            (320 * 86_400, "a year"),
            (547 * 86_400, "a year"),
            (548 * 86_400, "2 years"),
            (86_400 * 400 * 10, "11 years"),
        ] {
            assert_eq!(idle(now, ago(secs)), want, "{secs} s");
        }
    }
}
