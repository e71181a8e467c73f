//! Money: amounts are integers in minor units (cents for EUR, yen for JPY) and
//! currencies are ISO 4217 alpha-3 codes.

/// The largest amount accepted, in minor units (10^12: ten billion in a two-decimal currency).
pub const MAX_AMOUNT: i64 = 1_000_000_000_000;

/// The ISO 4217 alpha-3 codes of currencies in circulation (as of 2026; the precious
/// metal, bond-unit, testing and "no currency" codes are excluded: nothing is paid in
/// them), sorted for binary search.
const CURRENCIES: &[&str] = &[
    "AED", "AFN", "ALL", "AMD", "AOA", "ARS", "AUD", "AWG", "AZN", "BAM", "BBD", "BDT", "BGN",
    "BHD", "BIF", "BMD", "BND", "BOB", "BOV", "BRL", "BSD", "BTN", "BWP", "BYN", "BZD", "CAD",
    "CDF", "CHE", "CHF", "CHW", "CLF", "CLP", "CNY", "COP", "COU", "CRC", "CUP", "CVE", "CZK",
    "DJF", "DKK", "DOP", "DZD", "EGP", "ERN", "ETB", "EUR", "FJD", "FKP", "GBP", "GEL", "GHS",
    "GIP", "GMD", "GNF", "GTQ", "GYD", "HKD", "HNL", "HTG", "HUF", "IDR", "ILS", "INR", "IQD",
    "IRR", "ISK", "JMD", "JOD", "JPY", "KES", "KGS", "KHR", "KMF", "KPW", "KRW", "KWD", "KYD",
    "KZT", "LAK", "LBP", "LKR", "LRD", "LSL", "LYD", "MAD", "MDL", "MGA", "MKD", "MMK", "MNT",
    "MOP", "MRU", "MUR", "MVR", "MWK", "MXN", "MXV", "MYR", "MZN", "NAD", "NGN", "NIO", "NOK",
    "NPR", "NZD", "OMR", "PAB", "PEN", "PGK", "PHP", "PKR", "PLN", "PYG", "QAR", "RON", "RSD",
    "RUB", "RWF", "SAR", "SBD", "SCR", "SDG", "SEK", "SGD", "SHP", "SLE", "SOS", "SRD", "SSP",
    "STN", "SVC", "SYP", "SZL", "THB", "TJS", "TMT", "TND", "TOP", "TRY", "TTD", "TWD", "TZS",
    "UAH", "UGX", "USD", "USN", "UYI", "UYU", "UYW", "UZS", "VED", "VES", "VND", "VUV", "WST",
    "XAF", "XCD", "XCG", "XOF", "XPF", "YER", "ZAR", "ZMW", "ZWG",
];

/// Whether `code` is a known ISO 4217 currency code (uppercase, as ISO writes it).
pub fn is_known_currency(code: &str) -> bool {
    CURRENCIES.binary_search(&code).is_ok()
}

/// Checks an amount in minor units: 1 ≤ amount ≤ [`MAX_AMOUNT`].
pub fn check_amount(amount: i64) -> Result<i64, String> {
    if (1..=MAX_AMOUNT).contains(&amount) {
        Ok(amount)
    } else {
        Err(format!(
            "must be an integer number of minor units from 1 to {MAX_AMOUNT}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn currency_table_is_sorted_and_checked() {
        assert!(
            CURRENCIES.windows(2).all(|w| w[0] < w[1]),
            "binary search needs sorted codes"
        );
        assert!(is_known_currency("EUR") && is_known_currency("JPY"));
        assert!(
            !is_known_currency("eur") && !is_known_currency("XXX") && !is_known_currency("EURO")
        );
    }

    #[test]
    fn amount_bounds() {
        assert!(check_amount(0).is_err() && check_amount(-1).is_err());
        assert!(check_amount(1).is_ok() && check_amount(MAX_AMOUNT).is_ok());
        assert!(check_amount(MAX_AMOUNT + 1).is_err());
    }
}
