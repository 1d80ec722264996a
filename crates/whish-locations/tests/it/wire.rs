//! The locations client on the wire, and every locations fixture decoded.

use whish_core::{Error as CoreError, SecretString};
use whish_locations::{LocationsClient, LocationsCode, ShopFilter, ShopType};
use whish_testkit::{ScriptedServer, Step, fixture};

fn client(base: &str) -> LocationsClient {
    LocationsClient::builder(format!("{base}/sandbox/api"))
        .username("merchant-7")
        .key(SecretString::from("loc-SECRET-1"))
        .build()
        .expect("client")
}

#[tokio::test]
async fn governorates_on_the_wire_and_decoded() {
    let server = ScriptedServer::start(vec![
        Step::json(fixture("locations/governorates.success.json")),
        Step::json(fixture("locations/governorates.empty.success.json")),
    ])
    .await;
    let c = client(&server.base);
    let all = c.governorates().await.expect("governorates");
    assert_eq!(all.len(), 8);
    let districts: Vec<i64> = all
        .iter()
        .flat_map(|g| g.districts.iter().map(|d| d.id))
        .collect();
    assert_eq!(districts, (1..=26).collect::<Vec<_>>());
    assert_eq!(all[0].districts[0].governorate.as_deref(), Some("LB-BA"));
    assert!(c.governorates().await.expect("empty").is_empty());
    let mut req = server.requests()[0].clone();
    assert_eq!(req.path, "/sandbox/api/api/governorates");
    let rid = req
        .header("request-id")
        .expect("Request-id on every request")
        .to_owned();
    assert!(rid.parse::<i64>().expect("numeric") > 0);
    for h in &mut req.headers {
        if h.0 == "request-id" {
            h.1 = "[generated]".into();
        }
    }
    insta::assert_json_snapshot!("governorates_request", req);
    insta::assert_debug_snapshot!("governorates_decoded", all);
}

#[tokio::test]
async fn shops_on_the_wire_with_filters_and_decoded() {
    let server = ScriptedServer::start(vec![
        Step::json(fixture("locations/shops.success.json")),
        Step::json(fixture("locations/shops.empty.success.json")),
    ])
    .await;
    let c = client(&server.base);
    let shops = c.shops(&ShopFilter::default()).await.expect("shops");
    assert_eq!(shops.len(), 3);
    assert_eq!(
        shops[0].shop_type,
        ShopType::Branch("Whish Money Branches".into())
    );
    assert_eq!(shops[1].shop_type, ShopType::PartnerAgent);
    assert_eq!(shops[1].working_hours, None);
    assert_eq!(shops[2].shop_type, ShopType::Other("Express Kiosk".into()));
    assert_eq!(shops[2].working_hours, None, "absent key is None");
    let none = c
        .shops(&ShopFilter::default().governorate_id(2).district_id(7))
        .await
        .expect("empty");
    assert!(none.is_empty());
    let reqs = server.requests();
    assert_eq!(reqs[0].path, "/sandbox/api/api/shops");
    assert_eq!(
        reqs[1].path,
        "/sandbox/api/api/shops?governorateId=2&districtId=7"
    );
    let mut filtered = reqs[1].clone();
    for h in &mut filtered.headers {
        if h.0 == "request-id" {
            h.1 = "[generated]".into();
        }
    }
    insta::assert_json_snapshot!("shops_request_filtered", filtered);
    insta::assert_debug_snapshot!("shops_decoded", shops);
}

#[tokio::test]
async fn failures_and_refusals() {
    let server = ScriptedServer::start(vec![Step::json(fixture(
        "locations/failure.account-invalid-request.json",
    ))])
    .await;
    let c = client(&server.base);
    let err = c.governorates().await.expect_err("auth");
    assert_eq!(err.code(), Some(&LocationsCode::ApiAccountInvalidRequest));
    let err = c
        .shops(&ShopFilter::default().district_id(0))
        .await
        .expect_err("bad id");
    assert!(matches!(err, CoreError::Validation(_)));
    assert_eq!(server.hits(), 1, "the refused lookup sent nothing");
    assert!(!format!("{c:?}").contains("loc-SECRET-1"));
}
