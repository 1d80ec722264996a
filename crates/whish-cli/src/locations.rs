//! `whish locations ...`: governorates, districts and shops (the money-transfer credentials).

use crate::cli::LocationsCmd;
use crate::output::{self, Done};
use crate::settings::Ctx;

pub async fn locations(ctx: &Ctx, cmd: LocationsCmd) -> Done {
    let out = ctx.out;
    let client = ctx.locations()?;
    let report = |e: &whish::locations::Error| output::read_failed(&out, e);
    match cmd {
        LocationsCmd::Governorates => {
            let g = client.governorates().await.map_err(|e| report(&e))?;
            Ok(out.success(&g))
        }
        LocationsCmd::Shops {
            governorate_id,
            district_id,
        } => {
            let mut f = whish::locations::ShopFilter::default();
            if let Some(g) = governorate_id {
                f = f.governorate_id(g);
            }
            if let Some(d) = district_id {
                f = f.district_id(d);
            }
            let s = client.shops(&f).await.map_err(|e| report(&e))?;
            Ok(out.success(&s))
        }
    }
}
