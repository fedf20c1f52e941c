//! Replay-like: blocks of transactions are applied to account state in a `BTreeMap` and a
//! key-value store in a `HashMap`, with a journal, receipts and bounded per-account histories
//! churning `Vec`s, as a blockchain node replays blocks.

use crate::{Outcome, Run, Scale, Timing, Workload, mix};
use seeded_rng::Rng;
use std::collections::{BTreeMap, HashMap};

pub const WORKLOAD: Workload = Workload {
    name: "replay",
    summary: "apply blocks of transactions to BTreeMap/HashMap state with Vec churn",
    prepare,
    timing: Timing::Run,
    quiet: None,
};

const ACCOUNTS: usize = 20_000;
const KEYS: usize = 20_000;
const BLOCK: usize = 200;
const INITIAL_BALANCE: i64 = 1_000;
/// A history longer than this loses its older half.
const HISTORY_CAP: usize = 48;

#[derive(Clone, Copy)]
enum Transaction {
    Transfer { from: usize, to: usize, amount: i64 },
    Mint { to: usize, amount: i64 },
    Put { key: usize, len: usize },
    Delete { key: usize },
}

struct Account {
    balance: i64,
    history: Vec<u32>,
}

/// Accounts have sparse ids, as addresses do.
fn account_id(i: usize) -> u64 {
    (i as u64).wrapping_mul(0x9e37_79b9) ^ 0x5bd1
}

fn prepare(scale: Scale) -> Run {
    let count = scale.of(1_200_000);
    let mut rng = Rng::new(4);
    let transactions: Vec<Transaction> = (0..count)
        .map(|_| match rng.below(100) {
            0..=54 => Transaction::Transfer {
                from: rng.below(ACCOUNTS),
                to: rng.below(ACCOUNTS),
                amount: rng.between(1, 400) as i64,
            },
            55..=59 => Transaction::Mint {
                to: rng.below(ACCOUNTS),
                amount: rng.between(1, 1000) as i64,
            },
            60..=89 => Transaction::Put {
                key: rng.below(KEYS),
                len: rng.between(16, 512),
            },
            _ => Transaction::Delete {
                key: rng.below(KEYS),
            },
        })
        .collect();
    let expected = simulate(&transactions);
    Box::new(move || Outcome {
        checksum: replay(&transactions),
        expected,
    })
}

fn summary(balances: i64, histories: usize, keys: usize, bytes: usize, applied: u64) -> u64 {
    [
        balances as u64,
        histories as u64,
        keys as u64,
        bytes as u64,
        applied,
    ]
    .into_iter()
    .fold(0, mix)
}

/// The expected result, from flat arrays indexed by account and key: no maps, no vectors that
/// grow.
fn simulate(transactions: &[Transaction]) -> u64 {
    let mut balance = vec![INITIAL_BALANCE; ACCOUNTS];
    let mut history = vec![0usize; ACCOUNTS];
    let mut stored: Vec<Option<usize>> = vec![None; KEYS];
    let mut applied = 0;
    let record = |history: &mut [usize], account: usize| {
        history[account] += 1;
        if history[account] > HISTORY_CAP {
            history[account] -= HISTORY_CAP / 2;
        }
    };
    for &tx in transactions {
        match tx {
            Transaction::Transfer { from, to, amount } => {
                if balance[from] >= amount {
                    balance[from] -= amount;
                    balance[to] += amount;
                    record(&mut history, from);
                    record(&mut history, to);
                    applied += 1;
                }
            }
            Transaction::Mint { to, amount } => {
                balance[to] += amount;
                record(&mut history, to);
                applied += 1;
            }
            Transaction::Put { key, len } => {
                stored[key] = Some(len);
                applied += 1;
            }
            Transaction::Delete { key } => applied += u64::from(stored[key].take().is_some()),
        }
    }
    let live = stored.iter().flatten();
    summary(
        balance.iter().sum(),
        history.iter().sum(),
        live.clone().count(),
        live.sum(),
        applied,
    )
}

/// Account state by (sparse) account id.
type Accounts = BTreeMap<u64, Account>;
/// The key-value store.
type Store = HashMap<u64, Vec<u8>>;
/// A block's balance changes: account id and delta.
type Journal = Vec<(u64, i64)>;

/// Replays every block on fresh state; the checksum covers balances, histories and the store.
fn replay(transactions: &[Transaction]) -> u64 {
    let mut accounts = genesis();
    let mut store: Store = HashMap::new();
    let mut applied = 0u64;
    for (number, block) in transactions.chunks(BLOCK).enumerate() {
        applied += apply_block(&mut accounts, &mut store, number, block);
    }
    checksum(&accounts, &store, applied)
}

/// Every account at its initial balance, with no history yet.
fn genesis() -> Accounts {
    (0..ACCOUNTS)
        .map(|i| {
            let account = Account {
                balance: INITIAL_BALANCE,
                history: Vec::new(),
            };
            (account_id(i), account)
        })
        .collect()
}

/// Applies block `number`, keeping its journal and receipts; returns how many of its
/// transactions were applied.
fn apply_block(
    accounts: &mut Accounts,
    store: &mut Store,
    number: usize,
    block: &[Transaction],
) -> u64 {
    let mut journal: Journal = Vec::new();
    let mut receipts: Vec<String> = Vec::new();
    let mut applied = 0u64;
    for (i, &tx) in block.iter().enumerate() {
        let tx_number = (number * BLOCK + i) as u32;
        let ok = match tx {
            Transaction::Transfer { from, to, amount } => {
                transfer(accounts, &mut journal, tx_number, from, to, amount)
            }
            Transaction::Mint { to, amount } => {
                mint(accounts, &mut journal, tx_number, to, amount);
                true
            }
            Transaction::Put { key, len } => {
                store.insert(key as u64, vec![key as u8; len]);
                true
            }
            Transaction::Delete { key } => store.remove(&(key as u64)).is_some(),
        };
        applied += u64::from(ok);
        receipts.push(format!(
            "{tx_number}:{}",
            if ok { "ok" } else { "rejected" }
        ));
    }
    // A node hashes the journal and receipts into the block; here they are only consumed.
    assert_eq!(receipts.len(), block.len());
    assert!(journal.iter().all(|&(_, delta)| delta != 0));
    applied
}

/// Moves `amount` between two accounts if the payer has it; returns whether it did.
fn transfer(
    accounts: &mut Accounts,
    journal: &mut Journal,
    tx_number: u32,
    from: usize,
    to: usize,
    amount: i64,
) -> bool {
    let (from, to) = (account_id(from), account_id(to));
    let payer = accounts.get_mut(&from).expect("account exists");
    if payer.balance < amount {
        return false;
    }
    payer.balance -= amount;
    record(payer, tx_number);
    journal.push((from, -amount));
    let payee = accounts.get_mut(&to).expect("account exists");
    payee.balance += amount;
    record(payee, tx_number);
    journal.push((to, amount));
    true
}

/// Credits `amount` of new money to an account.
fn mint(accounts: &mut Accounts, journal: &mut Journal, tx_number: u32, to: usize, amount: i64) {
    let payee = accounts.get_mut(&account_id(to)).expect("account exists");
    payee.balance += amount;
    record(payee, tx_number);
    journal.push((account_id(to), amount));
}

/// The run's result, from the final state and the count of applied transactions.
fn checksum(accounts: &Accounts, store: &Store, applied: u64) -> u64 {
    // Reading the stored bytes back catches a store whose values were not really kept.
    let bytes: usize = store
        .iter()
        .map(|(&key, value)| value.iter().filter(|&&b| b == key as u8).count())
        .sum();
    summary(
        accounts.values().map(|a| a.balance).sum(),
        accounts.values().map(|a| a.history.len()).sum(),
        store.len(),
        bytes,
        applied,
    )
}

fn record(account: &mut Account, tx_number: u32) {
    account.history.push(tx_number);
    if account.history.len() > HISTORY_CAP {
        account.history.drain(..HISTORY_CAP / 2);
    }
}
