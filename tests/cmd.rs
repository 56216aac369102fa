//! Pinned command lines: `tests/cmd/*.toml` (trycmd). Each case fixes the arguments, stdin,
//! exact output and exit code of one `policy-check` run. After an intended change of output,
//! `TRYCMD=overwrite cargo test --test integration cmd::` rewrites the expectations.

#[test]
fn cmd() {
    trycmd::TestCases::new().case("tests/cmd/*.toml");
}
