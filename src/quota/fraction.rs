//! Exact decimal usage fractions (`usage_percentage: "0.17"`) and the remaining capacity they
//! leave: `floor(limit × (1 − fraction))`, never below zero.
//!
//! The reference uses Python's `Decimal`; floats would misround values such as `0.29 × 100`.
//! Here the text is kept as digits and an exponent, and the product is done in integers.

use std::cmp::Ordering;

/// Fractional digits kept when computing a remainder. Beyond these the fraction is rounded
/// *up*, so excess precision can only lower what is reported as available.
const KEPT_DIGITS: usize = 18;

/// A finite, non-negative decimal: `digits × 10^exponent`, with no leading or trailing zeros
/// in `digits` (empty for zero).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decimal {
    digits: String,
    exponent: i64,
}

/// The largest exponent magnitude read; anything beyond is far outside any usage value and is
/// clamped, which keeps its comparison with 1 correct.
const EXPONENT_CAP: i64 = 1_000_000;

impl Decimal {
    /// Reads decimal text the way Python's `Decimal(str)` does for finite values: optional
    /// surrounding whitespace, an optional sign, digits with an optional point, an optional
    /// exponent. `None` for anything else (NaN, infinities, underscores, empty) and for negative
    /// non-zero values.
    pub fn parse(text: &str) -> Option<Decimal> {
        let text = text.trim();
        let (negative, body) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        let (mantissa, exponent) = match body.find(['e', 'E']) {
            Some(i) => (&body[..i], parse_exponent(&body[i + 1..])?),
            None => (body, 0),
        };
        let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if int_part.is_empty() && frac_part.is_empty()
            || !all_digits(int_part)
            || !all_digits(frac_part)
        {
            return None;
        }
        let mut digits = format!("{int_part}{frac_part}");
        let mut exponent = exponent - frac_part.len() as i64;
        let trimmed = digits.trim_start_matches('0');
        digits = trimmed.to_string();
        let trailing = digits.len() - digits.trim_end_matches('0').len();
        digits.truncate(digits.len() - trailing);
        exponent += trailing as i64;
        if digits.is_empty() {
            return Some(Decimal::zero());
        }
        if negative {
            return None;
        }
        Some(Decimal { digits, exponent })
    }

    pub fn zero() -> Decimal {
        Decimal {
            digits: String::new(),
            exponent: 0,
        }
    }

    /// The value divided by 100 (an old 0..100 percentage turned into a fraction).
    pub fn percent_to_fraction(&self) -> Decimal {
        if self.digits.is_empty() {
            return self.clone();
        }
        Decimal {
            digits: self.digits.clone(),
            exponent: self.exponent - 2,
        }
    }

    /// Compares the value with 1.
    pub fn cmp_one(&self) -> Ordering {
        if self.digits.is_empty() {
            return Ordering::Less;
        }
        // The leading digit is non-zero, so the value has `len + exponent` integer digits.
        let integer_digits = self.digits.len() as i64 + self.exponent;
        if integer_digits <= 0 {
            Ordering::Less
        } else if self.digits == "1" && self.exponent == 0 {
            Ordering::Equal
        } else {
            Ordering::Greater
        }
    }

    /// `max(0, floor(limit × (1 − self)))`.
    pub fn remaining(&self, limit: u64) -> u64 {
        if self.cmp_one() != Ordering::Less {
            return 0;
        }
        // The value is 0.<zeros><digits>; take KEPT_DIGITS fractional digits, rounding up.
        let zeros = usize::try_from(-(self.digits.len() as i64 + self.exponent)).unwrap_or(0);
        let mut fraction = "0".repeat(zeros.min(KEPT_DIGITS + 1));
        fraction.push_str(&self.digits);
        let (kept, rest) = if fraction.len() > KEPT_DIGITS {
            fraction.split_at(KEPT_DIGITS)
        } else {
            (fraction.as_str(), "")
        };
        let scale = 10u128.pow(KEPT_DIGITS as u32);
        let padded = format!("{kept:0<KEPT_DIGITS$}");
        let mut used: u128 = padded.parse().expect("digits only");
        if rest.bytes().any(|b| b != b'0') {
            used += 1;
        }
        if used >= scale {
            return 0;
        }
        // limit < 2^64 and scale - used < 10^18 < 2^60, so the product fits in u128.
        let remaining = u128::from(limit) * (scale - used) / scale;
        u64::try_from(remaining).expect("at most limit")
    }
}

fn parse_exponent(text: &str) -> Option<i64> {
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let magnitude = digits
        .trim_start_matches('0')
        .parse::<i64>()
        .map_or(EXPONENT_CAP, |v| v.min(EXPONENT_CAP));
    Some(if negative { -magnitude } else { magnitude })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rem(text: &str, limit: u64) -> Option<u64> {
        Decimal::parse(text).map(|d| d.remaining(limit))
    }

    #[test]
    fn fractions_leave_the_floor_of_what_is_unused() {
        assert_eq!(rem("0.17", 48), Some(39));
        assert_eq!(rem("0.00", 10), Some(10));
        assert_eq!(rem("0", 10), Some(10));
        assert_eq!(rem("1.25", 10), Some(0));
        assert_eq!(rem("1", 10), Some(0));
        assert_eq!(rem("0.5", 3), Some(1));
        assert_eq!(rem(" .25 ", 8), Some(6));
        assert_eq!(rem("5.", 8), Some(0));
        assert_eq!(rem("2.5e-1", 8), Some(6));
        assert_eq!(rem("1E-2", 100), Some(99));
        assert_eq!(rem("-0", 7), Some(7));
        assert_eq!(rem("0.29", 100), Some(71));
        assert_eq!(rem("0.1", u64::MAX), Some(16602069666338596453));
    }

    #[test]
    fn excess_precision_rounds_usage_up() {
        // Python's 28-digit context rounds 1 − 1e-30 to 1 and reports 10; counting the tiny
        // usage as one whole unit of the last kept digit is the fail-closed side of that.
        assert_eq!(rem("0.000000000000000000000000000001", 10), Some(9));
        assert_eq!(rem("1e-400", 10), Some(9));
        assert_eq!(rem("0.999999999999999999999", 10), Some(0));
    }

    #[test]
    fn rejects_what_is_not_a_finite_non_negative_decimal() {
        for bad in [
            "", " ", "NaN", "Infinity", "inf", "-0.1", "1_0", "0.1.2", "e5", ".", "1e", "abc",
            "0x10", "True",
        ] {
            assert_eq!(Decimal::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn comparison_with_one() {
        let cmp = |t: &str| Decimal::parse(t).unwrap().cmp_one();
        assert_eq!(cmp("1.000"), Ordering::Equal);
        assert_eq!(cmp("0.1e1"), Ordering::Equal);
        assert_eq!(cmp("17"), Ordering::Greater);
        assert_eq!(cmp("0.99"), Ordering::Less);
        assert_eq!(cmp("0"), Ordering::Less);
        assert_eq!(
            Decimal::parse("17")
                .unwrap()
                .percent_to_fraction()
                .remaining(48),
            39
        );
    }
}
