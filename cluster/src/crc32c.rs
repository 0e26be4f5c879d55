//! CRC-32C (Castagnoli), the checksum of every log store value.
//!
//! Written here rather than taken from a crate: a crate with a build script
//! or SIMD features risks the host build graph that RocksDB's bindgen
//! shares (`make check-vendor`). On x86-64 with SSE4.2 (detected at run
//! time) the CPU's `crc32` instruction does it, ≈ 8× the table: every
//! entry (tens of KiB at 100 jobs a call) is checksummed on each node's
//! append, twice on a 1-client call's critical path (the leader's append,
//! then the follower's). Elsewhere, slicing-by-8 tables.

const POLY: u32 = 0x82f6_3b78; // reversed Castagnoli polynomial

/// Slicing-by-8 tables: eight bytes per step, ~1 GB/s without SIMD.
static TABLES: [[u32; 256]; 8] = tables();

const fn tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut i = 0;
    while i < 256 {
        let mut s = 1;
        while s < 8 {
            let prev = t[s - 1][i];
            t[s][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            s += 1;
        }
        i += 1;
    }
    t
}

/// The CRC-32C of `data`.
pub fn crc32c(data: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("sse4.2") {
        // SAFETY: the CPU has SSE4.2, checked just above.
        return !unsafe { hw::update(!0, data) };
    }
    !table_update(!0, data)
}

/// The table loop: the register before inversion, updated over `data`.
fn table_update(mut crc: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let lo = crc ^ u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        crc = TABLES[7][(lo & 0xff) as usize]
            ^ TABLES[6][((lo >> 8) & 0xff) as usize]
            ^ TABLES[5][((lo >> 16) & 0xff) as usize]
            ^ TABLES[4][(lo >> 24) as usize]
            ^ TABLES[3][c[4] as usize]
            ^ TABLES[2][c[5] as usize]
            ^ TABLES[1][c[6] as usize]
            ^ TABLES[0][c[7] as usize];
    }
    for &b in chunks.remainder() {
        crc = (crc >> 8) ^ TABLES[0][((crc ^ b as u32) & 0xff) as usize];
    }
    crc
}

#[cfg(target_arch = "x86_64")]
mod hw {
    use std::arch::x86_64::{_mm_crc32_u64, _mm_crc32_u8};

    /// SSE4.2's `crc32` is CRC-32C, reflected, without the inversions:
    /// the same register as [`super::table_update`].
    #[target_feature(enable = "sse4.2")]
    pub(super) fn update(crc: u32, data: &[u8]) -> u32 {
        let mut chunks = data.chunks_exact(8);
        let mut wide = u64::from(crc);
        for c in &mut chunks {
            wide = _mm_crc32_u64(wide, u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let mut crc = wide as u32;
        for &b in chunks.remainder() {
            crc = _mm_crc32_u8(crc, b);
        }
        crc
    }
}

#[cfg(test)]
mod tests {
    use super::{crc32c, table_update};

    #[test]
    fn matches_the_published_check_values() {
        // RFC 3720 appendix B.4 and the catalogue's check value.
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(crc32c(&[0u8; 32]), 0x8a91_36aa);
        assert_eq!(crc32c(&[0xffu8; 32]), 0x62a8_ab43);
        let inc: Vec<u8> = (0u8..32).collect();
        assert_eq!(crc32c(&inc), 0x46dd_794e);
        assert_eq!(crc32c(b""), 0);
    }

    #[test]
    fn the_sliced_loop_agrees_with_bytewise_at_every_length() {
        let data: Vec<u8> = (0..100u32).map(|i| (i * 37 + 11) as u8).collect();
        for n in 0..data.len() {
            let mut crc = !0u32;
            for &b in &data[..n] {
                crc ^= b as u32;
                for _ in 0..8 {
                    crc = if crc & 1 != 0 {
                        (crc >> 1) ^ 0x82f6_3b78
                    } else {
                        crc >> 1
                    };
                }
            }
            assert_eq!(crc32c(&data[..n]), !crc, "length {n}");
            assert_eq!(!table_update(!0, &data[..n]), !crc, "table, length {n}");
        }
    }

    /// The instruction and the table agree (on a CPU with SSE4.2; elsewhere
    /// both calls take the table).
    #[test]
    fn the_instruction_agrees_with_the_table() {
        let data: Vec<u8> = (0..70_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for n in [0, 1, 7, 8, 9, 63, 64, 65, 4095, 4096, 33_333, 70_000] {
            assert_eq!(
                crc32c(&data[..n]),
                !table_update(!0, &data[..n]),
                "length {n}"
            );
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("sse4.2") {
            // SAFETY: the CPU has SSE4.2, checked just above.
            let hw = unsafe { super::hw::update(!0, &data) };
            assert_eq!(hw, table_update(!0, &data));
        }
    }
}
