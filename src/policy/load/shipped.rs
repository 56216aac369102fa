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

/// The program library: modules of `[programs.*]` rules only, included as
/// `include = ["programs:NAME"]` (see `policies/programs/`).
pub const LIBRARY: &[(&str, &str)] = &[
    (
        "coreutils",
        include_str!("../../../policies/programs/coreutils.toml"),
    ),
    (
        "findutils",
        include_str!("../../../policies/programs/findutils.toml"),
    ),
    ("text", include_str!("../../../policies/programs/text.toml")),
    ("git", include_str!("../../../policies/programs/git.toml")),
    (
        "cargo",
        include_str!("../../../policies/programs/cargo.toml"),
    ),
    ("npm", include_str!("../../../policies/programs/npm.toml")),
    (
        "python",
        include_str!("../../../policies/programs/python.toml"),
    ),
    (
        "docker-read",
        include_str!("../../../policies/programs/docker-read.toml"),
    ),
    (
        "kubectl-read",
        include_str!("../../../policies/programs/kubectl-read.toml"),
    ),
];

/// The prefix of a library module's name in `include`.
pub(crate) const LIBRARY_PREFIX: &str = "programs:";

pub(crate) fn library_source(name: &str) -> Option<&'static str> {
    LIBRARY.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}
