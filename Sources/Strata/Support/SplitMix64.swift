/// SplitMix64's 64-bit finalizer: every bit of `x` moved into every bit of the result. The hash
/// of the keys on hot paths (object IDs, the read cache's primary keys) is one of these over the
/// key and the table's seed, rather than a `Hasher` (SipHash) per lookup.
package func splitMix64(_ x: UInt64) -> UInt64 {
    var x = x
    x = (x ^ (x >> 30)) &* 0xBF58_476D_1CE4_E5B9
    x = (x ^ (x >> 27)) &* 0x94D0_49BB_1331_11EB
    return x ^ (x >> 31)
}
