//! The policies shipped inside the library, by name.

/// The policies shipped inside the library: `(name, TOML source)`.
pub const SHIPPED: &[(&str, &str)] = &[
    (
        "read-only",
        include_str!("../../../policies/read-only.toml"),
    ),
    (
        "developer",
        include_str!("../../../policies/developer.toml"),
    ),
];

pub(crate) fn shipped_source(name: &str) -> Option<&'static str> {
    SHIPPED.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}
