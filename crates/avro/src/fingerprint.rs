//! CRC-64-AVRO, the 64-bit Rabin fingerprint the Avro specification defines for schemas.

/// The fingerprint of the empty input, and the polynomial the table is built from.
const EMPTY: u64 = 0xc15d_213a_a4d7_a795;

/// One entry per byte value, computed at compile time.
const TABLE: [u64; 256] = {
    let mut table = [0u64; 256];
    let mut index = 0;
    while index < 256 {
        let mut value = index as u64;
        let mut bit = 0;
        while bit < 8 {
            value = (value >> 1) ^ (EMPTY & (value & 1).wrapping_neg());
            bit += 1;
        }
        table[index] = value;
        index += 1;
    }
    table
};

pub fn crc64_avro(bytes: &[u8]) -> u64 {
    bytes.iter().fold(EMPTY, |value, &byte| (value >> 8) ^ TABLE[((value ^ u64::from(byte)) & 0xff) as usize])
}
