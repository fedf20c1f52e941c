//! The benchmark workloads on the registry's `mimalloc` crate.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    bench_workloads::driver::main(&args)
}
