//! The money-moving operations of the command, each with a fresh key: shared by the outcome
//! table and the probes that run every operation through the same fault.

use whish_sandbox::{Endpoint, Sandbox};

use super::{cash_body, create_args, temp_file, whish};

/// What one operation needs: its endpoint, and the command (with a fresh key) for a run.
pub struct Op {
    pub name: &'static str,
    pub endpoint: Endpoint,
    pub service_flag: &'static str,
}

pub const OPS: [Op; 5] = [
    Op {
        name: "transfer send",
        endpoint: Endpoint::TransferSend,
        service_flag: "send",
    },
    Op {
        name: "transfer cancel",
        endpoint: Endpoint::TransferCancel,
        service_flag: "cancel",
    },
    Op {
        name: "collect create",
        endpoint: Endpoint::CollectCreate,
        service_flag: "create",
    },
    Op {
        name: "collect refund",
        endpoint: Endpoint::CollectRefund,
        service_flag: "refund",
    },
    Op {
        name: "top-up pay",
        endpoint: Endpoint::TopupPay,
        service_flag: "pay",
    },
];

/// The command line of one run of `op` with a fresh key `n`, after whatever setup it needs
/// (a transfer to cancel, a paid payment to refund); and the journal key it records under.
pub async fn command(
    sb: &Sandbox,
    env: &[(String, String)],
    op: &Op,
    n: usize,
) -> (Vec<String>, String) {
    let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<String>>();
    match op.service_flag {
        "send" => {
            let id = (990_000_000 + n).to_string();
            // A transfer of its own (an amount of its own): the same body as a send whose
            // outcome is still open would be refused as the same transfer sent again.
            let body = temp_file("send.json", &cash_body(&(100 + n).to_string()));
            (
                s(&[
                    "transfer",
                    "send",
                    "--body",
                    &body.display().to_string(),
                    "--request-id",
                    &id,
                ]),
                id,
            )
        }
        "cancel" => {
            let body = temp_file("send.json", &cash_body(&(100 + n).to_string()));
            let sent = whish(
                &[
                    "transfer",
                    "send",
                    "--body",
                    &body.display().to_string(),
                    "--request-id",
                    &(980_000_000 + n).to_string(),
                ],
                env,
            )
            .await;
            assert_eq!(sent.code, 0, "{sent:?}");
            let ltn = sent.json()["ltnNumber"].as_str().expect("ltn").to_owned();
            (s(&["transfer", "cancel", "--ltn", &ltn]), String::new())
        }
        "create" => {
            let x = format!("table-create-{n}");
            (create_args(&x), x)
        }
        "refund" => {
            let x = format!("table-refund-{n}");
            let created = whish(
                &create_args(&x)
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>(),
                env,
            )
            .await;
            assert_eq!(created.code, 0, "{created:?}");
            sb.pay_link(&x).await.expect("paid");
            (
                s(&[
                    "collect",
                    "refund",
                    "--currency",
                    "USD",
                    "--external-id",
                    &x,
                ]),
                x,
            )
        }
        _ => {
            let x = format!("table-pay-{n}");
            (
                s(&[
                    "topup",
                    "pay",
                    "--provider",
                    "gift-voucher",
                    "--target",
                    "a@b.co",
                    "--option-id",
                    "GV-20",
                    "--external-id",
                    &x,
                ]),
                x,
            )
        }
    }
}
