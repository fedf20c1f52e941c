//! The benchmark workloads on the registry's `mimalloc-safe` crate (mimalloc 3.6).

#[global_allocator]
static GLOBAL: mimalloc_safe::MiMalloc = mimalloc_safe::MiMalloc;

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    bench_workloads::driver::main(&args)
}
