//! The API versions this client speaks, checked once per connection against the broker's.
//!
//! Fixed versions rather than a negotiation: each is one whose fields the code fills in,
//! and all are served by Kafka 3.x and 4.x (4.0 removed the oldest versions).

use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, ApiVersionsResponse, CreateTopicsRequest, DeleteTopicsRequest, EndTxnRequest,
    FetchRequest, FindCoordinatorRequest, InitProducerIdRequest, ListOffsetsRequest, MetadataRequest, ProduceRequest,
};
use kafka_protocol::protocol::Request;
use rustc_hash::FxHashMap as HashMap;

use crate::error::KafkaError;

/// Fetch 12 and Produce 9 are the last versions that name topics (13 uses topic ids).
/// AddPartitionsToTxn 3 and EndTxn 3 are the client versions of the classic transaction
/// protocol (4 is for brokers; EndTxn 5 switches a producer to the epoch-per-transaction
/// protocol, which this client does not speak).
pub fn version_of(key: i16) -> Option<(&'static str, i16)> {
    Some(match key {
        key if key == ProduceRequest::KEY => ("Produce", 9),
        key if key == FetchRequest::KEY => ("Fetch", 12),
        key if key == ListOffsetsRequest::KEY => ("ListOffsets", 7),
        key if key == MetadataRequest::KEY => ("Metadata", 12),
        key if key == InitProducerIdRequest::KEY => ("InitProducerId", 4),
        key if key == CreateTopicsRequest::KEY => ("CreateTopics", 7),
        key if key == FindCoordinatorRequest::KEY => ("FindCoordinator", 4),
        key if key == AddPartitionsToTxnRequest::KEY => ("AddPartitionsToTxn", 3),
        key if key == EndTxnRequest::KEY => ("EndTxn", 3),
        key if key == DeleteTopicsRequest::KEY => ("DeleteTopics", 5),
        _ => return None,
    })
}

#[derive(Default)]
pub struct ApiVersions {
    offered: HashMap<i16, (i16, i16)>,
}

impl ApiVersions {
    pub fn from_response(broker: &str, response: &ApiVersionsResponse) -> Result<Self, KafkaError> {
        KafkaError::check("ApiVersions", || broker.to_string(), response.error_code, &[])?;
        let offered = response.api_keys.iter().map(|api| (api.api_key, (api.min_version, api.max_version))).collect();
        Ok(ApiVersions { offered })
    }

    pub fn check<R: Request>(&self, broker: &str) -> Result<i16, KafkaError> {
        let (api, version) = version_of(R::KEY).unwrap_or(("an unlisted API", R::VERSIONS.max));
        let (min, max) = self.offered.get(&R::KEY).copied().unwrap_or((-1, -1));
        if (min..=max).contains(&version) {
            Ok(version)
        } else {
            Err(KafkaError::Unsupported { broker: broker.to_string(), api, version, min, max })
        }
    }
}
