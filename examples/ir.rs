//! Print shellgate's IR for a command: `cargo run --example ir -- 'CMD'`.
fn main() {
    for cmd in std::env::args().skip(1) {
        println!("{cmd:?}\n{:#?}", shellgate::shell::parse(&cmd));
    }
}
