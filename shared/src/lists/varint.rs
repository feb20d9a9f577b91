//! The varints every list is written in: LEB128 values, and ascending ids as the gaps between
//! them.

/// Appends `v` as a LEB128 varint.
pub fn push_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The next LEB128 value of `bytes`, advancing it; `None` at the end or on a malformed value.
#[inline]
pub fn read_varint(bytes: &mut &[u8]) -> Option<u32> {
    // Most values of a postings list (a gap between near documents, a term's count) are one
    // byte: read without the loop.
    if let Some((&byte, rest)) = bytes.split_first()
        && byte < 0x80
    {
        *bytes = rest;
        return Some(u32::from(byte));
    }
    let mut v = 0u32;
    for shift in (0..35).step_by(7) {
        let (&byte, rest) = bytes.split_first()?;
        *bytes = rest;
        v |= u32::from(byte & 0x7f).checked_shl(shift)?;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// `ids` (ascending) as varint gaps.
pub fn encode_ascending(ids: &[u32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(ids.len() * 2);
    let mut last = 0u32;
    for &id in ids {
        push_varint(&mut out, id.wrapping_sub(last));
        last = id;
    }
    out
}

/// The ids [`encode_ascending`] wrote (stops at a malformed value).
pub fn decode_ascending(mut bytes: &[u8]) -> Vec<u32> {
    let mut out = Vec::new();
    let mut last = 0u32;
    while let Some(gap) = read_varint(&mut bytes) {
        last = last.wrapping_add(gap);
        out.push(last);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_every_width() {
        let values = [
            0u32,
            1,
            127,
            128,
            16_383,
            16_384,
            2_097_151,
            2_097_152,
            u32::MAX,
        ];
        let mut bytes = Vec::new();
        for v in values {
            push_varint(&mut bytes, v);
        }
        let mut rest = bytes.as_slice();
        for v in values {
            assert_eq!(read_varint(&mut rest), Some(v));
        }
        assert_eq!(read_varint(&mut rest), None);
        // A value cut short is no value.
        assert_eq!(read_varint(&mut &[0x80u8][..]), None);
        let ids = [0, 3, 4, 200, 70_000, u32::MAX];
        assert_eq!(decode_ascending(&encode_ascending(&ids)), ids);
    }
}
