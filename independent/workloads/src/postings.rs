//! postings: an inverted index HashMap<String, Vec<u32>> built over generated documents
//! (each document is generated as text, tokenized, indexed and dropped), then queried with
//! two- and three-word AND queries (sorted-list intersections), then dropped.

use crate::util::{keep, Report, Rng};
use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::time::Instant;

type Fixed = BuildHasherDefault<DefaultHasher>;

const VOCABULARY: u64 = 60_000;
const DOCUMENTS: u32 = 18_000;
const QUERIES: u64 = 20_000;

fn word(rng: &mut Rng) -> String {
    let len = rng.range(2, 11) as usize;
    (0..len)
        .map(|_| (b'a' + rng.below(26) as u8) as char)
        .collect()
}

fn intersect(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i] < b[j] {
            i += 1;
        } else if a[i] > b[j] {
            j += 1;
        } else {
            out.push(a[i]);
            i += 1;
            j += 1;
        }
    }
    out
}

type Index = HashMap<String, Vec<u32>, Fixed>;

pub fn run() {
    let mut rng = Rng::new(0x70_6f_73_74);
    let start = Instant::now();
    let vocab: Vec<String> = (0..VOCABULARY).map(|_| word(&mut rng)).collect();

    let mut index: Index = HashMap::default();
    let mut tokens: u64 = 0;
    for doc in 0..DOCUMENTS {
        let text = document(&mut rng, &vocab);
        tokens += add_document(&mut index, doc, &text);
    }
    let built = start.elapsed();
    let terms = index.len();
    let postings: usize = index.values().map(|l| l.len()).sum();
    let heap_est = heap_estimate(&index);

    let matches = queries(&mut rng, &index, &vocab);
    let queried = start.elapsed();
    drop(keep(index));
    drop(vocab);
    let elapsed = start.elapsed();
    Report::new("postings")
        .ms("work_ms", elapsed)
        .ms("build_ms", built)
        .ms("query_ms", queried - built)
        .kv("tokens", tokens)
        .kv("terms", terms)
        .kv("postings", postings)
        .kv(
            "heap_est_mib",
            format!("{:.1}", heap_est as f64 / 1048576.0),
        )
        .kv("checksum", matches)
        .kv("resident_end_kib", crate::util::resident_kib())
        .print();
}

/// A document's text: 60-360 Zipf-drawn vocabulary words with punctuation.
fn document(rng: &mut Rng, vocab: &[String]) -> String {
    let len = rng.range(60, 360);
    let mut text = String::new();
    for t in 0..len {
        text.push_str(&vocab[rng.zipf(VOCABULARY) as usize]);
        text.push_str(if t % 13 == 12 {
            ". "
        } else if t % 7 == 6 {
            ", "
        } else {
            " "
        });
    }
    text
}

/// Tokenizes `text` and adds document `doc` to each token's postings list; returns the
/// number of tokens.
fn add_document(index: &mut Index, doc: u32, text: &str) -> u64 {
    let mut tokens: u64 = 0;
    for tok in text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| !t.is_empty())
    {
        tokens += 1;
        match index.get_mut(tok) {
            Some(list) => {
                if list.last() != Some(&doc) {
                    list.push(doc);
                }
            }
            None => {
                index.insert(tok.to_owned(), vec![doc]);
            }
        }
    }
    tokens
}

/// The index's heap footprint, estimated from its capacities (bytes).
fn heap_estimate(index: &Index) -> usize {
    index.values().map(|l| l.capacity() * 4).sum::<usize>()
        + index.keys().map(|k| k.capacity()).sum::<usize>()
        + index.capacity() * (std::mem::size_of::<(String, Vec<u32>)>() + 1)
}

/// Runs the AND queries (every fourth of three words, the others of two); returns the
/// total number of matching documents.
fn queries(rng: &mut Rng, index: &Index, vocab: &[String]) -> u64 {
    let mut matches: u64 = 0;
    let empty: Vec<u32> = Vec::new();
    for q in 0..QUERIES {
        let words = if q % 4 == 0 { 3 } else { 2 };
        let mut acc: Option<Vec<u32>> = None;
        for _ in 0..words {
            // Query words lean towards the middle of the frequency range.
            let rank = (rng.zipf(VOCABULARY) + rng.below(200)).min(VOCABULARY - 1);
            let list = index.get(vocab[rank as usize].as_str()).unwrap_or(&empty);
            acc = Some(match acc {
                None => list.clone(),
                Some(prev) => intersect(&prev, list),
            });
        }
        matches += acc.map_or(0, |r| r.len() as u64);
    }
    matches
}
