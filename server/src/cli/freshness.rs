//! `reckon freshness`: which numbers are final, in plain words (the cost priced with the
//! defaults: the instructor's price model is the server's).

use app::model::CostModel;

use crate::service::lab::Lab;

pub async fn execute(lab: &Lab, json: bool) -> anyhow::Result<()> {
    let freshness =
        crate::service::pages::freshness::freshness(lab, chrono::Utc::now(), &CostModel::default())
            .await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&freshness)?);
    } else {
        println!("{}", freshness.sentences.join(" "));
    }
    Ok(())
}
