//! The shape of each response this client reads, at the one version it reads it (see
//! `versions.rs`; ApiVersions at 3, as `Connection::open` asks), from Kafka's message
//! definitions. A field or tag that exists only at other versions is left out.

use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, ApiVersionsRequest, CreateTopicsRequest, DeleteTopicsRequest, EndTxnRequest,
    FetchRequest, FindCoordinatorRequest, InitProducerIdRequest, ListOffsetsRequest, MetadataRequest, ProduceRequest,
};
use kafka_protocol::protocol::Request;

use super::Field::{Array, Bytes, Fixed, Int32s, Struct};
use super::Shape;

const THROTTLE: super::Field = Fixed("throttle_time_ms", 4);
const ERROR_CODE: super::Field = Fixed("error_code", 2);

/// The shape of the response to API `key` at `version`, if this client reads it at that version.
pub(crate) fn shape_of(key: i16, version: i16) -> Option<&'static Shape> {
    Some(match (key, version) {
        (ApiVersionsRequest::KEY, 3) => &API_VERSIONS_V3,
        (ProduceRequest::KEY, 9) => &PRODUCE_V9,
        (FetchRequest::KEY, 12) => &FETCH_V12,
        (ListOffsetsRequest::KEY, 7) => &LIST_OFFSETS_V7,
        (MetadataRequest::KEY, 12) => &METADATA_V12,
        (InitProducerIdRequest::KEY, 4) => &INIT_PRODUCER_ID_V4,
        (CreateTopicsRequest::KEY, 7) => &CREATE_TOPICS_V7,
        (FindCoordinatorRequest::KEY, 4) => &FIND_COORDINATOR_V4,
        (AddPartitionsToTxnRequest::KEY, 3) => &ADD_PARTITIONS_TO_TXN_V3,
        (EndTxnRequest::KEY, 3) => &END_TXN_V3,
        (DeleteTopicsRequest::KEY, 5) => &DELETE_TOPICS_V5,
        _ => return None,
    })
}

const API_VERSIONS_V3: Shape = Shape {
    fields: &[
        ERROR_CODE,
        Array(
            "api_keys",
            &Shape { fields: &[Fixed("api_key", 2), Fixed("min_version", 2), Fixed("max_version", 2)], tags: &[] },
        ),
        THROTTLE,
    ],
    tags: &[
        (0, Array("supported_features", &FEATURE)),
        (1, Fixed("finalized_features_epoch", 8)),
        (2, Array("finalized_features", &FEATURE)),
        (3, Fixed("zk_migration_ready", 1)),
    ],
};

/// A supported or finalized feature: its name and a range of two int16 levels.
const FEATURE: Shape = Shape { fields: &[Bytes("name"), Fixed("version_levels", 4)], tags: &[] };

const PRODUCE_V9: Shape = Shape {
    fields: &[
        Array(
            "responses",
            &Shape {
                fields: &[
                    Bytes("name"),
                    Array(
                        "partition_responses",
                        &Shape {
                            fields: &[
                                Fixed("index", 4),
                                ERROR_CODE,
                                Fixed("base_offset", 8),
                                Fixed("log_append_time_ms", 8),
                                Fixed("log_start_offset", 8),
                                Array(
                                    "record_errors",
                                    &Shape {
                                        fields: &[Fixed("batch_index", 4), Bytes("batch_index_error_message")],
                                        tags: &[],
                                    },
                                ),
                                Bytes("error_message"),
                            ],
                            tags: &[],
                        },
                    ),
                ],
                tags: &[],
            },
        ),
        THROTTLE,
    ],
    tags: &[],
};

const FETCH_V12: Shape = Shape {
    fields: &[
        THROTTLE,
        ERROR_CODE,
        Fixed("session_id", 4),
        Array("responses", &Shape { fields: &[Bytes("topic"), Array("partitions", &FETCH_PARTITION)], tags: &[] }),
    ],
    tags: &[],
};

const FETCH_PARTITION: Shape = Shape {
    fields: &[
        Fixed("partition_index", 4),
        ERROR_CODE,
        Fixed("high_watermark", 8),
        Fixed("last_stable_offset", 8),
        Fixed("log_start_offset", 8),
        Array(
            "aborted_transactions",
            &Shape { fields: &[Fixed("producer_id", 8), Fixed("first_offset", 8)], tags: &[] },
        ),
        Fixed("preferred_read_replica", 4),
        Bytes("records"),
    ],
    tags: &[
        (0, Struct("diverging_epoch", &Shape { fields: &[Fixed("epoch", 4), Fixed("end_offset", 8)], tags: &[] })),
        (1, Struct("current_leader", &Shape { fields: &[Fixed("leader_id", 4), Fixed("leader_epoch", 4)], tags: &[] })),
        (2, Struct("snapshot_id", &Shape { fields: &[Fixed("end_offset", 8), Fixed("epoch", 4)], tags: &[] })),
    ],
};

const LIST_OFFSETS_V7: Shape = Shape {
    fields: &[
        THROTTLE,
        Array(
            "topics",
            &Shape {
                fields: &[
                    Bytes("name"),
                    Array(
                        "partitions",
                        &Shape {
                            fields: &[
                                Fixed("partition_index", 4),
                                ERROR_CODE,
                                Fixed("timestamp", 8),
                                Fixed("offset", 8),
                                Fixed("leader_epoch", 4),
                            ],
                            tags: &[],
                        },
                    ),
                ],
                tags: &[],
            },
        ),
    ],
    tags: &[],
};

const METADATA_V12: Shape = Shape {
    fields: &[
        THROTTLE,
        Array(
            "brokers",
            &Shape { fields: &[Fixed("node_id", 4), Bytes("host"), Fixed("port", 4), Bytes("rack")], tags: &[] },
        ),
        Bytes("cluster_id"),
        Fixed("controller_id", 4),
        Array(
            "topics",
            &Shape {
                fields: &[
                    ERROR_CODE,
                    Bytes("name"),
                    Fixed("topic_id", 16),
                    Fixed("is_internal", 1),
                    Array(
                        "partitions",
                        &Shape {
                            fields: &[
                                ERROR_CODE,
                                Fixed("partition_index", 4),
                                Fixed("leader_id", 4),
                                Fixed("leader_epoch", 4),
                                Int32s("replica_nodes"),
                                Int32s("isr_nodes"),
                                Int32s("offline_replicas"),
                            ],
                            tags: &[],
                        },
                    ),
                    Fixed("topic_authorized_operations", 4),
                ],
                tags: &[],
            },
        ),
    ],
    tags: &[],
};

const INIT_PRODUCER_ID_V4: Shape =
    Shape { fields: &[THROTTLE, ERROR_CODE, Fixed("producer_id", 8), Fixed("producer_epoch", 2)], tags: &[] };

const CREATE_TOPICS_V7: Shape = Shape {
    fields: &[
        THROTTLE,
        Array(
            "topics",
            &Shape {
                fields: &[
                    Bytes("name"),
                    Fixed("topic_id", 16),
                    ERROR_CODE,
                    Bytes("error_message"),
                    Fixed("num_partitions", 4),
                    Fixed("replication_factor", 2),
                    Array(
                        "configs",
                        &Shape {
                            fields: &[
                                Bytes("name"),
                                Bytes("value"),
                                Fixed("read_only", 1),
                                Fixed("config_source", 1),
                                Fixed("is_sensitive", 1),
                            ],
                            tags: &[],
                        },
                    ),
                ],
                tags: &[(0, Fixed("topic_config_error_code", 2))],
            },
        ),
    ],
    tags: &[],
};

const FIND_COORDINATOR_V4: Shape = Shape {
    fields: &[
        THROTTLE,
        Array(
            "coordinators",
            &Shape {
                fields: &[
                    Bytes("key"),
                    Fixed("node_id", 4),
                    Bytes("host"),
                    Fixed("port", 4),
                    ERROR_CODE,
                    Bytes("error_message"),
                ],
                tags: &[],
            },
        ),
    ],
    tags: &[],
};

const ADD_PARTITIONS_TO_TXN_V3: Shape = Shape {
    fields: &[
        THROTTLE,
        Array(
            "results_by_topic_v3_and_below",
            &Shape {
                fields: &[
                    Bytes("name"),
                    Array(
                        "results_by_partition",
                        &Shape { fields: &[Fixed("partition_index", 4), Fixed("partition_error_code", 2)], tags: &[] },
                    ),
                ],
                tags: &[],
            },
        ),
    ],
    tags: &[],
};

const END_TXN_V3: Shape = Shape { fields: &[THROTTLE, ERROR_CODE], tags: &[] };

const DELETE_TOPICS_V5: Shape = Shape {
    fields: &[
        THROTTLE,
        Array("responses", &Shape { fields: &[Bytes("name"), ERROR_CODE, Bytes("error_message")], tags: &[] }),
    ],
    tags: &[],
};
