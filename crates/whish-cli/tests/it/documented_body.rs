//! The `transfer send --body` shape docs/cli.md documents is a body the command sends: the
//! JSON block under "A complete body for a cash-collection transfer", as written there.

use crate::support::*;

fn documented_body() -> String {
    let doc = include_str!("../../../../docs/cli.md");
    let from = doc
        .find("A complete body for a cash-collection transfer")
        .expect("the documented body's heading");
    let rest = &doc[from..];
    let start = rest.find("```json").expect("a json block") + "```json".len();
    let end = rest[start..].find("```").expect("the block's end") + start;
    rest[start..end].to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_documented_send_body_is_sent_as_written() {
    let sb = funded_sandbox().await;
    let mut env = sb.env_vars();
    let journal = temp_file("documented-body.sqlite", "");
    let _ = std::fs::remove_file(&journal);
    env.push(journal_at(&journal));
    let body = temp_file("documented-body.json", &documented_body())
        .display()
        .to_string();
    let sent = whish(&["transfer", "send", "--body", &body], &env).await;
    assert_eq!(sent.code, 0, "{sent:?}");
    assert_eq!(sent.json()["result"], "sent");
    assert_eq!(sb.transfers().len(), 1);
}
