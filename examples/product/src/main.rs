//! A small product: counts words in generated text, and says which allocator served it.

#[cfg(feature = "mimalloc")]
mimalloc::assign_global!();

use std::collections::HashMap;
use std::time::Instant;

/// Deterministic text: a few thousand distinct words, Zipf-like frequencies.
fn text(words: usize) -> String {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut out = String::new();
    for _ in 0..words {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let rank = (state % 4096) * (state % 4096) / 4096; // skewed towards small ranks
        out.push_str(&format!("w{rank} "));
    }
    out
}

fn main() {
    let start = Instant::now();
    let text = text(2_000_000);
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for word in text.split_whitespace() {
        *counts.entry(word).or_default() += 1;
    }
    let mut top: Vec<(&str, usize)> = counts.into_iter().collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let total: usize = top.iter().map(|(_, n)| n).sum();
    assert_eq!(total, 2_000_000);
    println!(
        "words: {total}, distinct: {}, most frequent: {:?}",
        top.len(),
        &top[..3]
    );
    println!("elapsed: {:.0} ms", start.elapsed().as_secs_f64() * 1000.0);
    report_allocator(&top);
}

#[cfg(feature = "mimalloc")]
fn report_allocator(top: &[(&str, usize)]) {
    // Ask mimalloc whether it owns the memory the program just used.
    let owned = mimalloc::heap::is_in_heap_region(top.as_ptr());
    println!(
        "allocator: mimalloc {} (the result vector is in mimalloc's memory: {owned})",
        mimalloc::Version::linked()
    );
    let mut table = String::new();
    mimalloc::stats::print(&mut table).expect("writing to a String cannot fail");
    println!("mimalloc's statistics:\n{table}");
}

#[cfg(not(feature = "mimalloc"))]
fn report_allocator(_: &[(&str, usize)]) {
    println!("allocator: system (build with --features mimalloc to use mimalloc)");
}
