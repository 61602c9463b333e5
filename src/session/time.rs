//! Timestamps in milliseconds since the epoch.
//!
//! Pi writes entry timestamps as ISO-8601 strings (`toISOString()`) and
//! message timestamps as numbers. This parses the ISO forms `Date.parse`
//! accepts for such strings; anything else yields `None` rather than a guess.

use serde_json::value::RawValue;

/// A raw JSON timestamp: a finite number (ms) or an ISO-8601 string.
pub fn raw_timestamp_ms(raw: Option<&RawValue>) -> Option<i64> {
  let text = raw?.get();
  if text.starts_with('"') {
    let value: String = serde_json::from_str(text).ok()?;
    return parse_iso_ms(&value);
  }
  let number: f64 = serde_json::from_str(text).ok()?;
  number.is_finite().then(|| number.round() as i64)
}

fn digits(text: &str, from: usize, count: usize) -> Option<i64> {
  let part = text.get(from..from + count)?;
  if !part.bytes().all(|b| b.is_ascii_digit()) {
    return None;
  }
  part.parse().ok()
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
  let y = if month <= 2 { year - 1 } else { year };
  let era = y.div_euclid(400);
  let yoe = y - era * 400;
  let mp = (month + 9) % 12;
  let doy = (153 * mp + 2) / 5 + day - 1;
  let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  era * 146_097 + doe - 719_468
}

/// `YYYY-MM-DD[(T| )HH:MM[:SS[.fff…]]][Z|±HH:MM|±HHMM]`; no offset means UTC.
pub fn parse_iso_ms(text: &str) -> Option<i64> {
  let text = text.trim();
  let year = digits(text, 0, 4)?;
  if text.get(4..5)? != "-" || text.get(7..8)? != "-" {
    return None;
  }
  let month = digits(text, 5, 2)?;
  let day = digits(text, 8, 2)?;
  if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
    return None;
  }
  let mut ms = days_from_civil(year, month, day) * 86_400_000;
  let rest = &text[10..];
  if rest.is_empty() {
    return Some(ms);
  }
  let sep = rest.as_bytes()[0];
  if sep != b'T' && sep != b't' && sep != b' ' {
    return None;
  }
  let hour = digits(rest, 1, 2)?;
  if rest.get(3..4)? != ":" {
    return None;
  }
  let minute = digits(rest, 4, 2)?;
  let mut at = 6;
  let mut second = 0;
  let mut millis = 0;
  if rest.get(at..at + 1) == Some(":") {
    second = digits(rest, at + 1, 2)?;
    at += 3;
    if rest.get(at..at + 1) == Some(".") {
      let fraction: String = rest[at + 1..].chars().take_while(char::is_ascii_digit).collect();
      if fraction.is_empty() {
        return None;
      }
      let padded = format!("{fraction:0<3}");
      millis = padded[..3].parse::<i64>().ok()?;
      at += 1 + fraction.len();
    }
  }
  if hour > 24 || minute > 59 || second > 59 {
    return None;
  }
  ms += ((hour * 60 + minute) * 60 + second) * 1000 + millis;
  let zone = &rest[at..];
  let offset_minutes = match zone {
    "" | "Z" | "z" => 0,
    _ => {
      let sign = match zone.as_bytes()[0] {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
      };
      let compact = zone[1..].replace(':', "");
      if compact.len() != 4 {
        return None;
      }
      sign * (digits(&compact, 0, 2)? * 60 + digits(&compact, 2, 2)?)
    }
  };
  Some(ms - offset_minutes * 60_000)
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn parses_pi_iso_timestamps() {
    assert_eq!(parse_iso_ms("1970-01-01T00:00:00.000Z"), Some(0));
    assert_eq!(parse_iso_ms("2026-11-30T14:56:25.740Z"), Some(1_796_050_585_740));
    assert_eq!(parse_iso_ms("2026-11-30T15:56:25.740+01:00"), Some(1_796_050_585_740));
    assert_eq!(parse_iso_ms("2026-11-30"), Some(1_795_996_800_000));
    assert_eq!(parse_iso_ms("yesterday"), None);
    assert_eq!(parse_iso_ms("2026-13-01T00:00:00Z"), None);
  }

  #[test]
  fn numbers_are_milliseconds() {
    let raw: Box<RawValue> = serde_json::from_str("1796050585741").unwrap();
    assert_eq!(raw_timestamp_ms(Some(&raw)), Some(1_796_050_585_741));
  }
}
