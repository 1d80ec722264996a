//! Reference data of the transfer service: reasons, sources of funds, governorates, districts,
//! shops.

use serde_json::{Value, json};

/// The exact reason strings the service accepts.
pub(crate) const REASONS: [&str; 9] = [
    "Donations & Gifts",
    "Education",
    "Family Support",
    "Medical Treatment",
    "Purchase of Goods",
    "Travel Expenses",
    "Insurance Plan / Claim",
    "Retirement / Pension",
    "Other",
];

/// The exact sourceOfFunds strings the service accepts.
pub(crate) const SOURCES_OF_FUNDS: [&str; 10] = [
    "Salary",
    "Income from Own Business",
    "Income from Investments",
    "Rent",
    "Inheritance",
    "Savings",
    "Sale of Property or Goods",
    "Loan",
    "Lottery / Gambling",
    "Other",
];

/// (governorate id, code, label, [(district id, label)]).
type GovernorateRow = (
    i64,
    &'static str,
    &'static str,
    &'static [(i64, &'static str)],
);

/// Eight governorates, districts 1 to 26.
pub(crate) const GOVERNORATES: [GovernorateRow; 8] = [
    (1, "LB-BA", "Beirut", &[(1, "Beirut")]),
    (
        2,
        "LB-JL",
        "Mount Lebanon",
        &[
            (2, "Baabda"),
            (3, "Aley"),
            (4, "Matn"),
            (5, "Chouf"),
            (6, "Keserwan"),
            (7, "Jbeil"),
        ],
    ),
    (
        3,
        "LB-AS",
        "North",
        &[
            (8, "Tripoli"),
            (9, "Zgharta"),
            (10, "Koura"),
            (11, "Batroun"),
            (12, "Bsharri"),
            (13, "Minieh-Danniyeh"),
        ],
    ),
    (4, "LB-AK", "Akkar", &[(14, "Akkar")]),
    (
        5,
        "LB-BH",
        "Baalbek-Hermel",
        &[(15, "Baalbek"), (16, "Hermel")],
    ),
    (
        6,
        "LB-BI",
        "Bekaa",
        &[(17, "Zahle"), (18, "West Bekaa"), (19, "Rashaya")],
    ),
    (
        7,
        "LB-JA",
        "South",
        &[(20, "Sidon"), (21, "Tyre"), (22, "Jezzine")],
    ),
    (
        8,
        "LB-NA",
        "Nabatieh",
        &[
            (23, "Nabatieh"),
            (24, "Marjeyoun"),
            (25, "Hasbaya"),
            (26, "Bint Jbeil"),
        ],
    ),
];

/// The type string of an operator branch (opaque, as the interface supplies it).
pub(crate) const BRANCH: &str = "Whish Money Branches";

/// (id, name, district id, branch?, latitude, longitude, working hours)
type ShopRow = (i64, &'static str, i64, bool, f64, f64, Option<&'static str>);

const SHOPS: [ShopRow; 12] = [
    (
        101,
        "Hamra Branch",
        1,
        true,
        33.8959,
        35.4823,
        Some("Mon-Sat 08:30-18:00"),
    ),
    (102, "Achrafieh Agent", 1, false, 33.8886, 35.5197, None),
    (
        103,
        "Baabda Branch",
        2,
        true,
        33.8339,
        35.5442,
        Some("Mon-Sat 09:00-17:00"),
    ),
    (104, "Jounieh Agent", 6, false, 33.9808, 35.6178, None),
    (
        105,
        "Byblos Agent",
        7,
        false,
        34.1230,
        35.6519,
        Some("Mon-Fri 09:00-16:00"),
    ),
    (
        106,
        "Tripoli Branch",
        8,
        true,
        34.4367,
        35.8497,
        Some("Mon-Sat 08:30-17:30"),
    ),
    (107, "Halba Agent", 14, false, 34.5428, 36.0797, None),
    (108, "Baalbek Agent", 15, false, 34.0047, 36.2110, None),
    (
        109,
        "Zahle Branch",
        17,
        true,
        33.8463,
        35.9020,
        Some("Mon-Sat 09:00-17:00"),
    ),
    (
        110,
        "Sidon Branch",
        20,
        true,
        33.5571,
        35.3729,
        Some("Mon-Sat 08:30-17:30"),
    ),
    (111, "Tyre Agent", 21, false, 33.2705, 35.2038, None),
    (112, "Nabatieh Agent", 23, false, 33.3779, 35.4839, None),
];

fn governorate_of(district: i64) -> i64 {
    GOVERNORATES
        .iter()
        .find(|g| g.3.iter().any(|d| d.0 == district))
        .map(|g| g.0)
        .unwrap_or(0)
}

/// The governorates lookup.
pub(crate) fn governorates() -> Value {
    Value::Array(
        GOVERNORATES
            .iter()
            .map(|(id, code, label, districts)| {
                json!({
                    "id": id,
                    "label": label,
                    "districts": districts.iter().map(|(d, l)| json!({"id": d, "governorate": code, "label": l})).collect::<Vec<_>>(),
                })
            })
            .collect(),
    )
}

/// The shops lookup, narrowed by governorate and/or district.
pub(crate) fn shops(governorate: Option<i64>, district: Option<i64>) -> Value {
    Value::Array(
        SHOPS
            .iter()
            .filter(|s| governorate.is_none_or(|g| governorate_of(s.2) == g))
            .filter(|s| district.is_none_or(|d| s.2 == d))
            .map(|(id, name, _, branch, lat, lon, hours)| {
                json!({
                    "id": id,
                    "name": name,
                    "phone": format!("+961 1 {:06}", id * 1111),
                    "address": format!("{name}, Lebanon"),
                    "latitude": lat,
                    "longitude": lon,
                    "url": format!("https://shops.sandbox.invalid/{id}"),
                    "type": if *branch { BRANCH } else { "Normal" },
                    "workingHours": hours,
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eight_governorates_with_districts_one_to_twenty_six() {
        let mut ids: Vec<i64> = GOVERNORATES
            .iter()
            .flat_map(|g| g.3.iter().map(|d| d.0))
            .collect();
        ids.sort_unstable();
        assert_eq!(ids, (1..=26).collect::<Vec<_>>());
        assert_eq!(GOVERNORATES.len(), 8);
        assert!(SHOPS.iter().all(|s| governorate_of(s.2) != 0));
    }
}
