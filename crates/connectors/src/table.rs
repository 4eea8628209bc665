//! Static tables that lookups join against, loaded once per job on each worker.

use arrow_array::RecordBatch;
use sleet_plan::TableSpec;

use crate::ysb::Campaigns;

pub fn load_table(spec: &TableSpec) -> RecordBatch {
    match spec {
        TableSpec::YsbCampaigns { seed } => Campaigns::new(*seed).to_record_batch(),
    }
}
