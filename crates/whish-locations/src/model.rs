//! Governorates, districts and shops.

use serde::{Deserialize, Serialize};

/// A governorate and its districts.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[non_exhaustive]
pub struct Governorate {
    /// Id, usable as `governorateId`.
    pub id: i64,
    /// Name.
    pub label: String,
    /// Its districts.
    #[serde(default)]
    pub districts: Vec<District>,
}

/// A district.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[non_exhaustive]
pub struct District {
    /// Id, usable as `districtId`.
    pub id: i64,
    /// The governorate code, `LB-xx`.
    #[serde(default)]
    pub governorate: Option<String>,
    /// Name.
    pub label: String,
}

/// What kind of place a shop is. The branch value is an opaque string whose brand segment is the
/// operator's own name ("... Branches"); it is kept as sent.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ShopType {
    /// An operator branch (the literal, as sent).
    Branch(String),
    /// A partner agent (`Normal`).
    PartnerAgent,
    /// A value the specification does not list, kept as sent.
    Other(String),
}

impl ShopType {
    /// The string as the service writes it.
    pub fn as_str(&self) -> &str {
        match self {
            ShopType::Branch(s) | ShopType::Other(s) => s,
            ShopType::PartnerAgent => "Normal",
        }
    }

    /// Read a value; never fails.
    pub fn parse(s: &str) -> ShopType {
        if s == "Normal" {
            ShopType::PartnerAgent
        } else if s.ends_with(" Branches") || s == "Branches" {
            ShopType::Branch(s.to_owned())
        } else {
            ShopType::Other(s.to_owned())
        }
    }
}

whish_core::string_enum_impls!(ShopType);

/// A place where cash can be collected.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Shop {
    /// Shop id.
    pub id: i64,
    /// Name.
    pub name: String,
    /// Phone.
    #[serde(default)]
    pub phone: Option<String>,
    /// Address description.
    #[serde(default)]
    pub address: Option<String>,
    /// Latitude (a coordinate, not money).
    #[serde(default)]
    pub latitude: Option<f64>,
    /// Longitude.
    #[serde(default)]
    pub longitude: Option<f64>,
    /// Link to the shop details page.
    #[serde(default)]
    pub url: Option<String>,
    /// Branch or partner agent.
    #[serde(rename = "type")]
    pub shop_type: ShopType,
    /// Opening hours when reported.
    #[serde(default)]
    pub working_hours: Option<String>,
}
