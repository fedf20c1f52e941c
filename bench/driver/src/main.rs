//! The benchmark workloads on the allocator chosen by this build's cargo feature.

#[cfg(all(feature = "ours", any(feature = "jemalloc", feature = "system")))]
compile_error!("choose one allocator feature: system, ours or jemalloc");
#[cfg(all(feature = "jemalloc", feature = "system"))]
compile_error!("choose one allocator feature: system, ours or jemalloc");

#[cfg(feature = "ours")]
mimalloc::assign_global!();

#[cfg(feature = "ours")]
mod heap_pairs;

#[cfg(feature = "jemalloc")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    #[cfg(feature = "ours")]
    if let Some(code) = heap_pairs::run(&args) {
        return code;
    }
    bench_workloads::driver::main(&args)
}
