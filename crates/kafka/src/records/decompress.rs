//! The records of a compressed batch, decompressed into one reused buffer, never past a bound.
//!
//! A batch's compressed size says little about its size uncompressed, and a length a codec
//! reads off the wire is only a claim: reserving it as read would let a few bytes from a broker
//! ask for gigabytes, and a failed allocation aborts the process. So every codec here writes
//! into `scratch` as it decodes, and stops with an error at `DECOMPRESSED_BYTES_MAX`.
//!
//! ```text
//! attributes & 0x7:  0 none | 1 gzip | 2 snappy | 3 lz4 (frame format) | 4 zstd
//! snappy as Kafka's Java client writes it (xerial framing):
//!   magic 82 'SNAPPY' 00 | version i32 | compatible version i32 | (length u32, raw block)…
//! and as other clients write it: one raw snappy block (varint uncompressed length, then ops)
//! ```

use std::io::Read;

/// A batch never holds more than a whole response may: more is a decompression bomb, not data.
const DECOMPRESSED_BYTES_MAX: usize = crate::connection::RESPONSE_BYTES_MAX;
const XERIAL_MAGIC: &[u8; 8] = b"\x82SNAPPY\x00";
/// Magic, version and compatible version.
const XERIAL_HEADER_BYTES: usize = 16;
/// A snappy op of 3 bytes copies at most 64, so a block expands about 21 times at most; a
/// block claiming more than this is refused before its output is allocated.
const SNAPPY_EXPANSION_MAX: usize = 32;

/// Decompresses `body` (the records of a batch compressed with `codec`) into `scratch`.
pub(super) fn decompress(codec: i16, body: &[u8], scratch: &mut Vec<u8>) -> Result<(), String> {
    decompress_up_to(codec, body, scratch, DECOMPRESSED_BYTES_MAX)
}

fn decompress_up_to(codec: i16, body: &[u8], scratch: &mut Vec<u8>, bound: usize) -> Result<(), String> {
    scratch.clear();
    match codec {
        1 => read_bounded("gzip", flate2::read::MultiGzDecoder::new(body), scratch, bound),
        2 => snappy(body, scratch, bound),
        3 => {
            let decoder = lz4::Decoder::new(body).map_err(|error| format!("lz4 batch does not decompress: {error}"))?;
            read_bounded("lz4", decoder, scratch, bound)
        }
        4 => Err("a zstd batch (compression 4): this client reads none, gzip, snappy and lz4".to_string()),
        other => Err(format!("a batch with unknown compression {other}")),
    }
}

fn read_bounded(codec: &str, decoder: impl Read, scratch: &mut Vec<u8>, bound: usize) -> Result<(), String> {
    // One byte past the bound tells a batch at the bound from one over it.
    let limit = bound as u64 + 1;
    decoder.take(limit).read_to_end(scratch).map_err(|error| format!("{codec} batch does not decompress: {error}"))?;
    if scratch.len() > bound {
        return Err(format!("{codec} batch decompresses to more than {bound} bytes"));
    }
    Ok(())
}

fn snappy(body: &[u8], scratch: &mut Vec<u8>, bound: usize) -> Result<(), String> {
    if !body.starts_with(XERIAL_MAGIC) {
        return snappy_block(body, scratch, bound);
    }
    let mut rest = body.get(XERIAL_HEADER_BYTES..).ok_or("snappy batch: framing header cut short")?;
    while !rest.is_empty() {
        let (length, after) = rest.split_first_chunk::<4>().ok_or("snappy batch: block length cut short")?;
        let length = u32::from_be_bytes(*length) as usize;
        if length > after.len() {
            return Err(format!("snappy batch: a block of {length} bytes with {} left", after.len()));
        }
        let (block, after) = after.split_at(length);
        snappy_block(block, scratch, bound)?;
        rest = after;
    }
    Ok(())
}

/// Appends one raw snappy block's output to `scratch`.
fn snappy_block(block: &[u8], scratch: &mut Vec<u8>, bound: usize) -> Result<(), String> {
    let claimed = snap::raw::decompress_len(block).map_err(|error| format!("snappy batch: {error}"))?;
    if claimed > block.len().saturating_mul(SNAPPY_EXPANSION_MAX) || claimed > bound.saturating_sub(scratch.len()) {
        return Err(format!("snappy batch: a block of {} bytes claims {claimed} uncompressed", block.len()));
    }
    let start = scratch.len();
    scratch.resize(start + claimed, 0);
    let written = snap::raw::Decoder::new()
        .decompress(block, &mut scratch[start..])
        .map_err(|error| format!("snappy batch does not decompress: {error}"))?;
    scratch.truncate(start + written);
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    const BOUND: usize = 10_000;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(data).expect("gzip");
        encoder.finish().expect("gzip")
    }

    fn lz4(data: &[u8]) -> Vec<u8> {
        let mut encoder = lz4::EncoderBuilder::new().build(Vec::new()).expect("lz4");
        encoder.write_all(data).expect("lz4");
        let (out, result) = encoder.finish();
        result.expect("lz4");
        out
    }

    fn xerial(blocks: &[&[u8]]) -> Vec<u8> {
        let mut out = XERIAL_MAGIC.to_vec();
        out.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1]);
        for block in blocks {
            let block = snap::raw::Encoder::new().compress_vec(block).expect("snappy");
            out.extend_from_slice(&(block.len() as u32).to_be_bytes());
            out.extend_from_slice(&block);
        }
        out
    }

    fn run(codec: i16, body: &[u8]) -> Result<Vec<u8>, String> {
        let mut scratch = vec![7; 3];
        decompress_up_to(codec, body, &mut scratch, BOUND).map(|()| scratch)
    }

    #[test]
    fn every_codec_reads_up_to_the_bound_and_refuses_past_it() {
        let at_bound = vec![b'a'; BOUND];
        let past = vec![b'a'; BOUND + 1];
        let raw_snappy = |data: &[u8]| snap::raw::Encoder::new().compress_vec(data).expect("snappy");
        type Compress<'a> = &'a dyn Fn(&[u8]) -> Vec<u8>;
        let codecs: [(i16, Compress); 4] =
            [(1, &gzip), (2, &raw_snappy), (2, &|data| xerial(&[&data[..5_000], &data[5_000..]])), (3, &lz4)];
        for (codec, compress) in codecs {
            assert_eq!(run(codec, &compress(&at_bound)).expect("at the bound"), at_bound, "codec {codec}");
            let error = run(codec, &compress(&past)).expect_err("past the bound");
            assert!(error.contains("more than") || error.contains("claims"), "codec {codec}: {error}");
        }
    }

    /// The framed form of `records::tests::a_snappy_batch_claiming_gigabytes_is_an_error`: each
    /// block's claim is checked before its output is allocated.
    #[test]
    fn a_framed_snappy_block_claiming_gigabytes_is_refused_before_allocating() {
        let bomb = [0xff, 0xff, 0xff, 0xe1, 0x09, 0x00, b'x'];
        let mut framed = XERIAL_MAGIC.to_vec();
        framed.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 7]);
        framed.extend_from_slice(&bomb);
        let mut scratch = Vec::new();
        let error = decompress(2, &framed, &mut scratch).expect_err("a framed bomb");
        assert!(error.contains("a block of 7 bytes claims"), "{error}");
        assert_eq!(scratch.capacity(), 0);
    }

    #[test]
    fn framing_cut_short_and_unknown_codecs_are_errors() {
        let framed = xerial(&[b"hello"]);
        let error = run(2, &framed[..framed.len() - 1]).expect_err("block cut short");
        assert!(error.contains("with 7 left") || error.contains("snappy"), "{error}");
        assert!(run(2, &framed[..18]).expect_err("length cut short").contains("block length cut short"));
        assert!(run(2, &framed[..10]).expect_err("header cut short").contains("framing header"));
        assert!(run(4, b"zstd").expect_err("zstd").contains("zstd"));
        assert!(run(6, b"").expect_err("unknown").contains("unknown compression 6"));
        assert_eq!(run(2, &framed).expect("framed"), b"hello");
    }
}
