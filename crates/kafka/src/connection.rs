//! One TCP connection to one broker: framed requests and responses, one at a time.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};

use crate::error::KafkaError;
use crate::shape;
use crate::versions::ApiVersions;

const CLIENT_ID: &str = "sleet";
/// A fetch long-polls for at most its own wait, so anything slower than this is a broker
/// that is gone or stuck.
const IO_TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Larger responses are a protocol error, not something to allocate.
pub(crate) const RESPONSE_BYTES_MAX: usize = 256 << 20;

pub struct Connection {
    broker: String,
    stream: TcpStream,
    next_correlation_id: i32,
    versions: ApiVersions,
    request: BytesMut,
}

impl Connection {
    pub fn open(broker: &str) -> Result<Self, KafkaError> {
        let unreachable = |reason: String| KafkaError::Unreachable { broker: broker.to_string(), reason };
        let addresses = broker.to_socket_addrs().map_err(|error| unreachable(error.to_string()))?;
        let mut last_error = format!("`{broker}` resolves to no address");
        let mut stream = None;
        for address in addresses {
            match TcpStream::connect_timeout(&address, CONNECT_TIMEOUT) {
                Ok(connected) => {
                    stream = Some(connected);
                    break;
                }
                Err(error) => last_error = error.to_string(),
            }
        }
        let stream = stream.ok_or_else(|| unreachable(last_error))?;
        let setup = |result: std::io::Result<()>| result.map_err(|error| unreachable(error.to_string()));
        setup(stream.set_nodelay(true))?;
        setup(stream.set_read_timeout(Some(IO_TIMEOUT)))?;
        setup(stream.set_write_timeout(Some(IO_TIMEOUT)))?;
        let mut connection = Connection {
            broker: broker.to_string(),
            stream,
            next_correlation_id: 0,
            versions: ApiVersions::default(),
            request: BytesMut::with_capacity(4096),
        };
        // Version 3 requires the client to name itself (letters, digits, `.` and `-`).
        let hello = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str(CLIENT_ID))
            .with_client_software_version(StrBytes::from_static_str(env!("CARGO_PKG_VERSION")));
        let offered = connection.send(&hello, 3)?;
        connection.versions = ApiVersions::from_response(broker, &offered)?;
        Ok(connection)
    }

    /// Sends `request` at the version this client speaks for its API, checked against what
    /// the broker offered, and waits for the response.
    pub fn call<R: Request>(&mut self, request: &R) -> Result<R::Response, KafkaError> {
        let version = self.versions.check::<R>(&self.broker)?;
        self.send(request, version)
    }

    fn send<R: Request>(&mut self, request: &R, version: i16) -> Result<R::Response, KafkaError> {
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1);
        let api_key = ApiKey::try_from(R::KEY).map_err(|()| self.protocol(format!("unknown API key {}", R::KEY)))?;
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(StrBytes::from_static_str(CLIENT_ID)));
        self.request.clear();
        self.request.extend_from_slice(&[0; 4]);
        let header_version = api_key.request_header_version(version);
        header.encode(&mut self.request, header_version).map_err(|error| self.protocol(error.to_string()))?;
        request.encode(&mut self.request, version).map_err(|error| self.protocol(error.to_string()))?;
        let length = (self.request.len() - 4) as u32;
        self.request[..4].copy_from_slice(&length.to_be_bytes());
        self.stream.write_all(&self.request).map_err(|error| self.io_error(error))?;

        let mut length = [0u8; 4];
        self.stream.read_exact(&mut length).map_err(|error| self.io_error(error))?;
        let length = u32::from_be_bytes(length) as usize;
        if length > RESPONSE_BYTES_MAX {
            return Err(self.protocol(format!("a response of {length} bytes")));
        }
        // Read into spare capacity: zeroing a fetch's megabytes first would be a wasted pass.
        let mut body = Vec::with_capacity(length);
        let read =
            (&mut self.stream).take(length as u64).read_to_end(&mut body).map_err(|error| self.io_error(error))?;
        if read < length {
            return Err(self.io_error(std::io::ErrorKind::UnexpectedEof.into()));
        }
        decode_response::<R>(Bytes::from(body), version, correlation_id).map_err(|reason| self.protocol(reason))
    }

    fn io_error(&self, error: std::io::Error) -> KafkaError {
        KafkaError::Unreachable { broker: self.broker.clone(), reason: error.to_string() }
    }

    fn protocol(&self, reason: String) -> KafkaError {
        KafkaError::Protocol { broker: self.broker.clone(), reason }
    }
}

/// Decodes a response body (the bytes after its length prefix) to `R` at `version`: the
/// header, whose correlation id must be `correlation_id`, then the message, once its shape
/// is walked (`shape.rs`: kafka-protocol would reserve any length it reads). Everything a
/// broker sends back passes through here; public so the fuzzer can feed it bytes directly.
#[doc(hidden)]
pub fn decode_response<R: Request>(mut body: Bytes, version: i16, correlation_id: i32) -> Result<R::Response, String> {
    let response_header =
        ResponseHeader::decode(&mut body, R::Response::header_version(version)).map_err(|error| error.to_string())?;
    if response_header.correlation_id != correlation_id {
        return Err(format!(
            "response to request {} arrived for request {correlation_id}",
            response_header.correlation_id
        ));
    }
    let api_key = ApiKey::try_from(R::KEY).map_err(|()| format!("unknown API key {}", R::KEY))?;
    let shape = shape::shape_of(R::KEY, version).ok_or_else(|| {
        format!("{api_key:?} v{version}: no response shape for this version (see shape/responses.rs)")
    })?;
    shape::walk(shape, &body).map_err(|error| format!("decoding {api_key:?} v{version}: {error}"))?;
    R::Response::decode(&mut body, version).map_err(|error| format!("decoding {api_key:?} v{version}: {error}"))
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::{MetadataRequest, ProduceRequest};

    use super::*;

    /// Found by the `kafka_responses` fuzz target: a produce response (v9) of ten bytes whose
    /// topic array claims billions of entries (kafka-protocol drops the varint's bits past 32).
    /// kafka-protocol reserved them all up front, about 300 GB, and the failed allocation
    /// aborted the process; the shape walk refuses it first, as it does the same claim written
    /// as a proper varint.
    #[test]
    fn an_array_longer_than_the_response_is_an_error_not_an_abort() {
        let found = Bytes::from_static(&[0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x3c]);
        let error = decode_response::<ProduceRequest>(found, 9, 0).expect_err("an overlong varint");
        assert_eq!(error, "decoding Produce v9: `responses`: an unsigned varint longer than 32 bits");
        let canonical = Bytes::from_static(&[0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f]);
        let error = decode_response::<ProduceRequest>(canonical, 9, 0).expect_err("too many entries");
        assert_eq!(error, "decoding Produce v9: `responses`: 4294967294 entries claimed with 0 bytes left");
    }

    #[test]
    fn a_response_for_another_request_is_refused() {
        let mut body = BytesMut::new();
        ResponseHeader::default().with_correlation_id(8).encode(&mut body, 1).expect("encodes");
        let error = decode_response::<MetadataRequest>(body.freeze(), 12, 7).expect_err("wrong id");
        assert!(error.contains("arrived for request 7"), "{error}");
    }

    #[test]
    fn a_version_without_a_shape_is_refused_before_decoding() {
        let body = Bytes::from_static(&[0, 0, 0, 0, 0, 0, 0, 0, 0]);
        let error = decode_response::<ProduceRequest>(body, 8, 0).expect_err("no shape");
        assert!(error.contains("Produce v8: no response shape"), "{error}");
    }
}
